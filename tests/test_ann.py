"""sbert_tutor.search.ann against exact search (semantic_search, numpy), a hand-built IVF and by-hand recall."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from sbert_tutor.metrics import recall_at_k
from sbert_tutor.search.ann import SmallTrainingSetWarning, build_index, knn_recall_at_k
from sbert_tutor.search.exact import semantic_search

faiss = pytest.importorskip("faiss")


@pytest.fixture(autouse=True)
def one_faiss_thread():
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(threads)


def clustered(n: int = 600, n_queries: int = 25, dim: int = 16, seed: int = 0):
    """Gaussian blobs around 12 centres (so that IVF cells mean something), float32."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, dim)) * 3
    corpus = centres[rng.integers(0, 12, n)] + rng.standard_normal((n, dim))
    queries = centres[rng.integers(0, 12, n_queries)] + rng.standard_normal((n_queries, dim))
    return queries.astype(np.float32), corpus.astype(np.float32)


@pytest.mark.parametrize("metric", ["cosine", "dot", "euclidean"])
def test_flat_equals_semantic_search(metric):
    queries, corpus = clustered()
    scores, ids = build_index(corpus, "flat", metric=metric).search(queries, k=10)
    ref_scores, ref_ids = semantic_search(queries, corpus, top_k=10, score=metric, device="cpu")
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-4, atol=1e-4)
    torch = pytest.importorskip("torch")  # tensors are taken as they are
    from_tensors = build_index(torch.from_numpy(corpus), "flat", metric=metric)
    np.testing.assert_array_equal(from_tensors.search(torch.from_numpy(queries), k=10)[1], ids)


def test_cosine_scores_are_cosines_and_input_is_not_changed():
    queries, corpus = clustered()
    kept = corpus.copy()
    scores, ids = build_index(corpus * 7.5, "hnsw").search(queries, k=5, efSearch=600)
    np.testing.assert_array_equal(corpus, kept)
    c = corpus[ids]  # [q, k, d]
    cos = np.einsum("qd,qkd->qk", queries, c) / (
        np.linalg.norm(queries, axis=1)[:, None] * np.linalg.norm(c, axis=2)
    )
    np.testing.assert_allclose(scores, cos, atol=1e-5)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_hnsw_with_huge_ef_search_is_exact(metric):
    queries, corpus = clustered()
    _, exact = semantic_search(queries, corpus, top_k=10, score=metric, device="cpu")
    index = build_index(corpus, "hnsw", metric=metric, M=8, efConstruction=64)
    _, ids = index.search(queries, k=10, efSearch=len(corpus))
    np.testing.assert_array_equal(ids, exact)
    # a small efSearch visits less of the graph: it may only lose neighbours, never add
    _, few = index.search(queries, k=10, efSearch=10)
    assert knn_recall_at_k(few, exact, 10) <= 1.0


def sq8_by_hand(corpus: np.ndarray) -> np.ndarray:
    """The module docstring's 8-bit scalar quantisation, decoded: per-dimension range of the
    corpus, q = floor(255 (c - min) / (max - min)), c~ = min + (q + 1/2) (max - min) / 255."""
    low, high = corpus.min(0), corpus.max(0)
    width = high - low
    codes = np.clip(np.floor((corpus - low) / width * np.float32(255)), 0, 255)
    return low + (codes + np.float32(0.5)) / np.float32(255) * width


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_hnsw_sq8_stores_the_hand_decoded_vectors_and_searches_them_exactly(metric):
    """HNSW-SQ8 keeps the vectors the docstring's formula decodes (to float32 rounding), and with
    efSearch = n its graph walk is exact search over those decoded vectors; it stores a quarter
    of the bytes of HNSW-Flat's vectors."""
    queries, corpus = clustered()
    unit = corpus / np.linalg.norm(corpus, axis=1, keepdims=True) if metric == "cosine" else corpus
    index = build_index(corpus, "hnsw_sq8", metric=metric, M=8, efConstruction=64)
    stored = index.index.storage.reconstruct_n(0, len(corpus))
    decoded = sq8_by_hand(unit.astype(np.float32))
    np.testing.assert_allclose(stored, decoded, atol=1e-5)
    assert np.abs(stored - unit).max() > 1e-4  # the rounding is real
    score = "dot" if metric == "cosine" else metric
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True) if metric == "cosine" else queries
    ref_scores, ref_ids = semantic_search(q, decoded, top_k=10, score=score, device="cpu")
    scores, ids = index.search(queries, k=10, efSearch=len(corpus))
    assert knn_recall_at_k(ids, ref_ids, 10) >= 0.99  # near-ties may swap at the 10th place
    np.testing.assert_allclose(scores, ref_scores, atol=1e-4)
    flat = build_index(corpus, "hnsw", metric=metric, M=8, efConstruction=64)
    vectors = len(corpus) * corpus.shape[1]
    assert abs((flat.nbytes - index.nbytes) - 3 * vectors) < 4 * 2 * corpus.shape[1] + 512


@pytest.mark.parametrize("kind", ["hnsw", "hnsw_sq8"])
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_clustered_layout_moves_the_vectors_not_the_results(kind, metric):
    """The clustered layout reorders the stored vectors and graph nodes and maps positions back:
    with one FAISS thread the graph is built the same, so every search returns what the index in
    insertion order returns, and stored position i holds row id_map[i]."""
    queries, corpus = clustered()
    plain = build_index(corpus, kind, metric=metric, M=8, efConstruction=64)
    laid = build_index(corpus, kind, metric=metric, M=8, efConstruction=64, layout_clusters=12)
    assert laid.knobs["layout_clusters"] == 12 and plain.knobs["layout_clusters"] == 0
    for ef in (10, 40):
        plain_scores, plain_ids = plain.search(queries, k=10, efSearch=ef)
        scores, ids = laid.search(queries, k=10, efSearch=ef)
        np.testing.assert_array_equal(ids, plain_ids)
        np.testing.assert_allclose(scores, plain_scores, atol=1e-6)
    order = faiss.vector_to_array(laid.index.id_map)
    assert sorted(order.tolist()) == list(range(len(corpus)))  # a permutation of the rows
    inner = faiss.downcast_index(laid.index.index)
    stored = inner.storage.reconstruct_n(0, len(corpus))
    before = plain.index.storage.reconstruct_n(0, len(corpus))
    np.testing.assert_array_equal(stored, before[order])
    assert len(laid) == len(corpus) and laid.dim == corpus.shape[1]
    # 8 bytes a vector more: the id map
    assert 0 <= laid.nbytes - plain.nbytes - 8 * len(corpus) < 512


def test_clustered_layout_is_the_k_means_order():
    """The stored order is the docstring's: rows sorted by their k-means cluster (FAISS k-means,
    10 iterations, seed 0, at most 64 points a centroid), ties in row order; on 12 separated
    blobs consecutive stored vectors are then near each other, unlike insertion order."""
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((12, 16)) * 20
    corpus = (centres[rng.integers(0, 12, 600)] + rng.standard_normal((600, 16))).astype(np.float32)
    laid = build_index(corpus, "hnsw", metric="euclidean", M=8, layout_clusters=12)
    order = faiss.vector_to_array(laid.index.id_map)
    kmeans = faiss.Kmeans(16, 12, niter=10, seed=0, max_points_per_centroid=64)
    kmeans.train(corpus)
    cluster = kmeans.index.search(corpus, 1)[1][:, 0]
    np.testing.assert_array_equal(order, np.argsort(cluster, kind="stable"))

    def step(rows: np.ndarray) -> float:
        return float(np.linalg.norm(np.diff(corpus[rows], axis=0), axis=1).mean())

    assert step(order) < 0.5 * step(np.arange(len(corpus)))


@pytest.mark.parametrize("metric", ["cosine", "dot", "euclidean"])
def test_ivf_flat_probing_every_list_is_exact(metric):
    queries, corpus = clustered()
    ref_scores, exact = semantic_search(queries, corpus, top_k=10, score=metric, device="cpu")
    index = build_index(corpus, "ivf_flat", metric=metric, nlist=12)
    scores, ids = index.search(queries, k=10, nprobe=12)
    np.testing.assert_array_equal(ids, exact)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-4, atol=1e-4)


def hand_ivf(queries, corpus, centroids, nprobe, k):
    """IVF search by hand: assign every vector to its best centroid (inner product on unit
    vectors), probe the nprobe best centroids of each query, exact search within their lists."""
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    c = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    cell = np.argmax(c @ centroids.T, axis=1)
    out = []
    for qi in q:
        probed = np.argsort(-(centroids @ qi))[:nprobe]
        members = np.flatnonzero(np.isin(cell, probed))
        s = c[members] @ qi
        top = members[np.argsort(-s, kind="stable")[:k]]
        out.append(np.pad(top, (0, k - len(top)), constant_values=-1))  # -1: not found
    return np.array(out)


@pytest.mark.parametrize("nprobe", [1, 2, 5])
def test_ivf_flat_equals_a_hand_written_ivf(nprobe):
    queries, corpus = clustered(seed=3)
    index = build_index(corpus, "ivf_flat", nlist=12)
    centroids = index.centroids()
    assert centroids.shape == (12, corpus.shape[1])
    _, ids = index.search(queries, k=5, nprobe=nprobe)
    np.testing.assert_array_equal(ids, hand_ivf(queries, corpus, centroids, nprobe, 5))


def test_ivf_missing_results_are_minus_one_and_minus_inf():
    queries, corpus = clustered(n=60, seed=1)
    index = build_index(corpus, "ivf_flat", nlist=30)  # about 2 vectors a list
    scores, ids = index.search(queries, k=20, nprobe=1)
    assert (ids == -1).any()
    assert np.all(np.isneginf(scores[ids == -1]))
    assert np.all(np.isfinite(scores[ids >= 0]))


def test_ivf_pq_memory_is_the_codes():
    """IVF-Flat keeps 4d bytes a vector, IVF-PQ m bytes (8-bit codes) plus a 2**8 x d float
    codebook; both keep an 8-byte id a vector and the same nlist x d centroids."""
    n, d, m, nlist = 2000, 32, 8, 16
    _, corpus = clustered(n=n, dim=d, seed=2)
    ivf = build_index(corpus, "ivf_flat", nlist=nlist)
    pq = build_index(corpus, "ivf_pq", nlist=nlist, m=m, nbits=8)
    expected = n * (4 * d - m) - 256 * d * 4
    assert abs((ivf.nbytes - pq.nbytes) - expected) < 512


def test_ivf_pq_searches_the_decoded_vectors():
    """With every list probed, IVF-PQ is exact search over its decoded vectors (centroid plus
    decoded residual): the asymmetric distance q . (mu + r_hat), computed by hand here."""
    queries, corpus = clustered(n=2000, dim=32, seed=2)
    pq = build_index(corpus, "ivf_pq", nlist=16, m=8, nbits=8)
    pq.index.make_direct_map()
    decoded = pq.index.reconstruct_n(0, len(corpus))
    unit_queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    ref_scores, ref_ids = semantic_search(
        unit_queries, decoded, top_k=10, score="dot", device="cpu"
    )
    scores, ids = pq.search(queries, k=10, nprobe=16)
    np.testing.assert_allclose(scores, ref_scores, atol=1e-4)
    assert knn_recall_at_k(ids, ref_ids, 10) >= 0.99  # near-ties may swap at the 10th place


def test_nbytes_is_the_serialized_size(tmp_path):
    queries, corpus = clustered()
    for kind, knobs in (
        ("flat", {}),
        ("hnsw", {}),
        ("hnsw_sq8", {}),
        ("hnsw_sq8", {"layout_clusters": 8}),
        ("ivf_flat", {}),
    ):
        index = build_index(corpus, kind, **knobs)
        path = tmp_path / f"{kind}.faiss"
        faiss.write_index(index.index, str(path))
        assert index.nbytes == path.stat().st_size
        # what is written is whole: read back, it finds what the built index finds
        _, ids = index.search(queries, k=5)
        np.testing.assert_array_equal(faiss.read_index(str(path)).search(queries, 5)[1], ids)
    flat = build_index(corpus, "flat")
    assert 0 <= flat.nbytes - corpus.size * 4 < 200  # the vectors and a small header
    assert flat.build_seconds >= 0 and len(flat) == len(corpus) and flat.dim == corpus.shape[1]


def test_knn_recall_by_hand():
    found = np.array([[4, 1, 7, 9], [2, 3, -1, -1], [5, 6, 8, 0]])
    exact = np.array([[1, 4, 2, 3], [2, 8, 3, 5], [0, 1, 2, 3]])
    # k=2: {4,1}&{1,4} = 2; {2,3}&{2,8} = 1; {5,6}&{0,1} = 0  -> 3 / 6
    assert knn_recall_at_k(found, exact, 2) == pytest.approx(3 / 6)
    # k=4: {4,1,7,9}&{1,4,2,3} = 2; {2,3}&{2,8,3,5} = 2 (-1 never counts); {5,6,8,0}&{0..3} = 1
    assert knn_recall_at_k(found, exact, 4) == pytest.approx(5 / 12)
    # the IR recall of the metrics module with the exact top-k as the relevant documents
    per_query = [
        recall_at_k([str(i) for i in f if i >= 0], {str(i): 1 for i in e[:4]}, k=4)
        for f, e in zip(found, exact, strict=True)
    ]
    assert knn_recall_at_k(found, exact, 4) == pytest.approx(np.mean(per_query))


def test_knn_recall_errors():
    with pytest.raises(ValueError, match="only 2 ids"):
        knn_recall_at_k([[1, 2]], [[1, 2]], k=3)
    with pytest.raises(ValueError, match="same number of rows"):
        knn_recall_at_k([[1, 2]], [[1, 2], [3, 4]], k=1)
    with pytest.raises(ValueError, match="positive integer"):
        knn_recall_at_k([[1, 2]], [[1, 2]], k=0)


def test_clear_errors():
    queries, corpus = clustered(n=100)
    with pytest.raises(ValueError, match="unknown index kind 'ivf'"):
        build_index(corpus, "ivf")
    with pytest.raises(
        ValueError, match="unknown metric 'l2'; valid names: cosine, dot, euclidean"
    ):
        build_index(corpus, "flat", metric="l2")
    with pytest.raises(TypeError, match="hnsw has no build knob 'nlist'"):
        build_index(corpus, "hnsw", nlist=4)
    with pytest.raises(ValueError, match="nlist=200 is larger than the training set"):
        build_index(corpus, "ivf_flat", nlist=200)
    with pytest.raises(ValueError, match="must divide the dimension 16"):
        build_index(corpus, "ivf_pq", nlist=4, m=5)
    with pytest.raises(ValueError, match="at least 2\\*\\*8 = 256 training vectors"):
        build_index(corpus, "ivf_pq", nlist=4, m=4, nbits=8)
    with pytest.raises(ValueError, match="positive integer"):
        build_index(corpus, "hnsw", M=0)
    for bad in (-1, True, 2.5):
        with pytest.raises(ValueError, match="layout_clusters must be 0 .insertion order. or"):
            build_index(corpus, "hnsw_sq8", layout_clusters=bad)
    with pytest.raises(ValueError, match="layout_clusters=101 is larger than the corpus"):
        build_index(corpus, "hnsw", layout_clusters=101)
    with pytest.raises(TypeError, match="ivf_flat has no build knob 'layout_clusters'"):
        build_index(corpus, "ivf_flat", layout_clusters=4)
    index = build_index(corpus, "ivf_flat", nlist=4)
    with pytest.raises(TypeError, match="ivf_flat has no search knob 'efSearch'"):
        index.search(queries, k=3, efSearch=10)
    with pytest.raises(TypeError, match=r"hnsw has no build knob 'm'; .* Did you mean 'M'\?"):
        build_index(corpus, "hnsw", m=16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_probe'"):
        index.search(queries, k=3, n_probe=2)  # the knobs are named parameters: Python refuses
    with pytest.raises(TypeError, match="unexpected keyword argument 'ef_search'"):
        build_index(corpus, "hnsw", ef_search=16)
    with pytest.raises(ValueError, match="positive integer"):
        index.search(queries, k=3, nprobe=0)
    with pytest.raises(ValueError, match="dimension 8, the index 16"):
        index.search(queries[:, :8], k=3)
    with pytest.raises(ValueError, match="NaN or infinite"):
        build_index(np.full((4, 3), np.nan), "flat")
    with pytest.raises(ValueError, match="only ivf_flat and ivf_pq"):
        build_index(corpus, "flat").centroids()


def test_missing_faiss_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(ImportError, match=r"pip install sbert-tutor\[faiss\]"):
        build_index(np.eye(3, dtype=np.float32), "flat")


def test_small_training_set_warns_once_in_python():
    _, corpus = clustered(n=600)
    with pytest.warns(SmallTrainingSetWarning, match="nlist=30 k-means centroids"):
        build_index(corpus, "ivf_flat", nlist=30)  # 600 < 39 * 30
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_index(corpus, "ivf_flat", nlist=12)  # 600 >= 39 * 12: no warning


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_k_larger_than_the_index_is_clipped_as_semantic_search(kind):
    """k > n gives every vector, min(k, n) columns, as semantic_search's top_k > n does."""
    queries, corpus = clustered(n=40, n_queries=3)
    scores, ids = build_index(corpus, kind).search(queries, k=100)
    ref_scores, ref_ids = semantic_search(queries, corpus, top_k=100, device="cpu")
    assert ids.shape == ref_ids.shape == (3, 40)
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_allclose(scores, ref_scores, atol=1e-5)
