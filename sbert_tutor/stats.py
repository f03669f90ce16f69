r"""Seeded subsets: :func:`seeded_subset`, the reproducible random sample behind every
``max_examples=``: ``n`` of ``total`` indices, drawn without replacement, sorted.

(The book's statistics, a paired bootstrap and Platt calibration, are in
:mod:`sbert_tutor.book.bootstrap` and the distance-dilemma chapter's module.)
"""

from __future__ import annotations

import numpy as np

__all__ = ["seeded_subset"]


def seeded_subset(total: int, n: int, seed: int | np.random.Generator = 0) -> np.ndarray:
    """``n`` distinct indices of ``range(total)``, drawn with ``seed``, in increasing order.

    ``seed`` may be a ``numpy.random.Generator`` to continue one stream of draws. The draw is
    ``default_rng(seed).choice(total, n, replace=False)``, sorted: the same seed gives the same
    subset, and the subset keeps data order.

    Example:
        >>> seeded_subset(10, 3, seed=0).tolist()
        [6, 7, 8]
    """
    if not 0 <= n <= total:
        raise ValueError(f"cannot draw {n} of {total} items; n must lie in 0..{total}")
    return np.sort(np.random.default_rng(seed).choice(total, n, replace=False))
