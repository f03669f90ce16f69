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
    """All pairwise cosines ``[len(a), len(b)]`` (``b = a`` when omitted)."""
    a_n = normalize_rows(a)
    b_n = a_n if b is None else normalize_rows(b)
    return a_n @ b_n.T
