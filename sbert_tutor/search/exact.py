r"""Exact (brute-force) semantic search that scales to corpora larger than memory.

:func:`semantic_search` scores every query against every corpus embedding and keeps the
``top_k`` best, but it never holds the full ``[n_queries, n_corpus]`` score matrix, nor (when
the corpus is given as an iterator of chunks) the full corpus. It walks the corpus chunk by
chunk, scores each chunk against a block of queries, takes that block's top-k with
``torch.topk`` and merges it into a running top-k. Peak memory is therefore about

.. math::

   \underbrace{c \cdot d}_{\text{one chunk}} + \underbrace{b \cdot c}_{\text{one score block}}
   + \underbrace{n_q \cdot k}_{\text{running top-}k}

floats (``c`` = ``chunk_size``, ``b`` = ``query_chunk_size``) instead of
:math:`n \cdot d + n_q \cdot n`: an 8.8M-passage MS MARCO corpus can be encoded and searched
chunk by chunk on a laptop.

Conventions
-----------
* **Scores** are computed in float32 whatever the input dtype (float16/bfloat16 chunks are cast
  up one chunk at a time). ``"cosine"``: :math:`q \cdot c / (\lVert q\rVert \lVert c\rVert)` (a
  zero vector scores 0); ``"dot"``: :math:`q \cdot c`; ``"euclidean"``: the *negative* distance
  :math:`-\lVert q - c\rVert`, so that for every score type higher is better and ranking is
  "sort descending". The squared distance is computed as
  :math:`\lVert q\rVert^2 + \lVert c\rVert^2 - 2\,q\cdot c` (clamped at 0), fast but with an
  absolute error of about :math:`10^{-7} \lVert q\rVert^2` for near-identical vectors; the
  ranking uses the squared distance and only the returned top-k are square-rooted.
* **Ties**: equal scores are ordered by corpus position, lower index first, exactly like a
  stable ``argsort`` of the negated scores (for ``"euclidean"``: equal squared distances). ``torch.topk`` alone does not promise this, so
  ties at the top-k boundary are resolved explicitly.
* **top_k larger than the corpus**: the result has ``min(top_k, n_corpus)`` columns; nothing is
  padded.
* **Device**: ``device=None`` uses CUDA when available, else the CPU. Results always come back
  as NumPy arrays (scores ``float32``, indices ``int64``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import numpy as np
import torch

__all__ = ["semantic_search"]

ScoreName = Literal["cosine", "dot", "euclidean"]
#: The scores :func:`semantic_search` ranks by (module docstring: higher is better for all three).
SCORE_FUNCTIONS: tuple[str, ...] = ("cosine", "dot", "euclidean")

# Rows whose top-k boundary is tied are re-solved this many at a time (bounds the extra memory).
_TIE_ROWS = 16


def _is_matrix(x: Any) -> bool:
    return isinstance(x, (np.ndarray, torch.Tensor))


def _as_float32(x: Any, device: torch.device, name: str) -> torch.Tensor:
    """A 2-D float32 tensor on ``device`` (no copy when it already is one)."""
    if isinstance(x, torch.Tensor):
        t = x.detach()
    else:
        arr = np.asarray(x)
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
        ):
            raise TypeError(f"{name} must be numeric, got an array of dtype {arr.dtype}")
        t = torch.from_numpy(arr) if arr.flags.writeable else torch.from_numpy(arr.copy())
    if t.is_complex():
        raise TypeError(f"{name} must be real-valued, got dtype {t.dtype}")
    if t.ndim != 2:
        raise ValueError(f"{name} must be 2-D [n, dim], got shape {tuple(t.shape)}")
    return t.to(device=device, dtype=torch.float32)


def _check_finite(t: torch.Tensor, name: str) -> None:
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or infinite values")


def _resolve_device(device: str | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    from sbert_tutor.validation import check_device

    return check_device(device)  # a device this machine lacks: a clear ValueError, here


def _iter_chunks(corpus: Any, chunk_size: int) -> tuple[Iterator[Any], int | None]:
    """Split the corpus into pieces of at most ``chunk_size`` rows; also the piece count if known."""
    if _is_matrix(corpus):
        if corpus.ndim != 2:
            raise ValueError(f"corpus must be 2-D [n, dim], got shape {tuple(corpus.shape)}")
        n = corpus.shape[0]
        return (corpus[i : i + chunk_size] for i in range(0, n, chunk_size)), -(-n // chunk_size)

    if not isinstance(corpus, Iterable):
        raise TypeError(
            "corpus must be a 2-D array/tensor or an iterable of 2-D embedding chunks, "
            f"got {type(corpus).__name__}"
        )
    if isinstance(corpus, (list, tuple)) and corpus and np.ndim(corpus[0]) == 1:
        # a list of vectors (nested lists, 1-D arrays or tensors) rather than a list of chunks
        if all(isinstance(v, torch.Tensor) for v in corpus):
            return _iter_chunks(torch.stack(list(corpus)), chunk_size)
        return _iter_chunks(np.asarray(corpus), chunk_size)
    total = None
    if isinstance(corpus, (list, tuple)):
        total = sum(-(-len(c) // chunk_size) for c in corpus)

    def pieces() -> Iterator[Any]:
        for chunk in corpus:
            if not _is_matrix(chunk):
                chunk = np.asarray(chunk)
            if chunk.ndim != 2:
                raise ValueError(
                    f"each corpus chunk must be 2-D [n, dim], got shape {tuple(chunk.shape)}"
                )
            for i in range(0, chunk.shape[0], chunk_size):
                yield chunk[i : i + chunk_size]

    return pieces(), total


def block_scores(
    q: torch.Tensor, q_sq: torch.Tensor, c: torch.Tensor, c_sq: torch.Tensor, score: str
) -> torch.Tensor:
    r"""The ``[len(q), len(c)]`` block of scores of queries ``q`` against corpus rows ``c``.

    One matrix product :math:`S = QC^\top`, then in place: cosine divides by the norms,
    :math:`S_{ij}/(\lVert q_i\rVert\,\lVert c_j\rVert)` (a zero vector scores 0); euclidean
    ranks by the negative *squared* distance, :math:`-(\lVert q_i\rVert^2 - 2S_{ij} +
    \lVert c_j\rVert^2)` (same order, no square root over the block); dot keeps :math:`S`.
    ``q_sq`` and ``c_sq`` are the rows' squared norms (unused for dot); ``score`` is one of
    ``SCORE_FUNCTIONS``.
    """
    s = q @ c.T
    if score == "cosine":
        # normalise after the product: q.c / (|q| |c|), a zero vector scores 0
        s.div_(q_sq.sqrt().clamp_min(1e-12)[:, None]).div_(c_sq.sqrt().clamp_min(1e-12)[None, :])
    elif score == "euclidean":
        # ranked by the negative *squared* distance (same order, no sqrt over the whole block);
        # the final top-k are turned into distances at the end
        s.mul_(-2.0).add_(q_sq[:, None]).add_(c_sq[None, :]).clamp_min_(0.0).neg_()
    return s


def _chunk_topk(s: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k of every row of ``s`` by (score desc, column asc); order within the k is arbitrary.

    ``torch.topk`` returns the right *values*, but when several columns tie with the k-th value
    it may keep any of them. Asking for k + 1 values shows which rows have such a tie (the
    (k+1)-th value equals the k-th) without another pass over ``s``; those rows are re-solved:
    every column above the k-th value, then the lowest-indexed columns equal to it.
    """
    n_cols = s.shape[1]
    vals, idx = torch.topk(s, min(k + 1, n_cols), dim=1, largest=True, sorted=True)
    if vals.shape[1] == k:  # the whole chunk is kept
        return vals, idx
    rows = torch.nonzero(vals[:, k] == vals[:, k - 1]).flatten()
    vals, idx = vals[:, :k].contiguous(), idx[:, :k].contiguous()
    for start in range(0, rows.numel(), _TIE_ROWS):
        r = rows[start : start + _TIE_ROWS]
        sub = s[r]
        kth = vals[r, k - 1 :]
        above = sub > kth
        equal = sub == kth
        need = k - above.sum(dim=1, keepdim=True)
        keep = above | (equal & (equal.cumsum(dim=1) <= need))
        cols = torch.nonzero(keep)[:, 1].view(len(r), k)  # row-major: each row's k columns
        idx[r] = cols
        vals[r] = torch.gather(sub, 1, cols)
    return vals, idx


def merge_top_k(
    vals: torch.Tensor, idx: torch.Tensor, new_vals: torch.Tensor, new_idx: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The best ``k`` of two top lists of the same queries (``[n, k1]`` and ``[n, k2]`` scores
    with their corpus indices), sorted by score descending, ties by index ascending: the order
    one dense pass over the whole corpus gives, so searching chunk by chunk changes nothing."""
    v = torch.cat([vals, new_vals], dim=1)
    i = torch.cat([idx, new_idx], dim=1)
    # two stable sorts: by index, then by score; equal scores keep increasing index order
    order = torch.sort(i, dim=1, stable=True).indices
    v, i = torch.gather(v, 1, order), torch.gather(i, 1, order)
    order = torch.sort(v, dim=1, descending=True, stable=True).indices[:, :k]
    return torch.gather(v, 1, order), torch.gather(i, 1, order)


def _faiss_chunk_topk(
    q: np.ndarray, c: torch.Tensor, k: int, score: str
) -> tuple[torch.Tensor, torch.Tensor]:
    import faiss

    c_np = np.ascontiguousarray(c.cpu().numpy(), dtype=np.float32)
    if score == "euclidean":
        index = faiss.IndexFlatL2(c_np.shape[1])
    else:
        if score == "cosine":
            c_np = c_np / np.maximum(np.linalg.norm(c_np, axis=1, keepdims=True), 1e-12)
        index = faiss.IndexFlatIP(c_np.shape[1])
    index.add(c_np)
    d, i = index.search(q, k)
    if score == "euclidean":
        d = -np.maximum(d, 0.0)  # negative squared distance, like the torch path
    d = np.ascontiguousarray(d, dtype=np.float32)
    return torch.from_numpy(d), torch.from_numpy(i.astype(np.int64))


def semantic_search(
    query_embeddings: Any,
    corpus: Any,
    top_k: int = 10,
    score: ScoreName = "cosine",
    chunk_size: int = 50_000,
    device: str | torch.device | None = None,
    show_progress_bar: bool | None = None,
    query_chunk_size: int = 256,
    backend: Literal["torch", "faiss"] = "torch",
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k search of the queries in the corpus, one corpus chunk at a time.

    Args:
        query_embeddings: ``[n_queries, dim]`` array or tensor (a single ``[dim]`` vector is
            treated as one query).
        corpus: ``[n, dim]`` array or tensor, *or* any iterable of ``[n_i, dim]`` chunks (NumPy
            arrays or tensors, float16/bfloat16/float32, e.g. a generator that encodes the
            corpus batch by batch). An iterator is consumed once and never held whole: at most
            about two chunks (the current one and the next being produced) are alive. Row ``j`` of the concatenated chunks has index ``j``.
        top_k: number of results per query; at most the corpus size are returned.
        score: ``"cosine"``, ``"dot"`` or ``"euclidean"`` (negative L2 distance, so higher is
            better for all three).
        chunk_size: the corpus is scored ``chunk_size`` rows at a time (larger chunks from an
            iterator are split).
        device: where to compute; ``None``: CUDA if available, else CPU.
        show_progress_bar: a tqdm bar over corpus chunks; ``None``: only when stderr is a terminal.
        query_chunk_size: queries scored at a time against a chunk.
        backend: ``"torch"`` (default, deterministic ties) or ``"faiss"`` (a flat FAISS index
            per chunk, CPU; needs the optional ``faiss`` package; ties at the top-k boundary
            within a chunk follow FAISS, not the lower-index rule).

    Returns:
        ``(scores, indices)``: ``[n_queries, min(top_k, n)]`` float32 scores, best first, and the
        int64 corpus indices they belong to. Equal scores are ordered by lower index first.

    Raises:
        ValueError: empty queries or corpus, dimension mismatch, non-finite values, bad options.
        ImportError: ``backend="faiss"`` without FAISS installed.

    >>> import numpy as np
    >>> corpus = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> scores, idx = semantic_search(np.array([[1.0, 0.2]]), corpus, top_k=2, score="dot", device="cpu")
    >>> idx.tolist(), scores.astype(float).round(2).tolist()
    ([[2, 0]], [[1.2, 1.0]])
    """
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    if score not in SCORE_FUNCTIONS:
        raise ValueError(f"score must be one of {SCORE_FUNCTIONS}, got {score!r}")
    for name, value in (("chunk_size", chunk_size), ("query_chunk_size", query_chunk_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if backend not in ("torch", "faiss"):
        raise ValueError(f'backend must be "torch" or "faiss", got {backend!r}')
    if backend == "faiss":
        try:
            import faiss  # noqa: F401
        except ImportError as err:
            raise ImportError(
                'backend="faiss" needs the optional FAISS package (pip install faiss-cpu, or '
                'faiss-gpu); the default backend="torch" needs nothing extra'
            ) from err
        device = "cpu"
    top_k = int(top_k)
    dev = _resolve_device(device)

    if not _is_matrix(query_embeddings):
        query_embeddings = np.asarray(query_embeddings)
    if query_embeddings.ndim == 1:
        query_embeddings = query_embeddings[None, :]
    queries = _as_float32(query_embeddings, dev, "query_embeddings")
    n_queries, dim = queries.shape
    if n_queries == 0 or dim == 0:
        raise ValueError(f"query_embeddings is empty (shape {tuple(queries.shape)})")
    _check_finite(queries, "query_embeddings")
    q_sq = (queries * queries).sum(dim=1)
    q_faiss = None
    if backend == "faiss":
        q_faiss = queries.cpu().numpy()
        if score == "cosine":
            q_faiss = q_faiss / np.maximum(np.sqrt(q_sq.cpu().numpy())[:, None], 1e-12)
        q_faiss = np.ascontiguousarray(q_faiss, dtype=np.float32)

    pieces, total = _iter_chunks(corpus, int(chunk_size))
    if show_progress_bar is None:
        show_progress_bar = sys.stderr.isatty()
    if show_progress_bar:
        from tqdm import tqdm

        pieces = tqdm(pieces, total=total, desc="semantic search", unit="chunk")

    best_vals = torch.empty((n_queries, 0), dtype=torch.float32, device=dev)
    best_idx = torch.empty((n_queries, 0), dtype=torch.int64, device=dev)
    offset = 0
    for n_piece, piece in enumerate(pieces):
        if piece.shape[0] == 0:
            continue
        if piece.shape[1] != dim:
            raise ValueError(
                f"corpus chunk {n_piece} (rows {offset}..) has dimension {piece.shape[1]} but the "
                f"queries have dimension {dim}; were they encoded by the same model?"
            )
        c = _as_float32(piece, dev, "corpus chunk")
        _check_finite(c, f"corpus chunk {n_piece} (rows {offset}..)")
        c_sq = (c * c).sum(dim=1)
        k = min(top_k, c.shape[0])
        if backend == "faiss":
            vals, idx = _faiss_chunk_topk(q_faiss, c, k, score)
            best_vals, best_idx = merge_top_k(best_vals, best_idx, vals, idx + offset, top_k)
        else:
            merged_v, merged_i = [], []
            for qs in range(0, n_queries, query_chunk_size):
                qe = min(qs + query_chunk_size, n_queries)
                s = block_scores(queries[qs:qe], q_sq[qs:qe], c, c_sq, score)
                vals, idx = _chunk_topk(s, k)
                del s
                v, i = merge_top_k(best_vals[qs:qe], best_idx[qs:qe], vals, idx + offset, top_k)
                merged_v.append(v)
                merged_i.append(i)
            best_vals, best_idx = torch.cat(merged_v), torch.cat(merged_i)
        offset += c.shape[0]
        del c, c_sq

    if offset == 0:
        raise ValueError("the corpus is empty: no embeddings to search")
    scores = best_vals.cpu().numpy()
    if score == "euclidean":
        scores = -np.sqrt(-scores)  # NumPy's sqrt is correctly rounded: equal inputs, equal outputs
    return scores, best_idx.cpu().numpy()
