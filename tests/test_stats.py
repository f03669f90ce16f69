"""sbert_tutor.stats: seeded subsets, the paired bootstrap and Platt scaling, against references
(a generic optimiser, a loop written from the definition, hand-worked examples)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from sbert_tutor.stats import paired_bootstrap, platt_scale, seeded_subset


# ------------------------------------------------------------------------------ seeded subsets
def test_seeded_subset_is_numpy_choice_sorted_and_continues_a_generator():
    assert seeded_subset(10, 3, seed=0).tolist() == sorted(
        np.random.default_rng(0).choice(10, 3, replace=False).tolist()
    )
    assert seeded_subset(5, 5, seed=1).tolist() == [0, 1, 2, 3, 4]
    rng, ref = np.random.default_rng(7), np.random.default_rng(7)
    first, second = seeded_subset(20, 4, rng), seeded_subset(20, 4, rng)
    assert first.tolist() == sorted(ref.choice(20, 4, replace=False).tolist())
    assert second.tolist() == sorted(ref.choice(20, 4, replace=False).tolist())
    with pytest.raises(ValueError, match="cannot draw 6 of 5"):
        seeded_subset(5, 6)


# ------------------------------------------------------------------------------ paired bootstrap
def test_paired_bootstrap_matches_a_loop_from_the_definition():
    rng = np.random.default_rng(3)
    a, b = rng.random(30), rng.random(30)
    out = paired_bootstrap(a, b, n_resamples=200, seed=5)
    picks = np.random.default_rng(5).integers(0, 30, size=(200, 30))
    means = [float(np.mean([a[j] - b[j] for j in row])) for row in picks]
    assert out.change == pytest.approx(float(np.mean(a - b)))
    assert out.low == pytest.approx(float(np.percentile(means, 2.5)))
    assert out.high == pytest.approx(float(np.percentile(means, 97.5)))
    assert (out.better, out.worse, out.n, out.n_resamples) == (
        int((a > b).sum()),
        int((a < b).sum()),
        30,
        200,
    )


def test_paired_bootstrap_aligns_series_by_index():
    base = pd.Series([0.0, 1.0, 0.5], index=["q1", "q2", "q3"])
    system = pd.Series([1.0, 1.0, 0.0], index=["q3", "q2", "q1"])  # q3 +0.5, q2 0, q1 0
    out = paired_bootstrap(system, base, n_resamples=50)
    assert (out.better, out.worse) == (1, 0)
    assert out.change == pytest.approx(0.5 / 3)
    # the same numbers matched by position would be +1, 0, -0.5: one query worse
    by_position = paired_bootstrap(system.to_numpy(), base.to_numpy(), n_resamples=50)
    assert (by_position.better, by_position.worse) == (1, 1)
    with pytest.raises(ValueError, match="no value for 1 items"):
        paired_bootstrap(pd.Series([1.0, 2.0], index=["q1", "q9"]), base)
    with pytest.raises(ValueError, match="equal-length"):
        paired_bootstrap([1.0, 2.0], [1.0])


# ------------------------------------------------------------------------------ Platt scaling
def _platt_objective(w, c, y):
    n_pos, n_neg = (y == 1).sum(), (y == 0).sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    z = w[0] * c + w[1]
    # cross-entropy with soft targets, written with logaddexp for stability
    return float(np.sum(t * np.logaddexp(0, -z) + (1 - t) * np.logaddexp(0, z)))


@pytest.mark.parametrize("separable", [False, True])
def test_platt_scale_matches_a_generic_optimiser(separable):
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.2).astype(int)
    c = rng.normal(0.2, 0.15, 300) + (0.6 if separable else 0.15) * y
    if separable:
        c[y == 1] = np.maximum(c[y == 1], c[y == 0].max() + 0.01)
    a, b = platt_scale(c, y)
    ref = minimize(
        _platt_objective,
        x0=[0.0, 0.0],
        args=(c, y),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000},
    )
    # ours is at least as good a minimum as the generic optimiser's, and at the same place
    assert _platt_objective([a, b], c, y) <= ref.fun + 1e-9
    assert a == pytest.approx(ref.x[0], rel=1e-4, abs=1e-4)
    assert b == pytest.approx(ref.x[1], rel=1e-4, abs=1e-4)
    assert a > 0  # higher teacher cosine -> more likely relevant
    assert math.isfinite(a)


def test_platt_scale_symmetric_hand_example():
    # two points per class, mirrored around c = 0 with equal counts: b = 0 by symmetry
    a, b = platt_scale([-1.0, -0.5, 0.5, 1.0], [0, 0, 1, 1])
    assert b == pytest.approx(0.0, abs=1e-12)
    assert a > 0


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        ([0.1, 0.2], [1], "equal-length"),
        ([0.1, float("nan")], [1, 0], "NaN"),
        ([0.1, 0.2], [1, 2], "0 or 1"),
        ([0.1, 0.2], [1, 1], "both classes"),
    ],
)
def test_platt_scale_errors(scores, labels, match):
    with pytest.raises(ValueError, match=match):
        platt_scale(scores, labels)
