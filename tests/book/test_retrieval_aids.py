"""Teaching aids of the retrieval chapters (chapter 12's nDCG conventions, as its page defines
them, and progress bars), the published MS MARCO numbers and the retrieval figures, against
hand-worked rankings. (Chapter 4's page checks its rank-by-rank breakdown against the hand-worked
example; chapter 5's, its first relevant ranks against the run's MRR@10.)"""

from __future__ import annotations

import math

import pytest

from sbert_tutor.book.chapters.msmarco import progress_every
from sbert_tutor.book.published import published_msmarco
from sbert_tutor.evaluation.retrieval import metrics_table
from tests.book.pages import page_functions


def test_ndcg_conventions_ceiling():
    ndcg_conventions = page_functions("12_distance_dilemma", "ndcg_conventions")["ndcg_conventions"]
    run = {"q": {"x": 0.9, "a": 0.5}}
    table = ndcg_conventions(run, {"q": {"a": 1}}, k=10)
    ideal_all = sum(1 / math.log2(i + 1) for i in range(1, 11))
    assert table.loc["trec", "perfect ranking"] == 1.0
    assert table.loc["all_relevant", "perfect ranking"] == pytest.approx(1 / ideal_all)
    assert table.loc["trec", "this run"] == pytest.approx(1 / math.log2(3))
    assert table.loc["all_relevant", "this run"] == pytest.approx(1 / math.log2(3) / ideal_all)


def test_published_numbers_are_labelled():
    published = published_msmarco()
    table = published.table
    assert "msmarco-MiniLM-L6-cos-v5" in table.index
    assert (
        table.loc["msmarco-MiniLM-L6-cos-v5", "mrr@10 (MS MARCO dev, full-collection retrieval)"]
        == 0.3227
    )
    assert "re-ranking" in table.columns[1]  # DL19 is a re-ranking number, not full retrieval
    assert table["source"].str.contains("SBERT.net").all() and "not computed here" in published.note


def test_plots_draw():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from sbert_tutor.book.chapters.msmarco import plot_first_relevant_rank
    from sbert_tutor.book.chapters.retrieval_metrics import plot_metrics_vs_k

    table = metrics_table({f"{m}@{k}": 0.5 for m in ("mrr", "map", "recall") for k in (1, 2, 3)})
    ax = plot_metrics_vs_k(table)
    assert [line.get_label() for line in ax.lines] == ["recall", "mrr", "map"]
    assert ax.lines[2].get_linestyle() == "--"
    ax = plot_first_relevant_rank(pd.Series([1.0, 1.0, 3.0, math.nan, 12.0]), top_k=3)
    assert [p.get_height() for p in ax.patches] == [2, 0, 1, 2]
    plt.close("all")


def test_progress_every_redraws_bars_less_often_and_only_inside_the_block(monkeypatch):
    import io

    from tqdm import std
    from tqdm.auto import tqdm

    clock = iter(range(0, 10_000, 1))  # each call to time() advances one second
    monkeypatch.setattr(std, "time", lambda: next(clock))

    def redraws():
        out = io.StringIO()
        for _ in tqdm(range(60), file=out):
            pass
        return out.getvalue().count("\r")

    before = redraws()
    with progress_every(20):
        inside = redraws()
    assert redraws() == before  # restored on leaving the block
    assert before > 40 and inside < before / 4
    with pytest.raises(ValueError), progress_every(0):
        pass
