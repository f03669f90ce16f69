"""sbert_tutor.stats: seeded subsets against numpy's own draw; the paired bootstrap against a
loop written from its definition; the module's examples."""

from __future__ import annotations

import doctest

import numpy as np
import pandas as pd
import pytest

from sbert_tutor import stats
from sbert_tutor.stats import interval_verdict, paired_bootstrap, seeded_subset


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


def test_interval_verdict_reads_where_zero_lies():
    assert interval_verdict(0.001, 0.2) == "higher"
    assert interval_verdict(-0.2, -0.001) == "lower"
    # an interval that touches 0 cannot tell the systems apart
    assert interval_verdict(0.0, 0.2) == "no difference"
    assert interval_verdict(-0.2, 0.0) == "no difference"


def test_the_examples_in_the_docstrings_hold():
    assert doctest.testmod(stats).failed == 0
