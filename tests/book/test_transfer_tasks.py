"""Chapter 11a's book layer: the published tables' transcription, recorded-run tables, sizes and the
pooling/normalisation experiment's mechanics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sbert_tutor.book import published, sizes
from sbert_tutor.book.chapters import transfer_tasks as book
from sbert_tutor.book.chapters.transfer_tasks import TransferSizes
from sbert_tutor.book.recorded import recorded_results
from tests.conftest import needs_data


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


def test_recorded_runs_beside_published_and_their_difference():
    ours = _ours()
    senteval = {
        "model": ours["model"],
        "results": {t: {"acc": 79.5 + i} for i, t in enumerate(book.TASK_COLUMNS)},
    }
    table = book.beside_published(ours, senteval)
    assert table.index[0] == "all-MiniLM-L6-v2 (recorded run: sbert-tutor)"
    assert table.index[1] == "all-MiniLM-L6-v2 (recorded run: SentEval engine)"
    assert table.iloc[0]["avg"] == pytest.approx(83.0)  # mean of 80..86
    assert table.iloc[1]["kind"] == "SentEval's engine, same embeddings"
    assert len(table) == 2 + len(published.SBERT_TABLE5) + len(published.SUPMPN_TABLE3)
    diff = book.ours_minus_senteval(ours, senteval)
    np.testing.assert_allclose(diff["difference"], 0.5)
    how = book.how_recorded(ours)
    assert list(book.how_recorded_table({"a": ours, "b": None}).columns) == ["a"]
    assert book.ours_minus_senteval(ours, None) is None
    assert how["git commit"] == "abc123abc123"
    # recorded before the profiles were quick, t4 and paper: said so, not shown as a profile
    assert how["profile"].startswith("full (a retired profile name")
    assert "rt-polarity.pos: ffffffffffff" in how["data files (sha256)"]


def test_a_run_that_finished_some_tasks_has_no_seven_task_average():
    """SentEval's engine finished 4 of the 7 tasks: its row must not share a label with the full
    run, must not print a 4-task mean in the column of 7-task means, and the difference table
    compares means over the same tasks only (the old table printed 82.76 - 81.00 = 1.76)."""
    ours = _ours()
    finished = ("CR", "SST2", "TREC", "MRPC")
    senteval = {
        "model": ours["model"],
        "results": {t: {"acc": 80.0 + book.TASK_COLUMNS.index(t) - 0.25} for t in finished},
    }
    table = book.beside_published(ours, senteval)
    assert (
        table.index[1] == "all-MiniLM-L6-v2 (recorded run: SentEval engine, CR/SST2/TREC/MRPC only)"
    )
    assert table.index[0] != table.index[1]
    assert np.isnan(table.iloc[1]["avg"]) and np.isnan(table.iloc[1]["MR"])
    assert table.iloc[0]["avg"] == pytest.approx(83.0)
    diff = book.ours_minus_senteval(ours, senteval)
    assert list(diff.index) == [*finished, "avg of the 4 common tasks"]
    np.testing.assert_allclose(diff["difference"], 0.25)
    assert diff.loc["avg of the 4 common tasks", "sbert-tutor"] == pytest.approx(
        np.mean([80.0 + book.TASK_COLUMNS.index(t) for t in finished])
    )


def test_the_recorded_runs_agree_where_they_classify_the_same_items():
    """On the committed files: where SentEval's loader and the library's yield the same items, the
    two runs agree to SentEval's two printed decimals; where they do not (MR, SUBJ: SentEval's
    loader cuts lines at the byte 0x85), the engine saw the extra items and the gap is larger."""
    from sbert_tutor.data import senteval as data

    ours = recorded_results(book.RECORDED_RUN)
    senteval = recorded_results(book.RECORDED_SENTEVAL)
    diff = book.ours_minus_senteval(ours, senteval).iloc[:-1]
    assert list(diff.index) == list(book.TASK_COLUMNS)  # the merged engine record has all seven
    same = diff["items (sbert-tutor)"] == diff["items (SentEval engine)"]
    assert sorted(diff.index[~same]) == ["MR", "SUBJ"]
    assert (diff.loc[same, "difference"].abs() < 0.005).all()
    # the counts the loader's docstring gives for SentEval's cut lines
    assert diff.loc["MR", "items (SentEval engine)"] == 10_685 and "10,685" in data.__doc__
    assert diff.loc["SUBJ", "items (SentEval engine)"] == 10_021 and "10,021" in data.__doc__
    assert (diff.loc[~same, "difference"].abs() < 1).all()
    table = book.beside_published(ours, senteval)
    engine = table[table["kind"] == "SentEval's engine, same embeddings"].iloc[0]
    assert engine["avg"] == pytest.approx(np.mean([engine[t] for t in book.TASK_COLUMNS]))


def test_chapter_sizes_per_profile():
    quick, t4, paper = (sizes.sizes_for(TransferSizes, p) for p in ("quick", "t4", "paper"))
    assert quick.experiment_max_items is not None and paper.experiment_max_items is None
    assert set(quick.poolings) <= set(t4.poolings) <= set(paper.poolings)
    assert paper.kfold == 10 and len(paper.experiment_tasks) == 7  # SentEval's protocol


@needs_data
@pytest.mark.usefixtures("single_thread")
@pytest.mark.filterwarnings("ignore::sbert_tutor.encoders.sentence_encoder.TruncationWarning")
def test_experiment_encodes_once_per_pooling(tiny_bert, monkeypatch):
    from sbert_tutor import SentenceEncoder

    model, tokenizer = tiny_bert
    encoder = SentenceEncoder(model, tokenizer, max_seq_length=32)
    calls = []
    original = SentenceEncoder.encode

    def counting(self, sentences, *args, **kwargs):
        calls.append(len(sentences))
        return original(self, sentences, *args, **kwargs)

    monkeypatch.setattr(SentenceEncoder, "encode", counting)
    chosen = TransferSizes(
        experiment_tasks=("cr",), experiment_max_items=40, poolings=("mean", "cls"), kfold=3
    )
    frame = book.pooling_normalisation_experiment(encoder, chosen)
    assert len(calls) == 2  # one encoding per pooling, shared by both normalisations
    assert set(frame["pooling"]) == {"mean", "cls"} and set(frame["normalised"]) == {True, False}
    wide = book.experiment_wide(frame)
    assert isinstance(wide, pd.DataFrame) and list(wide.columns) == ["CR"] and len(wide) == 4
    assert (frame["mean_norm"] > 0).all()
    record = frame.attrs["provenance"]
    assert record["profile"] == "quick" and record["data_sources"].keys() == {"cr"}
    assert record["variants"] == ["mean, normalised", "mean, raw", "cls, normalised", "cls, raw"]
    assert any(f.endswith("custrev.pos") for f in record["data_files"])


def test_recorded_senteval_engine_file_loads_beside_published():
    """The committed SentEval-engine results file (benchmarks/senteval_reference.py) is found and
    read into the comparison table."""
    senteval = recorded_results(book.RECORDED_SENTEVAL)
    assert senteval is not None and all(run["provenance"]["git"]["sha"] for run in senteval["runs"])
    assert sorted(t for run in senteval["runs"] for t in run["tasks"]) == sorted(
        senteval["results"]
    )
    table = book.beside_published(None, senteval)
    row = table[table["kind"] == "SentEval's engine, same embeddings"].iloc[0]
    assert set(senteval["results"]) <= set(book.TASK_COLUMNS)
    for task, result in senteval["results"].items():
        assert row[task] == result["acc"]


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
    assert book.beside_published(None, merged).iloc[0][["MR", "CR", "TREC"]].tolist() == [
        76,
        81,
        89,
    ]
