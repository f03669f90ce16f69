r"""Looking inside an embedding space (book chapters 3 and 12).

*Anisotropy* (Ethayarajh, 2019): if embeddings occupy a narrow cone, even unrelated sentences have
a high cosine. We estimate it as the mean cosine of random sentence pairs,

.. math:: A = \mathbb{E}_{i \ne j}\left[\cos(u_i, u_j)\right],

over ``n_pairs`` pairs :math:`(i, j)` drawn uniformly with :math:`i \ne j`. An isotropic space gives
:math:`A \approx 0`.

*A picture of the space*: :func:`pca_2d` projects embeddings on their first two principal
components and says how much of the variance the picture shows.
"""

from __future__ import annotations

import numpy as np

from sbert_tutor.similarity import normalize_rows

__all__ = ["anisotropy", "pca_2d", "random_pair_cosines", "random_pairs"]


def random_pairs(n: int, n_pairs: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` index pairs ``(i, j)`` with ``i != j``, uniform over ``range(n)``."""
    if n < 2:
        raise ValueError("need at least 2 embeddings to form a pair")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=n_pairs)
    j = (i + rng.integers(1, n, size=n_pairs)) % n  # never equal to i
    return i, j


def random_pair_cosines(embeddings: np.ndarray, n_pairs: int = 2000, seed: int = 0) -> np.ndarray:
    """Cosines of ``n_pairs`` random pairs of rows (the sample behind :func:`anisotropy`)."""
    unit = normalize_rows(embeddings)
    i, j = random_pairs(len(unit), n_pairs, seed)
    return np.sum(unit[i] * unit[j], axis=1)


def anisotropy(embeddings: np.ndarray, n_pairs: int = 2000, seed: int = 0) -> float:
    """Mean cosine of random pairs (module docstring)."""
    return float(random_pair_cosines(embeddings, n_pairs, seed).mean())


def pca_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``x`` on their first two principal components (SVD of the centred ``x``), and the
    share of the variance each explains: ``(coordinates [n, 2], ratio [2])``."""
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    var = s**2
    return centred @ vt[:2].T, var[:2] / var.sum()
