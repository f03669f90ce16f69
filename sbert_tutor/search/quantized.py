r"""Search over quantised embeddings, then rescoring with the float query (book chapter 15).

The corpus is stored in one of :mod:`sbert_tutor.search.quantize`'s precisions; the queries stay
float32 (they are encoded at query time and never stored). :func:`quantized_search` follows
sentence-transformers' ``semantic_search_faiss`` / ``semantic_search_usearch`` step by step, so
that those serve as its test reference:

1. **Quantise the queries** with the corpus' precision (and, for int8/uint8, the corpus'
   ``ranges``).
2. **Search the quantised corpus** for :math:`k' = k \cdot m` candidates (``top_k`` times
   ``rescore_multiplier``; :math:`k' = k` without rescoring):

   * ``ubinary`` / ``binary``: bits :math:`b(x)_j = [x_j > 0]`, ranked by the Hamming distance
     :math:`h(u, v) = \sum_j b(u)_j \oplus b(v)_j` (:func:`hamming_search`: FAISS'
     ``IndexBinaryFlat`` when installed, else a NumPy popcount of the XOR of the packed bytes).
     For a random hyperplane :math:`r`, :math:`P[\operatorname{sign}(r \cdot u) \ne
     \operatorname{sign}(r \cdot v)] = \theta(u, v) / \pi` (Charikar 2002), so
     :math:`h / d` estimates the angle over :math:`\pi` when the coordinates behave like random
     projections. The score returned is :math:`-h` (higher is better, as everywhere in the library).
   * ``int8`` / ``uint8``: the inner product of the integer codes, :math:`\sum_j q_j c_j`
     (``code_search``; ``int8`` as usearch's ``i8`` ``ip`` index, ``uint8`` as FAISS'
     ``IndexFlatIP`` over the ``uint8`` codes). The codes of one dimension are an affine map of
     the float values with that dimension's own scale, so this is only an approximation of
     :math:`u \cdot v`.
3. **Rescore** (:func:`rescore`): for each query :math:`u` (float32) and each candidate
   :math:`i`, the new score is :math:`u \cdot \tilde v_i`, where :math:`\tilde v_i` is the
   candidate's *stored* vector: its bits as 0/1 numbers (``ubinary``/``binary``; what
   sentence-transformers does), or its dequantised codes
   :math:`\tilde v_{ij} = a_j + s_j (q_{ij} + 128)` (``int8``; ``+ 0`` for ``uint8``), or a float
   vector. The candidates are re-sorted by that score and the best :math:`k` kept. Passing
   ``rescore_embeddings`` (e.g. the int8 codes of the same corpus) rescores against those instead
   of the searched vectors: the set-up of Shakir, Aarsen & Lee (2024), a binary index in memory
   and int8 vectors on disk.

Memory accounting (``n`` vectors of ``d`` dimensions; :func:`sbert_tutor.search.quantize.bytes_per_vector`)
-----------------------------------------------------------------------------------------------------------
* **In RAM, searched for every query**: the quantised index, :math:`n \lceil d/8 \rceil` bytes
  (binary) or :math:`n d` bytes (int8), against :math:`4 n d` for float32: 32 and 4 times less.
* **On disk, read for the candidates only**: the rescoring vectors. Per query only :math:`k m` rows
  are gathered, so ``rescore_embeddings`` may be a ``numpy.memmap`` of int8 codes (:math:`n d`
  bytes on disk, :math:`k m d` bytes read per query). Rescoring against the binary vectors
  themselves costs nothing extra.
* The float32 query: :math:`4 d` bytes, for the duration of the search.

Ties: the NumPy searches order equal scores by lower corpus index; FAISS keeps its own order.
Rescoring sorts stably, so equal rescored scores keep the order of the first search.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from sbert_tutor.search.quantize import check_precision, quantization_ranges, quantize_embeddings

__all__ = ["dequantize_embeddings", "hamming_search", "quantized_search", "rescore"]

_BINARY = ("binary", "ubinary")
_CODES = ("int8", "uint8")


def _as_ubinary(bits: np.ndarray) -> np.ndarray:
    """Packed bits as ``uint8`` (``binary`` stores each byte minus 128 as ``int8``)."""
    bits = np.asarray(bits)
    if bits.dtype == np.int8:
        return (bits.astype(np.int16) + 128).astype(np.uint8)
    if bits.dtype != np.uint8:
        raise TypeError(
            f"packed bits must be uint8 ('ubinary') or int8 ('binary'), got {bits.dtype}: "
            "quantise float embeddings first with quantize_embeddings(x, 'ubinary')"
        )
    return bits


def _check_pair(queries: np.ndarray, corpus: np.ndarray, top_k: int) -> None:
    if queries.ndim != 2 or corpus.ndim != 2:
        raise ValueError(
            f"queries and corpus must be 2-D, got shapes {queries.shape} and {corpus.shape}"
        )
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(
            f"queries have {queries.shape[1]} columns but the corpus has {corpus.shape[1]}: "
            "were they quantised from embeddings of the same model and precision?"
        )
    if corpus.shape[0] == 0 or queries.shape[0] == 0:
        raise ValueError("nothing to search: the queries or the corpus are empty")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")


def _best_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` columns of every row by (score descending, column ascending), sorted."""
    n = scores.shape[1]
    k = min(k, n)
    if k < n:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        kth = np.take_along_axis(scores, part, axis=1).min(axis=1, keepdims=True)
        # every column above the k-th value, then the lowest-indexed ones equal to it
        above = scores > kth
        equal = scores == kth
        need = k - above.sum(axis=1, keepdims=True)
        keep = above | (equal & (np.cumsum(equal, axis=1) <= need))
        cols = np.nonzero(keep)[1].reshape(len(scores), k)
    else:
        cols = np.broadcast_to(np.arange(n), scores.shape).copy()
    vals = np.take_along_axis(scores, cols, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")  # cols ascending, so ties stay by index
    return np.take_along_axis(vals, order, axis=1), np.take_along_axis(cols, order, axis=1)


def hamming_distances(
    query_bits: np.ndarray, corpus_bits: np.ndarray, chunk_size: int = 16_384
) -> np.ndarray:
    """``[n_q, n]`` Hamming distances between packed bit vectors: a NumPy popcount of the XOR,
    8 bytes at a time when the width allows, ``chunk_size`` corpus rows at a time (the XOR of
    one chunk, ``n_q * chunk_size`` words, is the largest temporary)."""
    q = _as_ubinary(query_bits)
    c = _as_ubinary(corpus_bits)
    if q.ndim == 1:
        q = q[None]
    if q.shape[1] % 8 == 0 and c.shape[1] == q.shape[1]:
        q, c = np.ascontiguousarray(q).view(np.uint64), np.ascontiguousarray(c).view(np.uint64)
    out = np.empty((q.shape[0], c.shape[0]), dtype=np.int64)
    for start in range(0, c.shape[0], chunk_size):
        piece = c[start : start + chunk_size]
        out[:, start : start + len(piece)] = np.bitwise_count(q[:, None, :] ^ piece[None]).sum(
            axis=2, dtype=np.int64
        )
    return out


def hamming_search(
    query_bits: np.ndarray,
    corpus_bits: np.ndarray,
    top_k: int = 10,
    backend: Literal["auto", "faiss", "numpy"] = "auto",
    query_chunk_size: int = 64,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact nearest neighbours of packed bit vectors under the Hamming distance.

    Args:
        query_bits, corpus_bits: ``[n, ceil(d/8)]`` packed bits, ``ubinary`` (``uint8``) or
            ``binary`` (``int8``), as :func:`sbert_tutor.search.quantize.quantize_embeddings` makes them.
        top_k: neighbours per query (at most the corpus size are returned).
        backend: ``"faiss"`` (``IndexBinaryFlat``; ties in FAISS' order), ``"numpy"`` (popcount
            of the XOR, ``query_chunk_size`` queries against the whole corpus at a time; ties by
            lower index) or ``"auto"`` (FAISS when installed).

    Returns:
        ``(distances, indices)``: ``int64`` Hamming distances, smallest first, and corpus indices.
    """
    q, c = _as_ubinary(query_bits), _as_ubinary(corpus_bits)
    if q.ndim == 1:
        q = q[None]
    _check_pair(q, c, top_k)
    k = min(int(top_k), c.shape[0])
    if backend == "auto":
        try:
            import faiss  # noqa: F401

            backend = "faiss"
        except ImportError:
            backend = "numpy"
    if backend == "faiss":
        import faiss

        index = faiss.IndexBinaryFlat(c.shape[1] * 8)
        index.add(np.ascontiguousarray(c))
        dist, idx = index.search(np.ascontiguousarray(q), k)
        return dist.astype(np.int64), idx.astype(np.int64)
    if backend != "numpy":
        raise ValueError(f'backend must be "auto", "faiss" or "numpy", got {backend!r}')
    dists, idxs = [], []
    for start in range(0, len(q), query_chunk_size):
        neg, idx = _best_k(-hamming_distances(q[start : start + query_chunk_size], c), k)
        dists.append(-neg)
        idxs.append(idx)
    return np.concatenate(dists), np.concatenate(idxs)


def code_search(
    query_codes: np.ndarray,
    corpus_codes: np.ndarray,
    top_k: int = 10,
    query_chunk_size: int = 256,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k by the inner product of integer codes (``int8`` or ``uint8``), computed exactly.

    Returns ``(scores, indices)``: ``float64`` scores (integers), best first; ties by lower index.
    """
    q, c = np.asarray(query_codes), np.asarray(corpus_codes)
    if q.ndim == 1:
        q = q[None]
    _check_pair(q, c, top_k)
    if q.dtype not in (np.int8, np.uint8) or c.dtype != q.dtype:
        raise TypeError(
            f"code_search takes int8 or uint8 codes of one type, got {q.dtype} and {c.dtype}"
        )
    # float64 holds every sum of d products of |code| <= 255 exactly
    c64 = c.astype(np.float64)
    scores, idxs = [], []
    for start in range(0, len(q), query_chunk_size):
        s, i = _best_k(q[start : start + query_chunk_size].astype(np.float64) @ c64.T, int(top_k))
        scores.append(s)
        idxs.append(i)
    return np.concatenate(scores), np.concatenate(idxs)


def dequantize_embeddings(codes: np.ndarray, precision: str, ranges: np.ndarray) -> np.ndarray:
    r"""Float values of int8/uint8 codes: :math:`a_j + s_j (q_j + 128)` (``+ 0`` for uint8).

    The centre of bucket :math:`q_j` would be :math:`s_j / 2` higher; this is the bucket's lower
    edge, as sentence-transformers restores it (any constant shift of a dimension changes every
    rescored score of one query by the same amount, so no ranking).
    """
    if precision not in _CODES:
        raise ValueError(f"only int8/uint8 codes can be dequantised, not {precision!r}")
    ranges = np.asarray(ranges, dtype=np.float32)
    steps = (ranges[1] - ranges[0]) / 255
    steps = np.where(steps == 0, 1, steps)
    values = np.asarray(codes).astype(np.float64)
    if precision == "int8":
        values += 128
    return values * steps + ranges[0]


def _stored_values(rows: np.ndarray, precision: str, dim: int, ranges: Any) -> np.ndarray:
    """Gathered stored vectors ``[..., width]`` as the float values rescoring multiplies."""
    if precision in _BINARY:
        return np.unpackbits(_as_ubinary(rows), axis=-1)[..., :dim].astype(np.float64)
    if precision in _CODES:
        if ranges is None:
            raise ValueError(
                f"rescoring against {precision} vectors needs the ranges they were quantised "
                "with: pass ranges= (or calibration_embeddings=)"
            )
        return dequantize_embeddings(rows, precision, ranges)
    return np.asarray(rows, dtype=np.float64)


def rescore(
    query_embeddings: np.ndarray,
    candidates: np.ndarray,
    stored: np.ndarray,
    precision: str,
    top_k: int,
    ranges: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Re-rank candidates by :math:`u \cdot \tilde v_i` (module docstring, step 3); keep ``top_k``.

    Args:
        query_embeddings: ``[n_q, d]`` float queries (not quantised).
        candidates: ``[n_q, k']`` corpus indices from the first search (``-1`` = no candidate).
        stored: ``[n, width]`` the corpus' stored vectors (only the candidates' rows are read,
            so a ``numpy.memmap`` works).
        precision: the precision of ``stored``.
        ranges: ``[2, d]`` int8/uint8 ranges ``stored`` was quantised with.

    Returns:
        ``(scores, indices)``, ``[n_q, min(top_k, k')]``, best first (``float64`` scores; ties keep
        the candidates' order).
    """
    check_precision(precision)
    u = np.asarray(query_embeddings, dtype=np.float32)
    cand = np.asarray(candidates, dtype=np.int64)
    if u.ndim != 2 or cand.ndim != 2 or len(u) != len(cand):
        raise ValueError(
            f"need [n_q, d] queries and [n_q, k'] candidates, got {u.shape} and {cand.shape}"
        )
    valid = cand >= 0
    rows = np.asarray(stored[np.where(valid, cand, 0).ravel()])
    values = _stored_values(rows, precision, u.shape[1], ranges).reshape(*cand.shape, -1)
    if values.shape[-1] != u.shape[1]:
        raise ValueError(
            f"stored vectors have {values.shape[-1]} dimensions, the queries {u.shape[1]}"
        )
    scores = np.einsum("ij,ikj->ik", u.astype(np.float64), values)
    scores[~valid] = -np.inf
    order = np.argsort(-scores, axis=1, kind="stable")[:, :top_k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(cand, order, axis=1)


def quantized_search(
    query_embeddings: np.ndarray,
    corpus_embeddings: np.ndarray,
    corpus_precision: str,
    top_k: int = 10,
    *,
    rescore_multiplier: int = 2,
    rescore_embeddings: np.ndarray | None = None,
    rescore_precision: str | None = None,
    ranges: np.ndarray | None = None,
    calibration_embeddings: np.ndarray | None = None,
    rescoring: bool = True,
    backend: Literal["auto", "faiss", "numpy"] = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """Search a quantised corpus with float queries, then rescore (module docstring).

    Args:
        query_embeddings: ``[n_q, d]`` float32 queries.
        corpus_embeddings: the corpus quantised with ``corpus_precision`` (``int8``, ``uint8``,
            ``binary`` or ``ubinary``; ``float32`` is an exact dot-product search).
        top_k: results per query.
        rescore_multiplier: :math:`m`; the first search keeps ``top_k * m`` candidates.
        rescore_embeddings: the vectors to rescore against (default: ``corpus_embeddings``),
            e.g. int8 codes of the same corpus memory-mapped from disk.
        rescore_precision: their precision (default: ``corpus_precision``).
        ranges, calibration_embeddings: int8/uint8 ranges of the corpus (for quantising the
            queries and dequantising the candidates), or embeddings to take them from.
        rescoring: ``False``: return the first search's ``top_k`` as they are.
        backend: for the Hamming search (:func:`hamming_search`).

    Returns:
        ``(scores, indices)``: best first; ``float32`` scores (``[n_q, top_k]``) and ``int64``
        indices, as :func:`~sbert_tutor.search.exact.semantic_search` and sentence-transformers'
        ``semantic_search`` return them. Scores are the rescored dot products, or without
        rescoring the negative Hamming distance (binary) or the code inner product (int8). They
        are computed in float64 (:func:`rescore`, ``code_search``) and ranked before the
        rounding to float32, so the order is that of the exact scores; sentence-transformers'
        ``semantic_search_faiss`` gives the same scores as Python floats of its float64 values
        (they agree to float32 rounding, about 6e-8 relative).
    """
    check_precision(corpus_precision)
    u = np.asarray(query_embeddings)
    if u.dtype in (np.int8, np.uint8):
        raise TypeError("pass float queries: they are quantised here, and rescoring needs floats")
    u = u.astype(np.float32)
    if u.ndim == 1:
        u = u[None]
    if isinstance(rescore_multiplier, bool) or int(rescore_multiplier) < 1:
        raise ValueError(f"rescore_multiplier must be >= 1, got {rescore_multiplier!r}")
    if rescore_embeddings is not None and rescore_precision is None:
        raise ValueError(
            "say what rescore_embeddings hold: rescore_precision='int8', 'uint8', 'binary', "
            "'ubinary' or 'float32'"
        )
    precision = rescore_precision or corpus_precision
    check_precision(precision)
    if (corpus_precision in _CODES or (rescoring and precision in _CODES)) and ranges is None:
        if calibration_embeddings is None:
            raise ValueError(
                "int8/uint8 vectors need the ranges the corpus was quantised with: pass ranges= "
                "or calibration_embeddings= (sentence-transformers would fall back to the "
                "queries' own ranges, a different scale from the corpus')"
            )
        ranges = quantization_ranges(calibration_embeddings)
    corpus_embeddings = np.asarray(corpus_embeddings)
    k = int(top_k) * (int(rescore_multiplier) if rescoring else 1)
    if corpus_precision in _BINARY:
        dist, cand = hamming_search(
            quantize_embeddings(u, "ubinary"), corpus_embeddings, k, backend=backend
        )
        first = -dist.astype(np.float64)
    elif corpus_precision in _CODES:
        first, cand = code_search(
            quantize_embeddings(u, corpus_precision, ranges=ranges), corpus_embeddings, k
        )
    else:  # a float corpus: exact dot-product search
        from sbert_tutor.search.exact import semantic_search

        first, cand = semantic_search(u, corpus_embeddings, top_k=k, score="dot", device="cpu")
    if not rescoring:
        scores, ids = first[:, :top_k], cand[:, :top_k]
    else:
        stored = corpus_embeddings if rescore_embeddings is None else rescore_embeddings
        scores, ids = rescore(u, cand, stored, precision, int(top_k), ranges=ranges)
    return np.asarray(scores, dtype=np.float32), np.asarray(ids, dtype=np.int64)
