"""Chapter 11a's book layer: the published tables' transcription, the recorded runs' files and
their provenance table, the sizes and the experiment's wide table. (The chapter's page holds the
experiment, asserting one encoding per pooling, and the recorded runs beside SentEval's engine,
asserting their agreement where both classify the same items.)"""

from __future__ import annotations

import pandas as pd

from sbert_tutor.book import published, sizes
from sbert_tutor.book.chapters import transfer_tasks as book
from sbert_tutor.book.chapters.transfer_tasks import TransferSizes
from sbert_tutor.book.recorded import how_recorded, recorded_results


def test_published_rows_are_labelled_with_their_source():
    frame = book.published_transfer()
    assert list(frame.columns) == [*book.TASK_COLUMNS, "avg", "kind"]
    # every published row is its table's row, task by task (the transcriptions themselves are
    # checked against the papers' text in test_published.py)
    for table in (published.SBERT_TABLE5, published.SUPMPN_TABLE3):
        for model, values in table.items():
            assert tuple(frame.loc[model, [*book.TASK_COLUMNS, "avg"]]) == values
    assert frame.loc["SBERT-NLI-large", "kind"].startswith("published: Reimers & Gurevych (2019)")
    assert frame.loc["SBERT-NLI-large", "kind"].endswith("Table 5")
    assert frame.loc["SupMPN-BERT-base", "kind"] == f"published: {published.SUPMPN_TABLE3_SOURCE}"


def _ours():
    table = [{"task": t, "accuracy": 80.0 + i} for i, t in enumerate(book.TASK_COLUMNS)]
    return {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "table": [*table, {"task": "avg", "accuracy": 83.0}],
        "seconds": 300.0,
        "provenance": {
            "git": {"sha": "abc123" * 5, "dirty": False},
            "hardware": {"device": "cpu", "cpu_count": 2, "torch_threads": 2},
            "profile": "full",
            "data_files": {"/d/senteval/MR/rt-polarity.pos": "f" * 64},
            "timestamp": "2026-01-01T00:00:00+00:00",
            "command": ["sbert-tutor", "eval-transfer"],
        },
    }


def test_recorded_provenance_of_a_run():
    ours = _ours()
    how = how_recorded(ours)
    assert list(book.how_recorded_table({"a": ours, "b": None}).columns) == ["a"]
    assert how["git commit"] == "abc123abc123"
    # recorded before the profiles were quick, t4 and paper: said so, not shown as a profile
    assert how["profile"].startswith("full (a retired profile name")
    assert "rt-polarity.pos: ffffffffffff" in how["data files (sha256)"]


def test_the_recorded_runs_hold_what_the_chapter_reads():
    """The committed files, as the chapter reads them: the library's run has its table (accuracy
    and test items per task), the merged SentEval-engine record its results (acc and ntest) for
    all seven tasks and each part's provenance; the engine's MR and SUBJ items are the counts the
    loader's docstring gives for SentEval's cut lines (the page asserts the rest of the
    comparison)."""
    from sbert_tutor.data import senteval as data

    ours = recorded_results(book.RECORDED_RUN)
    senteval = recorded_results(book.RECORDED_SENTEVAL)
    table = {row["task"]: row for row in ours["table"]}
    assert set(book.TASK_COLUMNS) <= set(table)
    assert all({"accuracy", "n_test"} <= set(table[t]) for t in book.TASK_COLUMNS)
    assert sorted(senteval["results"]) == sorted(book.TASK_COLUMNS)
    assert all({"acc", "ntest"} <= set(out) for out in senteval["results"].values())
    assert all(run["provenance"]["git"]["sha"] for run in senteval["runs"])
    assert sorted(t for run in senteval["runs"] for t in run["tasks"]) == sorted(
        senteval["results"]
    )
    assert senteval["results"]["MR"]["ntest"] == 10_685 and "10,685" in data.__doc__
    assert senteval["results"]["SUBJ"]["ntest"] == 10_021 and "10,021" in data.__doc__
    assert ours["model"] == senteval["model"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_chapter_sizes_per_profile():
    quick, t4, paper = (sizes.sizes_for(TransferSizes, p) for p in ("quick", "t4", "paper"))
    assert quick.experiment_max_items is not None and paper.experiment_max_items is None
    assert set(quick.poolings) <= set(t4.poolings) <= set(paper.poolings)
    assert paper.kfold == 10 and len(paper.experiment_tasks) == 7  # SentEval's protocol


def test_experiment_wide_is_one_row_a_variant():
    frame = pd.DataFrame(
        [
            {"pooling": p, "normalised": n, "task": t, "accuracy": acc}
            for p in ("mean", "cls")
            for n in (True, False)
            for t, acc in (("TREC", 90.0), ("CR", 80.0), ("avg", 85.0))
        ]
    )
    wide = book.experiment_wide(frame)
    assert list(wide.columns) == ["CR", "TREC", "avg"]  # the tasks' order, then avg
    assert list(wide.index) == [("mean", True), ("mean", False), ("cls", True), ("cls", False)]
    assert (wide["TREC"] == 90.0).all()


def test_a_merged_record_shows_one_provenance_column_per_run():
    """benchmarks/senteval_reference.py --merge keeps each run's provenance; the chapter's table
    shows them side by side, each named after its tasks, with the seconds those tasks took."""

    def prov(sha):
        return {"git": {"sha": sha, "dirty": False}, "hardware": {"device": "cpu"}}

    merged = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "results": {
            "MR": {"acc": 76.0, "seconds": 20.0, "run": 1},
            "CR": {"acc": 81.0, "seconds": 10.0, "run": 0},
            "TREC": {"acc": 89.0, "seconds": 5.5, "run": 0},
        },
        "runs": [
            {"tasks": ["CR", "TREC"], "provenance": prov("a" * 40)},
            {"tasks": ["MR"], "provenance": prov("b" * 40)},
        ],
    }
    table = book.how_recorded_table({"SentEval engine": merged, "absent": None})
    assert list(table.columns) == ["SentEval engine: CR/TREC", "SentEval engine: MR"]
    assert table.loc["seconds"].tolist() == [15.5, 20.0]
    assert table.loc["git commit"].tolist() == ["a" * 12, "b" * 12]
