"""Cost extrapolation and the published-numbers table, against hand-worked values."""

from __future__ import annotations

import pytest

from sbert_tutor import SentenceEncoder
from sbert_tutor.book.chapters.cost_of_cross_encoders import compare_with_paper
from sbert_tutor.book.cost import CostRates, extrapolate, humanize_seconds, measure_rates


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


def test_measure_rates_counts_what_each_timed_call_did(tiny_bert, monkeypatch):
    """Each rate is items / the median seconds of one call: pairs scored by the cross-encoder,
    sentences encoded, and the n(n-1)/2 distinct pairs of the n sentences whose cosine matrix was
    timed (every timed call takes 2 s here).

    The cosine rate once counted all n * n entries of the matrix, but extrapolate divides the
    n(n-1)/2 distinct pairs by it: the extrapolated cosine time was half that of the product the
    run had timed. Counting distinct pairs here makes both sides of that division the same unit."""
    import sbert_tutor.book.cost as cost

    model, tokenizer = tiny_bert
    enc = SentenceEncoder(model, tokenizer, max_seq_length=32)
    s1 = [f"sentence number {i}" for i in range(8)]
    s2 = [f"another sentence {i}" for i in range(8)]
    monkeypatch.setattr(cost, "median_seconds", lambda fn, repeats: (2.0, fn()))
    rates = measure_rates(enc, s1, s2, n_sentences=10, batch_size=4, repeats=1)
    assert rates.n_pairs_timed == 8 and rates.n_sentences_timed == 10
    assert rates.cross_pairs_per_s == 8 / 2.0
    assert rates.bi_sentences_per_s == 10 / 2.0
    assert rates.cosine_pairs_per_s == (10 * 9 / 2) / 2.0
    # the extrapolation at the timed n gives back the timed call's 2 s (plus encoding)
    row = extrapolate(rates, [10]).iloc[0]
    assert row["bi_encoder_cosine_s"] == pytest.approx(2.0)
    assert row["cross_encoder_s"] == pytest.approx(45 / (8 / 2.0))


def test_cross_encoder_like_scores_each_pair_as_one_input(tiny_bert):
    """The timed cross-encoder runs the transformer once a pair, on [CLS] s1 [SEP] s2 [SEP]:
    its score of a pair does not depend on the batch it is in."""
    import torch

    from sbert_tutor.book.cost import cross_encoder_like

    model, tokenizer = tiny_bert
    enc = SentenceEncoder(model, tokenizer, max_seq_length=32)
    enc.model.eval()  # no dropout: a pair must score the same in any batch
    score = cross_encoder_like(enc)
    first, second = ["a b c", "d e f g h i"], ["x y", "z"]
    together = score(first, second, batch_size=2)
    alone = torch.cat([score(first[i : i + 1], second[i : i + 1], 1) for i in range(2)])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)
    assert together.shape == (2,)


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


def test_most_similar_pair_skips_the_diagonal():
    import torch

    from sbert_tutor.book.cost import most_similar_pair, sentence_pool

    # unit rows: 0 and 2 are the closest distinct pair (cos 0.8); every row's cosine with
    # itself is 1, which a plain (emb @ emb.T).max() would return
    emb = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.8, 0.6]])
    i, j, score = most_similar_pair(emb)
    assert (i, j) == (0, 2)
    assert score == pytest.approx(0.8)
    assert sentence_pool(["a", "b"], ["b", "c"], 2) == ["a", "b"]
