r"""Similarity functions on embeddings (numpy), shared by the evaluators and the chapters.

:math:`\cos(u, v) = \frac{u \cdot v}{\lVert u \rVert \, \lVert v \rVert}`.
"""

from __future__ import annotations

import numpy as np


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
    """All pairwise cosines ``[len(a), len(b)]`` (``b = a`` when omitted)."""
    a_n = normalize_rows(a)
    b_n = a_n if b is None else normalize_rows(b)
    return a_n @ b_n.T
