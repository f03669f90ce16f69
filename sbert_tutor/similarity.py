r"""Similarity functions on embeddings (numpy), shared by the evaluators and the chapters.

:math:`\cos(u, v) = \frac{u \cdot v}{\lVert u \rVert \, \lVert v \rVert}`.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def as_matrix(embeddings: Any) -> np.ndarray:
    """Embeddings as a 2-D numpy array ``[n, d]``: from an array or tensor (``[d]`` becomes
    ``[1, d]``) or a list of 1-D arrays or tensors (stacked), e.g. any output of ``encode``."""
    if isinstance(embeddings, (list, tuple)):
        if not embeddings:
            raise ValueError("no embeddings given: the list is empty")
        embeddings = [_as_array(e) for e in embeddings]
        return np.stack(embeddings)
    return np.atleast_2d(_as_array(embeddings))


def _as_array(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor, on any device
        x = x.detach().float().cpu().numpy()
    return np.asarray(x)


def normalize_rows(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), eps)


def paired_cosine(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:math:`\\cos(u_i, v_i)` for aligned rows: shape ``[n]``."""
    if u.shape != v.shape:
        raise ValueError(f"u and v must have the same shape, got {u.shape} and {v.shape}")
    return np.sum(normalize_rows(u) * normalize_rows(v), axis=-1)


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """All pairwise cosines of NumPy arrays ``[len(a), len(b)]`` (``b = a`` when omitted); torch
    tensors, differentiably: :func:`sbert_tutor.losses.ranking.tensor_cosine_matrix`."""
    a_n = normalize_rows(a)
    b_n = a_n if b is None else normalize_rows(b)
    return a_n @ b_n.T


#: sentence-transformers' ``similarity_fn_name`` values, in its order.
SIMILARITY_FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")


def check_similarity_fn_name(name: object) -> str:
    """``name`` if it is one of :data:`SIMILARITY_FUNCTIONS` (a ``SimilarityFunction`` enum member
    gives its value), else a ``ValueError`` listing them."""
    value = getattr(name, "value", name)
    if value not in SIMILARITY_FUNCTIONS:
        raise ValueError(
            f"similarity_fn_name={name!r} is not supported; use one of "
            f"{', '.join(SIMILARITY_FUNCTIONS)} (sentence-transformers' names)"
        )
    return str(value)


def similarity_matrix(a: np.ndarray, b: np.ndarray, fn_name: str = "cosine") -> np.ndarray:
    r"""Every pair of rows scored by sentence-transformers' function ``fn_name`` (float64
    ``[len(a), len(b)]``): ``cosine``; ``dot`` :math:`a_i \cdot b_j`; ``euclidean``
    :math:`-\lVert a_i - b_j \rVert_2`; ``manhattan`` :math:`-\lVert a_i - b_j \rVert_1`
    (distances are negated, so higher is more similar, as there)."""
    fn_name = check_similarity_fn_name(fn_name)
    if fn_name == "cosine":
        return cosine_matrix(a, b)
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if fn_name == "dot":
        return a64 @ b64.T
    if fn_name == "euclidean":
        squared = (a64**2).sum(1)[:, None] - 2 * a64 @ b64.T + (b64**2).sum(1)[None, :]
        return -np.sqrt(np.maximum(squared, 0.0))
    # one row of a at a time: memory [len(b), d], not [len(a), len(b), d]
    return np.stack([-np.abs(row - b64).sum(axis=-1) for row in a64]).reshape(len(a64), len(b64))


def paired_similarity(u: np.ndarray, v: np.ndarray, fn_name: str = "cosine") -> np.ndarray:
    """:func:`similarity_matrix`'s score of aligned rows only: shape ``[n]``."""
    fn_name = check_similarity_fn_name(fn_name)
    if u.shape != v.shape:
        raise ValueError(f"u and v must have the same shape, got {u.shape} and {v.shape}")
    if fn_name == "cosine":
        return paired_cosine(u, v)
    u64, v64 = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    if fn_name == "dot":
        return np.sum(u64 * v64, axis=-1)
    if fn_name == "euclidean":
        return -np.sqrt(np.square(u64 - v64).sum(axis=-1))
    return -np.abs(u64 - v64).sum(axis=-1)


__all__ = [
    "SIMILARITY_FUNCTIONS",
    "cosine_matrix",
    "normalize_rows",
    "paired_cosine",
    "paired_similarity",
    "similarity_matrix",
]
