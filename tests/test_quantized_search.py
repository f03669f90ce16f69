"""Quantised search and rescoring against sentence-transformers' semantic_search_faiss, FAISS,
and hand-worked examples."""

from __future__ import annotations

import numpy as np
import pytest

from sbert_tutor.search.quantize import bytes_per_vector, quantize_embeddings
from sbert_tutor.search.quantized import (
    code_search,
    dequantize_embeddings,
    hamming_distances,
    hamming_search,
    quantized_search,
    rescore,
)


def _data(n: int = 400, n_q: int = 12, dim: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    corpus = rng.standard_normal((n, dim)).astype(np.float32)
    queries = (corpus[:n_q] + 0.5 * rng.standard_normal((n_q, dim))).astype(np.float32)
    return queries, corpus


def test_hamming_hand_worked():
    # 8 dimensions -> one byte; signs give the bits
    corpus = np.array(
        [
            [1, 1, 1, 1, -1, -1, -1, -1],  # 11110000
            [1, -1, 1, -1, 1, -1, 1, 1],  # 10101011
            [-1, -1, -1, -1, -1, -1, -1, -1],  # 00000000
        ],
        dtype=np.float32,
    )
    query = np.array([[1, 1, 1, -1, -1, -1, -1, -1]], dtype=np.float32)  # 11100000
    bits = quantize_embeddings(corpus, "ubinary")
    assert bits[:, 0].tolist() == [0b11110000, 0b10101011, 0]
    d = hamming_distances(quantize_embeddings(query, "ubinary"), bits)
    assert d.tolist() == [[1, 4, 3]]  # 11100000 vs each: 1 bit, 4 bits, 3 bits differ
    for backend in ("numpy", "faiss") if _has_faiss() else ("numpy",):
        dist, idx = hamming_search(quantize_embeddings(query, "binary"), bits, 3, backend=backend)
        assert idx.tolist() == [[0, 2, 1]] and dist.tolist() == [[1, 3, 4]]


def test_hamming_distances_equal_unpacked_count():
    q, c = _data(n=50, n_q=5, dim=100)  # 100 bits: 13 bytes, the last one padded
    qb, cb = quantize_embeddings(q, "ubinary"), quantize_embeddings(c, "ubinary")
    expected = ((q[:, None, :] > 0) != (c[None, :, :] > 0)).sum(axis=2)
    assert np.array_equal(hamming_distances(qb, cb), expected)
    assert np.array_equal(hamming_distances(qb, cb, chunk_size=7), expected)  # corpus in pieces
    # int8 "binary" storage gives the same distances
    assert np.array_equal(
        hamming_distances(quantize_embeddings(q, "binary"), quantize_embeddings(c, "binary")),
        expected,
    )


def _has_faiss() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def test_numpy_hamming_search_matches_faiss():
    pytest.importorskip("faiss")
    q, c = _data(n=2000, n_q=20, dim=128)
    qb, cb = quantize_embeddings(q, "ubinary"), quantize_embeddings(c, "ubinary")
    d_np, i_np = hamming_search(qb, cb, 25, backend="numpy", query_chunk_size=7)
    d_fa, i_fa = hamming_search(qb, cb, 25, backend="faiss")
    assert np.array_equal(d_np, d_fa)  # the same distances; tied indices may be ordered differently
    full = hamming_distances(qb, cb)
    assert np.array_equal(np.take_along_axis(full, i_np, axis=1), d_np)
    # numpy orders ties by lower index: the top-k is the first k of a stable sort
    stable = np.argsort(full, axis=1, kind="stable")[:, :25]
    assert np.array_equal(i_np, stable)


def _st_faiss(q, corpus_q, precision, top_k, rescore, mult, ranges=None):
    quantization = pytest.importorskip("sentence_transformers.util.quantization")
    pytest.importorskip("faiss")
    results, _ = quantization.semantic_search_faiss(
        q,
        corpus_embeddings=corpus_q,
        corpus_precision=precision,
        top_k=top_k,
        rescore=rescore,
        rescore_multiplier=mult,
        ranges=ranges,
    )
    ids = np.array([[hit["corpus_id"] for hit in hits] for hits in results])
    scores = np.array([[hit["score"] for hit in hits] for hits in results])
    return scores, ids


@pytest.mark.parametrize("mult", [1, 2, 4, 10])
def test_binary_rescoring_matches_sentence_transformers(mult):
    q, c = _data()
    cb = quantize_embeddings(c, "ubinary")
    st_scores, st_ids = _st_faiss(q, cb, "ubinary", 10, True, mult)
    scores, ids = quantized_search(q, cb, "ubinary", 10, rescore_multiplier=mult, backend="faiss")
    assert np.array_equal(ids, st_ids)
    assert scores.dtype == np.float32  # ST's float64 values, rounded: float32 as semantic_search
    np.testing.assert_allclose(scores, st_scores.astype(np.float32), rtol=0, atol=0)


def test_binary_without_rescoring_matches_sentence_transformers():
    q, c = _data()
    cb = quantize_embeddings(c, "ubinary")
    st_dist, st_ids = _st_faiss(q, cb, "ubinary", 10, False, 2)
    scores, ids = quantized_search(q, cb, "ubinary", 10, rescoring=False, backend="faiss")
    assert np.array_equal(ids, st_ids)
    assert np.array_equal(-scores, st_dist)  # ours: negative Hamming distance


def test_uint8_search_and_rescoring_match_sentence_transformers():
    q, c = _data(dim=48)
    ranges = np.vstack((c.min(axis=0), c.max(axis=0)))
    cq = quantize_embeddings(c, "uint8", ranges=ranges)
    for rescoring, mult in ((False, 1), (True, 4)):
        st_scores, st_ids = _st_faiss(q, cq, "uint8", 10, rescoring, mult, ranges=ranges)
        scores, ids = quantized_search(
            q, cq, "uint8", 10, rescore_multiplier=mult, ranges=ranges, rescoring=rescoring
        )
        np.testing.assert_allclose(scores, st_scores, rtol=1e-6)
        # integer code products can tie; where a query's scores are distinct the ids must agree
        distinct = np.array([len(set(row)) == len(row) for row in st_scores])
        assert distinct.sum() >= len(q) // 2
        assert np.array_equal(ids[distinct], st_ids[distinct])


def test_int8_code_search_hand_reference():
    q, c = _data(dim=32)
    ranges = np.vstack((c.min(axis=0), c.max(axis=0)))
    qc = quantize_embeddings(q, "int8", ranges=ranges)
    cc = quantize_embeddings(c, "int8", ranges=ranges)
    scores, ids = code_search(qc, cc, 7)
    full = qc.astype(np.int64) @ cc.astype(np.int64).T
    expected = np.argsort(-full, axis=1, kind="stable")[:, :7]  # ties: lower index first
    assert np.array_equal(ids, expected)
    assert np.array_equal(scores, np.take_along_axis(full, expected, axis=1).astype(float))


def test_int8_search_matches_usearch():
    pytest.importorskip("usearch")
    q, c = _data(dim=32)
    ranges = np.vstack((c.min(axis=0), c.max(axis=0)))
    cq = quantize_embeddings(c, "int8", ranges=ranges)
    st_scores, st_ids = None, None
    from sentence_transformers.util.quantization import semantic_search_usearch

    results, _ = semantic_search_usearch(
        q,
        corpus_embeddings=cq,
        corpus_precision="int8",
        top_k=10,
        ranges=ranges,
        rescore_multiplier=4,
    )
    st_ids = np.array([[h["corpus_id"] for h in hits] for hits in results])
    st_scores = np.array([[h["score"] for h in hits] for hits in results])
    scores, ids = quantized_search(q, cq, "int8", 10, rescore_multiplier=4, ranges=ranges)
    np.testing.assert_allclose(scores, st_scores, rtol=1e-6)
    assert np.array_equal(ids, st_ids)


def test_binary_search_rescored_against_int8_by_hand():
    q, c = _data()
    ranges = np.vstack((c.min(axis=0), c.max(axis=0)))
    cb = quantize_embeddings(c, "ubinary")
    ci = quantize_embeddings(c, "int8", ranges=ranges)
    scores, ids = quantized_search(
        q,
        cb,
        "ubinary",
        5,
        rescore_multiplier=4,
        rescore_embeddings=ci,
        rescore_precision="int8",
        ranges=ranges,
        backend="numpy",
    )
    # by hand: 20 Hamming candidates, then q . (a + s * (code + 128)), best 5
    steps = (ranges[1] - ranges[0]) / 255
    values = ranges[0] + steps * (ci.astype(np.float64) + 128)
    ham = ((q[:, None, :] > 0) != (c[None, :, :] > 0)).sum(axis=2)
    for row in range(len(q)):
        cand = np.argsort(ham[row], kind="stable")[:20]
        s = values[cand] @ q[row].astype(np.float64)
        best = cand[np.argsort(-s, kind="stable")[:5]]
        assert ids[row].tolist() == best.tolist()
        np.testing.assert_allclose(scores[row], np.sort(s)[::-1][:5].astype(np.float32), rtol=0)


def test_rescoring_recovers_float_ranking_with_a_large_multiplier():
    q, c = _data()
    exact = np.argsort(-(q @ c.T), axis=1, kind="stable")[:, :10]
    cb = quantize_embeddings(c, "ubinary")
    _, ids = quantized_search(
        q,
        cb,
        "ubinary",
        10,
        rescore_multiplier=len(c),
        rescore_embeddings=c,
        rescore_precision="float32",
    )
    assert np.array_equal(ids, exact)  # every passage is a candidate: the exact float ranking


def test_rescore_skips_missing_candidates():
    q = np.ones((1, 8), dtype=np.float32)
    stored = quantize_embeddings(np.eye(8, dtype=np.float32), "ubinary")
    scores, ids = rescore(q, np.array([[3, -1, 5]]), stored, "ubinary", 3)
    assert ids[0, :2].tolist() == [3, 5] and scores[0, 2] == -np.inf


def test_dequantize_inverts_quantize_within_a_bucket():
    _, c = _data(dim=16)
    ranges = np.vstack((c.min(axis=0), c.max(axis=0)))
    back = dequantize_embeddings(quantize_embeddings(c, "int8", ranges=ranges), "int8", ranges)
    step = (ranges[1] - ranges[0]) / 255
    assert np.all(back <= c + 1e-5) and np.all(c - back <= step + 1e-5)


def test_errors_say_what_to_do():
    q, c = _data(dim=16)
    with pytest.raises(ValueError, match="ranges"):
        quantized_search(q, quantize_embeddings(c, "int8"), "int8")
    with pytest.raises(ValueError, match="rescore_precision"):
        quantized_search(q, quantize_embeddings(c, "ubinary"), "ubinary", rescore_embeddings=c)
    with pytest.raises(TypeError, match="float queries"):
        quantized_search(quantize_embeddings(q, "ubinary"), c, "ubinary")
    with pytest.raises(ValueError, match="same model"):
        hamming_search(quantize_embeddings(q, "ubinary"), quantize_embeddings(c[:, :8], "ubinary"))


def test_bytes_per_vector():
    assert [
        bytes_per_vector(384, p) for p in ("float32", "int8", "uint8", "binary", "ubinary")
    ] == [
        1536,
        384,
        384,
        48,
        48,
    ]
    assert bytes_per_vector(100, "binary") == 13


def test_float32_corpus_is_exact_dot_product_search():
    q, c = _data(dim=16)
    scores, ids = quantized_search(q, c, "float32", 5, rescoring=False)
    full = q.astype(np.float64) @ c.astype(np.float64).T
    assert np.array_equal(ids, np.argsort(-full, axis=1, kind="stable")[:, :5])
    np.testing.assert_allclose(scores, np.sort(full, axis=1)[:, ::-1][:, :5], rtol=1e-5)


@pytest.mark.parametrize("precision", ["ubinary", "binary", "int8", "uint8", "float32"])
@pytest.mark.parametrize("rescoring", [True, False])
def test_scores_are_float32_and_ids_int64_as_semantic_search(precision, rescoring):
    q, c = _data(dim=16)
    stored = c if precision == "float32" else quantize_embeddings(c, precision)
    ranges = np.vstack((c.min(axis=0), c.max(axis=0)))
    scores, ids = quantized_search(q, stored, precision, 5, rescoring=rescoring, ranges=ranges)
    assert scores.dtype == np.float32 and ids.dtype == np.int64 and scores.shape == (len(q), 5)
