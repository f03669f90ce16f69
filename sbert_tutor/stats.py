r"""Small statistical tools: seeded subsets, a paired bootstrap, Platt calibration.

* :func:`seeded_subset` -- the reproducible random sample behind every ``max_examples=`` and
  every quick-profile sample: ``n`` of ``total`` indices, drawn without replacement, sorted.
* :func:`paired_bootstrap` -- is system A better than system B on the same queries? The mean
  per-query change with a 95% percentile interval over resampled queries.
* :func:`platt_scale` -- turn a score into a probability, :math:`\sigma(a s + b)`, by Platt's
  method (Platt, 1999).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["PairedBootstrap", "paired_bootstrap", "platt_scale", "seeded_subset"]


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


@dataclass(frozen=True)
class PairedBootstrap:
    """The mean per-item change of a system over a baseline and its 95% bootstrap interval."""

    change: float
    low: float
    high: float
    better: int
    worse: int
    n: int
    n_resamples: int


def paired_bootstrap(
    system: Sequence[float] | pd.Series,
    baseline: Sequence[float] | pd.Series,
    n_resamples: int = 2000,
    seed: int = 0,
) -> PairedBootstrap:
    r"""Mean change of ``system`` over ``baseline`` on the same items, with a 95% interval.

    For items :math:`j = 1..m` (queries) with values :math:`a_j` (system) and :math:`b_j`
    (baseline), the change is :math:`\bar\Delta = \frac1m \sum_j (a_j - b_j)`. The interval is
    the 2.5 and 97.5 percentiles of :math:`\bar\Delta` over ``n_resamples`` resamples of the
    items with replacement: the same resample for both systems (a paired test). An interval
    that contains 0 means these items cannot tell the two systems apart.

    Args:
        system, baseline: per-item values. Two ``pandas.Series`` are aligned by index (the
            baseline must hold every item of the system); sequences by position.
        n_resamples: bootstrap resamples.
        seed: the resamples are ``default_rng(seed).integers(0, m, (n_resamples, m))``.

    Raises:
        ValueError: lengths differ, the baseline lacks items, or there is no item.
    """
    if isinstance(system, pd.Series) and isinstance(baseline, pd.Series):
        missing = system.index.difference(baseline.index)
        if len(missing):
            raise ValueError(
                f"the baseline has no value for {len(missing)} items of the system "
                f"(e.g. {missing[0]!r}); compare both on the same items"
            )
        baseline = baseline.reindex(system.index)
    a = np.asarray(system, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"system {a.shape} and baseline {b.shape} must be equal-length vectors")
    if not len(a):
        raise ValueError("no items to compare")
    diff = a - b
    picks = np.random.default_rng(seed).integers(0, len(diff), size=(n_resamples, len(diff)))
    means = diff[picks].mean(axis=1)
    return PairedBootstrap(
        change=float(diff.mean()),
        low=float(np.percentile(means, 2.5)),
        high=float(np.percentile(means, 97.5)),
        better=int((diff > 0).sum()),
        worse=int((diff < 0).sum()),
        n=len(diff),
        n_resamples=n_resamples,
    )


def platt_scale(
    scores: Sequence[float], labels: Sequence[int], iterations: int = 100
) -> tuple[float, float]:
    r"""Fit :math:`P(\text{relevant} \mid s) = \sigma(a s + b)` by Platt's method (Platt, 1999).

    Minimises the cross-entropy against Platt's smoothed targets
    :math:`t_+ = \frac{N_+ + 1}{N_+ + 2}`, :math:`t_- = \frac{1}{N_- + 2}` (which keeps
    :math:`a` finite on separable data) by Newton's method on :math:`(a, b)`.

    Returns:
        ``(a, b)`` as floats.

    Raises:
        ValueError: lengths differ, non-finite scores, or a class is missing.

    Reference:
        Platt (1999), "Probabilistic Outputs for Support Vector Machines and Comparisons to
        Regularized Likelihood Methods".
    """
    c = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if c.shape != y.shape or c.ndim != 1:
        raise ValueError(f"scores {c.shape} and labels {y.shape} must be equal-length vectors")
    if not np.isfinite(c).all():
        raise ValueError("scores contain NaN or infinity")
    n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
    if n_pos + n_neg != len(y):
        raise ValueError("labels must be 0 or 1")
    if not n_pos or not n_neg:
        raise ValueError(f"need both classes to calibrate, got {n_pos} positive, {n_neg} negative")
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    x = np.stack([c, np.ones_like(c)], axis=1)
    w = np.array([0.0, math.log((n_pos + 1) / (n_neg + 1))])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - t)
        hess = (x * (p * (1 - p))[:, None]).T @ x + 1e-12 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-12:
            break
    return float(w[0]), float(w[1])
