"""The durations in words and the published cost claims, against hand-worked values. (Chapter 2's
page checks its own rates and extrapolation: a pair scored alone and in a batch, the most similar
pair row by row, the extrapolation by hand and at the timed n.)"""

from __future__ import annotations

import pytest

from sbert_tutor.book.cost import cost_claims_checked, humanize_seconds, pair_count


def test_humanize():
    assert humanize_seconds(2.5) == "2.5 s"
    assert humanize_seconds(90) == "1.5 min"
    assert humanize_seconds(7200) == "2 h"
    assert humanize_seconds(3 * 365 * 86400) == "3 years"


def test_pair_count_and_the_cost_claims():
    assert [pair_count(n) for n in (0, 1, 2, 5)] == [0, 0, 1, 10]
    with pytest.raises(ValueError):
        pair_count(-1)
    table = cost_claims_checked()
    sbert, taneja = table.iloc[0], table.iloc[1]
    assert sbert["n(n-1)/2"] == 49_995_000 and sbert["hours at SBERT's rate per pair"] == 65.0
    # Taneja et al.'s 100K sentences: 100 times SBERT's pairs, not 50 million
    assert taneja["n(n-1)/2"] == 4_999_950_000 and taneja["pairs stated"] == 50_000_000
    assert taneja["hours at SBERT's rate per pair"] == round(65 * 4_999_950_000 / 49_995_000, 1)
