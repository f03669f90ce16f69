"""Cost extrapolation and the published-numbers table, against hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest

from sbert_tutor import SentenceEncoder
from sbert_tutor.book.cost import (
    CostRates,
    compare_with_paper,
    extrapolate,
    humanize_seconds,
    measure_rates,
)
from sbert_tutor.book.published import sbert_table1


def _rates() -> CostRates:
    return CostRates(
        cross_pairs_per_s=100.0,
        bi_sentences_per_s=1000.0,
        cosine_pairs_per_s=1e6,
        batch_size=8,
        n_pairs_timed=10,
        n_sentences_timed=10,
        device="cpu",
    )


def test_extrapolation_hand_worked():
    row = extrapolate(_rates(), [1000]).iloc[0]
    # n(n-1)/2 = 499,500 pairs; cross = 499500/100 s; bi = 1000/1000 + 499500/1e6 s
    assert row["pairs"] == 499_500
    assert row["cross_encoder_s"] == pytest.approx(4995.0)
    assert row["bi_encoder_s"] == pytest.approx(1.0 + 0.4995)
    assert row["speedup"] == pytest.approx(4995.0 / 1.4995)


def test_paper_column_is_verbatim():
    table = compare_with_paper(_rates(), "test machine")
    assert list(table.iloc[:, 0]) == ["65 h", "5 s"]
    # n = 10,000: 49,995,000 pairs / 100 per s = 499,950 s = 5.79 days
    assert table.iloc[0, 1] == "5.79 days"


def test_humanize():
    assert humanize_seconds(2.5) == "2.5 s"
    assert humanize_seconds(90) == "1.5 min"
    assert humanize_seconds(7200) == "2 h"
    assert humanize_seconds(3 * 365 * 86400) == "3 years"


def test_measure_rates_runs_on_a_tiny_model(tiny_bert):
    model, tokenizer = tiny_bert
    enc = SentenceEncoder(model, tokenizer, max_seq_length=32)
    s1 = [f"sentence number {i}" for i in range(8)]
    s2 = [f"another sentence {i}" for i in range(8)]
    rates = measure_rates(enc, s1, s2, n_sentences=10, batch_size=4, repeats=1)
    assert rates.n_pairs_timed == 8 and rates.n_sentences_timed == 10
    assert min(rates.cross_pairs_per_s, rates.bi_sentences_per_s, rates.cosine_pairs_per_s) > 0


def test_published_table_is_transcribed_consistently():
    """Each row's average (as printed in the paper) matches the mean of its 7 cells to rounding."""
    published = sbert_table1()
    table = published.table
    assert table.shape == (9, 8) and "Table 1" in str(published.source)
    np.testing.assert_allclose(table.iloc[:, :7].mean(axis=1), table["avg"], atol=0.05)


def test_pair_count_and_the_cost_claims():
    from sbert_tutor.book.cost import cost_claims_checked, pair_count

    assert [pair_count(n) for n in (0, 1, 2, 5)] == [0, 0, 1, 10]
    with pytest.raises(ValueError):
        pair_count(-1)
    table = cost_claims_checked()
    sbert, taneja = table.iloc[0], table.iloc[1]
    assert sbert["n(n-1)/2"] == 49_995_000 and sbert["hours at SBERT's rate per pair"] == 65.0
    # Taneja et al.'s 100K sentences: 100 times SBERT's pairs, not 50 million
    assert taneja["n(n-1)/2"] == 4_999_950_000 and taneja["pairs stated"] == 50_000_000
    assert taneja["hours at SBERT's rate per pair"] == round(65 * 4_999_950_000 / 49_995_000, 1)
