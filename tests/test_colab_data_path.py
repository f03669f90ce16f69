"""The Colab path: every data call the chapters make, with ``SBERT_TUTOR_DATA`` unset, against a
faked hub that serves the real data folder in the hub's shapes (:mod:`tests.hub_shapes`).

Each call runs twice, once on the data folder and once on the hub path (with a fresh cache for
the files rebuilt from the shipped id lists), and the records must be the same: the same ids in
the same order, the same texts, the same labels and scores. Where the hub copy of a data set
differs from the published one (SICK-R's split, the STS12-16 subsets) the test checks that the
difference is the declared one and that the data say so. The NLI training data (chapters 6-10)
and the SentEval transfer tasks (chapter 11a) differ on purpose between the two paths (the data
folder holds SNLI dev+test as a stand-in for SNLI+MultiNLI train; the hub copies of the transfer
tasks are documented in ``HUB_NOTES``): their hub paths are tested in ``test_data_nli.py`` and
``test_data_senteval.py``.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sbert_tutor.book.chapters.classification_objective import ClassificationSizes
from sbert_tutor.book.chapters.computational_efficiency import EfficiencySizes
from sbert_tutor.book.chapters.distance_dilemma import DistanceDilemmaSizes
from sbert_tutor.book.chapters.msmarco import MSMarcoSizes
from sbert_tutor.book.chapters.regression_objective import RegressionSizes
from sbert_tutor.book.chapters.retrieval_metrics import RetrievalMetricsSizes
from sbert_tutor.book.sizes import sizes_for
from sbert_tutor.data import (
    DataNotFoundError,
    load_bm25_candidates,
    load_msmarco,
    load_sts,
    sample_sts,
)
from sbert_tutor.data.msmarco import MSMarcoData, sample_msmarco
from sbert_tutor.data.msmarco_hub import ID_FILES, hub_folder, mini_corpus_head, write_id_lists
from sbert_tutor.data.sts import HUB_NOTES, STSData
from tests.conftest import fake_hub, needs_data, shared_data
from tests.hub_shapes import hub_tables

pytestmark = needs_data
#: The data folder, read once (the hub runs unset SBERT_TUTOR_DATA).
ROOT = shared_data()


def _retrieval_metrics():
    sizes = sizes_for(RetrievalMetricsSizes, "quick")
    dev = sample_msmarco(
        load_msmarco("msmarco-dev-subset"),
        sizes.dev_queries,
        sizes.random_passages,
        candidates=load_bm25_candidates(),
    )
    dl19 = sample_msmarco(load_msmarco("trec-dl19"), sizes.dl19_queries, sizes.random_passages)
    return dev, dl19


def _msmarco():
    sizes = sizes_for(MSMarcoSizes, "quick")
    return [load_msmarco(name, corpus=sizes.corpus) for name in sizes.datasets]


def _dilemma():
    """What chapter 12's page reads: its split and held-out triplets are built from these."""
    sizes = sizes_for(DistanceDilemmaSizes, "quick")
    dev = load_msmarco("msmarco-dev-subset")
    labelled = load_bm25_candidates(with_labels=True)
    ranked = {qid: [pid for pid, _ in items] for qid, items in labelled.items()}
    test = sample_msmarco(dev, sizes.test_queries, sizes.other_passages, seed=0, candidates=ranked)
    return dev, labelled, test


def _efficiency():
    from sbert_tutor.book.chapters.computational_efficiency import mixed_length_sentences

    sizes = sizes_for(EfficiencySizes, "quick")
    with_passages, _ = mixed_length_sentences(sizes.sts_sentences, sizes.passages)
    without, _ = mixed_length_sentences(sizes.sts_sentences, 0)
    return with_passages, without


def _sts_sample(kind: type, split: str, attribute: str):
    sizes = sizes_for(kind, "quick")
    return sample_sts(load_sts("stsb", split), n=getattr(sizes, attribute), seed=0)


#: chapter(s) -> the data calls they make, with their quick sizes.
CALLS: dict[str, Callable[[], Any]] = {
    "ch02-03-11-13 STSb test": lambda: load_sts("stsb", "test"),
    "ch06-08 STSb dev": lambda: load_sts("stsb", "dev"),
    "ch06 STSb dev sample": lambda: _sts_sample(ClassificationSizes, "dev", "eval_pairs"),
    "ch07 STSb train": lambda: load_sts("stsb", "train"),
    "ch07 STSb train sample": lambda: _sts_sample(RegressionSizes, "train", "scale_pairs"),
    "ch04 dev subset and DL19 samples": _retrieval_metrics,
    "ch04 BM25 candidates": lambda: load_bm25_candidates(with_labels=True),
    "ch05 dev subset and DL19 on corpus_mini": _msmarco,
    "ch12 dilemma data and held-out triplets": _dilemma,
    "ch13 mixed-length sentences": _efficiency,
}


def record(value: Any) -> Any:
    """A plain, order-keeping structure of what a chapter reads (no source or file names)."""
    if isinstance(value, MSMarcoData):
        return {
            "name": value.name,
            "queries": list(value.queries.items()),
            "qrels": value.qrels,
            "corpus": list(value.corpus.items()),
            "corpus_name": value.corpus_name,
            "threshold": value.relevance_threshold,
            "notes": value.notes,
        }
    if isinstance(value, STSData):
        return {
            "pairs": list(zip(value.sentences1, value.sentences2, strict=True)),
            "scores": np.round(value.scores, 9).tolist(),
            "subsets": value.subsets,
            "labels": value.labels,
            "range": value.score_range,
            "meta": value.meta,
            "notes": value.notes,
        }
    if is_dataclass(value):
        skip = {"files", "source"}
        return {f.name: record(getattr(value, f.name)) for f in fields(value) if f.name not in skip}
    if isinstance(value, dict):
        return [(k, record(v)) for k, v in value.items()]
    if isinstance(value, list | tuple):
        return [record(v) for v in value]
    return value


@pytest.fixture(scope="module")
def tables():
    return hub_tables(ROOT)


def run_local(monkeypatch, call):
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(ROOT))
    return call()


def run_hub(monkeypatch, call, tables, cache: Path, calls: list):
    fake_hub(monkeypatch, tables, calls)
    monkeypatch.setenv("SBERT_TUTOR_CACHE", str(cache))
    return call()


@pytest.mark.parametrize("name", list(CALLS))
def test_chapter_data_calls_give_the_local_records_from_the_hub(
    name, tables, tmp_path, monkeypatch
):
    call = CALLS[name]
    local = run_local(monkeypatch, call)
    calls: list = []
    hub = run_hub(monkeypatch, call, tables, tmp_path, calls)
    assert record(hub) == record(local)
    if "BM25" not in name:  # the BM25 candidates ship with the library: no hub call
        assert calls, "the hub path made no hub call"


def test_hub_path_says_where_its_data_came_from(tables, tmp_path, monkeypatch):
    calls: list = []
    dev, dl19 = run_hub(monkeypatch, _msmarco, tables, tmp_path, calls)
    assert dev.source.startswith("topics: hub:mteb/msmarco (rebuilt with the shipped qid list")
    assert "rebuilt from hub:mteb/msmarco with the shipped pid list" in dev.source
    assert dl19.source.startswith("topics: hub:mteb/msmarco;")
    root = str(ROOT)
    assert dev.files and not any(str(f).startswith(root) for f in dev.files)
    assert all(str(f).startswith(str(tmp_path)) for f in dev.files)
    stsb = load_sts("stsb", "test")
    assert stsb.source == "hub:sentence-transformers/stsb[test]" and stsb.files == ()
    # A second load reuses the rebuilt files: no second pass over the collection.
    streamed = [c for c in calls if c[1:2] == ("corpus",)]
    load_msmarco("msmarco-dev-subset")
    assert [c for c in calls if c[1:2] == ("corpus",)] == streamed


@pytest.mark.parametrize("year", ["sts12", "sts13", "sts14", "sts15", "sts16"])
def test_hub_sts_years_have_the_pairs_but_no_subsets_and_say_so(
    year, tables, tmp_path, monkeypatch
):
    local = run_local(monkeypatch, lambda: load_sts(year))
    hub = run_hub(monkeypatch, lambda: load_sts(year), tables, tmp_path, [])

    # The same pairs and gold scores (their order is the copy's: 'all' does not depend on it).
    def pairs(data):
        return sorted(zip(data.sentences1, data.sentences2, data.scores.tolist(), strict=True))

    assert pairs(hub) == pairs(local) and len(hub) == len(local)
    assert len(local.subset_names) > 1 and hub.subset_names == ["all"]
    assert hub.notes == (HUB_NOTES[year],) and local.notes == ()


def test_hub_sickr_is_all_of_sick_and_says_so(tables, tmp_path, monkeypatch):
    local = run_local(monkeypatch, lambda: load_sts("sickr", "test"))
    hub = run_hub(monkeypatch, lambda: load_sts("sickr", "test"), tables, tmp_path, [])
    assert (len(local), len(hub)) == (4927, 9927)
    hub_pairs = set(zip(hub.sentences1, hub.sentences2, hub.scores.tolist(), strict=True))
    assert set(zip(local.sentences1, local.sentences2, local.scores.tolist(), strict=True)) <= (
        hub_pairs
    )
    assert hub.notes == (HUB_NOTES["sickr"],) and "9,927" in hub.notes[0]


def test_the_notes_reach_the_sts_table_note(tables, tmp_path, monkeypatch):
    from sbert_tutor.evaluation.sts import evaluate_sts

    class Lengths:  # a stand-in encoder: sentence length and a constant, enough for a note
        def encode(self, sentences, batch_size=64, show_progress_bar=None):
            return np.array([[len(s), 1.0] for s in sentences])

    run_hub(monkeypatch, lambda: None, tables, tmp_path, [])
    result = evaluate_sts(Lengths(), tasks="sts13,sickr", show_progress_bar=False)
    assert HUB_NOTES["sts13"] in result.note and HUB_NOTES["sickr"] in result.note


def test_shipped_id_lists_are_the_data_folders_ids(tmp_path):
    written = write_id_lists(ROOT, tmp_path)
    for key, path in ID_FILES.items():
        assert gzip.decompress(path.read_bytes()) == gzip.decompress(written[key].read_bytes())
        assert path.read_bytes() == written[key].read_bytes(), f"{key}: not reproducible bytes"
    total = sum(p.stat().st_size for p in ID_FILES.values())
    assert total < 400_000, f"the id lists take {total:,} bytes"


def test_first_passages_stream_only_a_prefix_of_the_collection(tmp_path, monkeypatch):
    consumed: list[int] = []
    tables = hub_tables(ROOT, consumed)
    local = run_local(monkeypatch, lambda: _first_passages(20))
    hub, source = run_hub(monkeypatch, lambda: mini_corpus_head(20), tables, tmp_path, [])
    assert hub == local and source.startswith("hub:mteb/msmarco[corpus]")
    # It stopped once the 20 pids were seen, early in a stream of 16,799 + distractor rows.
    assert 20 <= len(consumed) < 100
    assert not (hub_folder() / "msmarco" / "corpus_mini.tsv").exists()


def _first_passages(n):
    from sbert_tutor.data.msmarco import mini_corpus_passages

    return mini_corpus_passages(n)[0]


def test_a_hub_without_a_listed_passage_names_the_setting(tables, tmp_path, monkeypatch):
    serve = tables["mteb/msmarco"]

    def without_first(name, split, streaming):
        out = serve(name, split, streaming)
        return (r for r in out if r["_id"] != "159") if name == "corpus" else out

    with pytest.raises(DataNotFoundError, match="lacks 1 of the 16,799.*159.*SBERT_TUTOR_DATA"):
        run_hub(
            monkeypatch,
            lambda: load_msmarco("trec-dl19"),
            {**tables, "mteb/msmarco": without_first},
            tmp_path,
            [],
        )
    assert not (tmp_path / "hub_data" / "msmarco" / "corpus_mini.tsv").exists()


def test_offline_without_a_folder_names_both_ways_out(tables, tmp_path, monkeypatch):
    fake_hub(monkeypatch, tables, [])
    monkeypatch.setenv("SBERT_TUTOR_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match="SBERT_TUTOR_DATA is not set and HF_HUB_OFFLINE"):
        load_msmarco("msmarco-dev-subset")


# ------------------------------------------------------------------------- the install cell
def _project() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    repo = Path(__file__).resolve().parents[1]
    return tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _chapter_code(chapter: Path) -> list[str]:
    import json

    cells = json.loads(chapter.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def _name(requirement: str) -> str:
    import re

    return re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_colab_extra_covers_what_chapters_import():
    import re
    import sys
    from importlib.metadata import packages_distributions

    project = _project()
    extras = project["optional-dependencies"]
    allowed = {_name(r) for r in project["dependencies"]}
    todo, seen = ["colab"], set()
    while todo:  # the colab extra and the extras of this package it names (sbert-tutor[hub], ...)
        extra = todo.pop()
        seen.add(extra)
        for requirement in extras[extra]:
            allowed.add(_name(requirement))
            if _name(requirement) == project["name"]:
                named = requirement.split("[", 1)[1].split("]", 1)[0].split(",")
                todo += [e.strip() for e in named if e.strip() not in seen]
    book = Path(__file__).resolve().parents[1] / "book"
    modules = {
        m.split(".")[0]
        for chapter in book.glob("*.ipynb")
        for code in _chapter_code(chapter)
        for m in re.findall(r"^\s*(?:from|import)\s+([\w.]+)", code, re.M)
    }
    dists = packages_distributions()
    for module in sorted(modules - set(sys.stdlib_module_names) - {"sbert_tutor"}):
        names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        assert names & allowed, f"chapters import {module}, which no colab requirement provides"


def test_a_stale_or_cut_rebuilt_corpus_is_rebuilt(tables, tmp_path, monkeypatch):
    calls: list = []
    run_hub(monkeypatch, lambda: load_msmarco("trec-dl19"), tables, tmp_path, calls)
    cached = tmp_path / "hub_data" / "msmarco" / "corpus_mini.tsv"
    lines = cached.read_text(encoding="utf-8").split("\n")
    lines[1], lines[2] = lines[2], lines[1]  # another version's order: same size, other ids
    cached.write_text("\n".join(lines), encoding="utf-8")
    hub = load_msmarco("trec-dl19")
    assert sum(c[1:2] == ("corpus",) for c in calls) == 2
    cached.write_text(cached.read_text(encoding="utf-8")[:-1000], encoding="utf-8")  # cut short
    load_msmarco("trec-dl19")
    assert sum(c[1:2] == ("corpus",) for c in calls) == 3
    local = run_local(monkeypatch, lambda: load_msmarco("trec-dl19"))
    assert record(hub) == record(local)
