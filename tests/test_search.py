"""sbert_tutor.search.exact.semantic_search against a brute-force stable argsort, and its memory bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert_tutor.search.exact import semantic_search

REPO = Path(__file__).resolve().parents[1]
SCORES = ("cosine", "dot", "euclidean")


def brute_force(queries: np.ndarray, corpus: np.ndarray, top_k: int, score: str):
    """The full score matrix, ranked by a stable argsort (equal scores: lower index first).

    Float32, with the same formulas as the library's docstring (q.c / (|q| |c|); euclidean
    ranked by the squared distance |q|^2 + |c|^2 - 2 q.c), so that on integer-valued embeddings,
    where every dot product and squared norm is exact, ties are real ties and dot/euclidean
    scores agree bit for bit (cosine to an ulp: torch's sqrt is not always correctly rounded).
    """
    q = queries.astype(np.float32)
    c = corpus.astype(np.float32)
    s = q @ c.T
    q_sq = (q * q).sum(axis=1)
    c_sq = (c * c).sum(axis=1)
    if score == "cosine":
        s = (
            s
            / np.maximum(np.sqrt(q_sq), 1e-12)[:, None]
            / np.maximum(np.sqrt(c_sq), 1e-12)[None, :]
        )
    elif score == "euclidean":
        s = -np.maximum(q_sq[:, None] + c_sq[None, :] - 2 * s, 0)  # -(squared distance)
    order = np.argsort(-s, axis=1, kind="stable")[:, :top_k]
    top = np.take_along_axis(s, order, axis=1)
    return (-np.sqrt(-top) if score == "euclidean" else top), order


def tied_data(seed: int = 0, n: int = 230, n_queries: int = 13, dim: int = 6):
    """Integer-valued embeddings drawn from 12 distinct vectors: exact scores, many exact ties.

    No two pool vectors are parallel, so equal cosines come only from identical vectors
    (test_tied_data_is_well_separated checks that different scores differ well above rounding).
    """
    rng = np.random.default_rng(seed)
    pool = rng.integers(-2, 3, size=(12, dim))
    pool[0] = 0  # a zero vector (cosine 0 by convention)
    corpus = pool[rng.integers(0, len(pool), size=n)].astype(np.float32)
    queries = rng.integers(-2, 3, size=(n_queries, dim)).astype(np.float32)
    return queries, corpus


def as_form(corpus: np.ndarray, form: str, piece: int = 37):
    """The same corpus as an array, a tensor, a generator of chunks, fp16 chunks, a list..."""
    if form == "numpy":
        return corpus
    if form == "tensor":
        return torch.from_numpy(corpus)
    if form == "iter_numpy":
        return (corpus[i : i + piece] for i in range(0, len(corpus), piece))
    if form == "iter_fp16_tensor":
        return (
            torch.from_numpy(corpus[i : i + piece]).half() for i in range(0, len(corpus), piece)
        )
    if form == "iter_fp16_numpy_uneven":  # uneven chunks, an empty one
        cuts = [0, 1, 1, 50, 51, 170, len(corpus)]
        return iter([corpus[a:b].astype(np.float16) for a, b in zip(cuts, cuts[1:], strict=False)])
    if form == "list_of_vectors":
        return [row for row in corpus]
    raise AssertionError(form)


FORMS = (
    "numpy",
    "tensor",
    "iter_numpy",
    "iter_fp16_tensor",
    "iter_fp16_numpy_uneven",
    "list_of_vectors",
)


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    ("top_k", "chunk_size", "query_chunk_size"), [(7, 50_000, 256), (7, 16, 4), (300, 29, 5)]
)
def test_matches_stable_argsort_with_exact_ties(score, form, top_k, chunk_size, query_chunk_size):
    queries, corpus = tied_data()
    ref_scores, ref_idx = brute_force(queries, corpus, top_k, score)
    scores, idx = semantic_search(
        queries,
        as_form(corpus, form),
        top_k=top_k,
        score=score,
        chunk_size=chunk_size,
        query_chunk_size=query_chunk_size,
        device="cpu",
    )
    assert scores.dtype == np.float32 and idx.dtype == np.int64
    assert idx.shape == (len(queries), min(top_k, len(corpus)))  # top_k > n: what exists
    np.testing.assert_array_equal(idx, ref_idx)
    if score == "cosine":
        np.testing.assert_allclose(scores, ref_scores, rtol=3e-7, atol=0)
    else:
        np.testing.assert_array_equal(scores, ref_scores)


def test_tied_data_is_well_separated():
    """Guards for the test above: k-th scores are shared with documents outside the top k, and
    different exact (float64) scores differ far more than float32 rounding."""
    queries, corpus = tied_data()
    for score in SCORES:
        s, _ = brute_force(queries, corpus, len(corpus), score)
        assert (s[:, 7:] == s[:, 6:7]).any(axis=1).all()
    q, c = queries.astype(np.float64), corpus.astype(np.float64)
    exact = q @ c.T / np.maximum(np.linalg.norm(q, axis=1), 1e-12)[:, None]
    exact /= np.maximum(np.linalg.norm(c, axis=1), 1e-12)[None, :]
    for row in exact:
        values = np.unique(row.round(12))
        assert np.diff(values).min() > 1e-4


@pytest.mark.parametrize("score", SCORES)
def test_random_floats_chunked_and_unchunked(score):
    rng = np.random.default_rng(1)
    corpus = rng.standard_normal((3000, 32)).astype(np.float32)
    queries = rng.standard_normal((40, 32)).astype(np.float32)
    exact = queries.astype(np.float64) @ corpus.astype(np.float64).T
    if score == "cosine":
        exact /= np.linalg.norm(queries, axis=1)[:, None] * np.linalg.norm(corpus, axis=1)[None, :]
    elif score == "euclidean":
        exact = -np.linalg.norm(queries[:, None, :].astype(np.float64) - corpus[None], axis=2)
    order = np.argsort(-exact, axis=1, kind="stable")[:, :10]

    full = semantic_search(queries, corpus, top_k=10, score=score, device="cpu")
    chunked = semantic_search(
        queries, iter(np.array_split(corpus, 5)), top_k=10, score=score, chunk_size=450,
        query_chunk_size=16, device="cpu",
    )  # fmt: skip
    for scores, idx in (full, chunked):
        np.testing.assert_allclose(scores, np.take_along_axis(exact, order, 1), rtol=0, atol=2e-5)
        # the same documents, except possibly where two exact scores are closer than float32 noise
        gaps = np.abs(np.take_along_axis(exact, idx, 1) - np.take_along_axis(exact, order, 1))
        assert ((idx == order) | (gaps < 2e-5)).all()
        assert (np.diff(scores, axis=1) <= 0).all()
    np.testing.assert_array_equal(full[1], chunked[1])


def test_fp16_chunks_are_cast_up_to_float32():
    rng = np.random.default_rng(2)
    corpus16 = rng.standard_normal((500, 16)).astype(np.float16)
    queries = rng.standard_normal((9, 16)).astype(np.float32)
    chunks = (torch.from_numpy(corpus16[i : i + 100]) for i in range(0, 500, 100))
    got = semantic_search(queries, chunks, top_k=20, chunk_size=100, device="cpu")
    want = semantic_search(
        queries, corpus16.astype(np.float32), top_k=20, chunk_size=100, device="cpu"
    )
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0].dtype == np.float32


def test_single_query_vector_and_lists():
    corpus = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]
    scores, idx = semantic_search([0.0, 2.0], corpus, top_k=2, device="cpu")
    assert idx.tolist() == [[1, 2]]
    np.testing.assert_allclose(scores, [[1.0, 0.8]], rtol=1e-6)
    scores, idx = semantic_search(
        np.array([[3.0, 4.0]]), corpus, top_k=1, score="euclidean", device="cpu"
    )
    assert idx.tolist() == [[2]] and scores[0, 0] == pytest.approx(-np.hypot(2.4, 3.2), rel=1e-6)


def test_progress_bar(capsys):
    queries, corpus = tied_data()
    semantic_search(queries, corpus, chunk_size=50, show_progress_bar=True, device="cpu")
    assert "semantic search" in capsys.readouterr().err
    semantic_search(queries, corpus, chunk_size=50, show_progress_bar=False, device="cpu")
    assert capsys.readouterr().err == ""


def test_input_validation():
    queries, corpus = tied_data()
    with pytest.raises(ValueError, match="dimension 5 but the queries have dimension 6"):
        semantic_search(queries, iter([corpus[:10], corpus[10:20, :5]]), device="cpu")
    with pytest.raises(ValueError, match="corpus is empty"):
        semantic_search(queries, iter([]), device="cpu")
    with pytest.raises(ValueError, match="corpus is empty"):
        semantic_search(queries, corpus[:0], device="cpu")
    with pytest.raises(ValueError, match="query_embeddings is empty"):
        semantic_search(queries[:0], corpus, device="cpu")
    with pytest.raises(ValueError, match="score must be one of"):
        semantic_search(queries, corpus, score="manhattan", device="cpu")
    with pytest.raises(ValueError, match="top_k"):
        semantic_search(queries, corpus, top_k=0, device="cpu")
    with pytest.raises(ValueError, match="chunk_size"):
        semantic_search(queries, corpus, chunk_size=0, device="cpu")
    with pytest.raises(ValueError, match="2-D"):
        semantic_search(queries, corpus[None], device="cpu")
    with pytest.raises(ValueError, match="2-D"):
        semantic_search(queries, iter([corpus[0]]), device="cpu")
    bad = corpus.copy()
    bad[100, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        semantic_search(queries, bad, chunk_size=64, device="cpu")
    with pytest.raises(TypeError, match="iterable"):
        semantic_search(queries, 3.0, device="cpu")


def test_faiss_backend_without_faiss(monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)  # makes `import faiss` raise ImportError
    queries, corpus = tied_data()
    with pytest.raises(ImportError, match="faiss-cpu"):
        semantic_search(queries, corpus, backend="faiss")


def test_faiss_backend_matches_torch():
    pytest.importorskip("faiss")
    rng = np.random.default_rng(3)
    corpus = rng.standard_normal((1000, 16)).astype(np.float32)
    queries = rng.standard_normal((12, 16)).astype(np.float32)
    for score in SCORES:
        want = semantic_search(queries, corpus, top_k=5, score=score, device="cpu")
        got = semantic_search(
            queries, iter(np.array_split(corpus, 3)), top_k=5, score=score, backend="faiss"
        )
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_allclose(got[0], want[0], atol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_matches_cpu():
    queries, corpus = tied_data()
    for score in SCORES:
        cpu = semantic_search(queries, corpus, top_k=9, score=score, chunk_size=40, device="cpu")
        gpu = semantic_search(queries, corpus, top_k=9, score=score, chunk_size=40, device=None)
        np.testing.assert_array_equal(cpu[1], gpu[1])
        np.testing.assert_allclose(cpu[0], gpu[0], rtol=1e-6)


MEMORY_PROBE = textwrap.dedent(
    """
    import json, resource
    import numpy as np, torch
    from sbert_tutor.search.exact import semantic_search

    N, DIM, CHUNK, NQ = 200_000, 64, 10_000, 500

    def chunks():  # the corpus is generated chunk by chunk, never held whole
        for i in range(N // CHUNK):
            yield np.random.default_rng(i).standard_normal((CHUNK, DIM), dtype=np.float32)

    def rss(field):
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(field)

    def reset_peak():  # Linux: writing 5 to clear_refs resets VmHWM (peak RSS) to the current RSS
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def peak_increase(fn):
        exact = reset_peak()
        before = rss("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        out = fn()
        return out, rss("VmHWM") - before, exact

    queries = np.random.default_rng(123).standard_normal((NQ, DIM), dtype=np.float32)
    semantic_search(queries[:3], np.ones((50, DIM), np.float32), device="cpu")  # warm-up

    (s, i), streamed, exact = peak_increase(
        lambda: semantic_search(queries, chunks(), top_k=10, score="dot", chunk_size=CHUNK, device="cpu"))

    def brute():  # control: the full corpus and the full score matrix
        full = torch.from_numpy(np.concatenate(list(chunks())))
        scores = torch.from_numpy(queries) @ full.T
        return scores.topk(10, dim=1).indices.numpy()

    ref_idx, brute_bytes, _ = peak_increase(brute)
    print(json.dumps({"streamed": streamed, "brute": brute_bytes, "exact": exact,
                      "same": float((ref_idx == i).mean()), "matrix": NQ * N * 4}))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_peak_memory_is_bounded_with_an_iterator_corpus():
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="2")
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    matrix = result["matrix"]  # 500 x 200k float32 = 400 MB
    # the measurement sees the full-matrix search (which also holds a 51 MB corpus) ...
    assert result["brute"] > 0.9 * matrix, result
    # ... and the chunked search stays far below it: one 10k chunk and 256 x 10k score blocks
    assert result["streamed"] < 0.2 * matrix, result
    assert result["same"] > 0.999, result  # and finds the same neighbours
