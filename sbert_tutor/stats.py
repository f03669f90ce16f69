r"""Seeded subsets and a paired bootstrap.

* :func:`seeded_subset`: the reproducible random sample behind every ``max_examples=``: ``n`` of
  ``total`` indices, drawn without replacement, sorted.
* :func:`paired_bootstrap`: is system A better than system B on the same queries? The mean
  per-query change (of :func:`~sbert_tutor.metrics.evaluate_run_per_query`'s values, say) with
  a 95% percentile interval over resampled queries; an interval that contains 0 means the
  queries cannot tell the two apart (:func:`interval_verdict` says it in words).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["PairedBootstrap", "interval_verdict", "paired_bootstrap", "seeded_subset"]


def seeded_subset(total: int, n: int, seed: int | np.random.Generator = 0) -> np.ndarray:
    """``n`` distinct indices of ``range(total)``, drawn with ``seed``, in increasing order.

    ``seed`` may be a ``numpy.random.Generator`` to continue one stream of draws. The draw is
    ``default_rng(seed).choice(total, n, replace=False)``, sorted: the same seed gives the same
    subset, and the subset keeps data order.

    Example:
        >>> seeded_subset(10, 3, seed=0).tolist()
        [5, 6, 9]
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


def interval_verdict(low: float, high: float) -> str:
    """A 95% interval of a change in words: ``"higher"`` when it lies above 0, ``"lower"`` when
    below, ``"no difference"`` when it holds 0 (the queries cannot tell the two systems apart).

    Example:
        >>> interval_verdict(0.01, 0.05), interval_verdict(-0.05, -0.01), interval_verdict(-0.01, 0.02)
        ('higher', 'lower', 'no difference')
    """
    if low <= 0 <= high:
        return "no difference"
    return "higher" if low > 0 else "lower"
