"""Chapter 12a (sbert_tutor.book.chapters.training_a_retriever): the split keeps the test queries
out of training, the recorded study holds every run the chapter reads (its per-query values give
its results back), the chapter's loop and the recorded runs' ``run_study`` make the same calls
in the same order, and the memory figure draws what the chapter's table holds."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import textwrap
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from sbert_tutor.book.chapters import training_a_retriever as chapter
from sbert_tutor.book.recorded import recorded_matching, recorded_results
from tests.conftest import needs_data

matplotlib.use("Agg")

NOTEBOOK = Path(__file__).resolve().parents[2] / "book/12a_training_a_retriever.ipynb"
#: The calls of the study, in the order the chapter and ``run_study`` make them.
CALLS = [
    "load_retriever_data",
    "load_start",  # the miner
    "train_teachers",
    "mined_sets",
    "evaluate_variant",  # the start model, loaded next
    "load_start",
    "train_variant",
]


def _calls(tree: ast.AST) -> list[str]:
    """The study's pieces a piece of code calls, in the order they appear."""
    calls = [
        node for node in ast.walk(tree) if isinstance(node, ast.Call) and hasattr(node.func, "id")
    ]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))
    return [node.func.id for node in calls if node.func.id in CALLS]


def test_the_chapters_loop_and_run_study_make_the_same_calls():
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    loop = next(
        "".join(c["source"])
        for c in cells
        if c["cell_type"] == "code" and "train_variant(sizes" in "".join(c["source"])
    )
    run_study = ast.parse(textwrap.dedent(inspect.getsource(chapter.run_study)))
    assert _calls(ast.parse(loop)) == _calls(run_study) == CALLS


def test_the_recorded_study_holds_every_run_and_its_per_query_values():
    record = recorded_results("retriever_study_t4_h200")
    seeds = record["sizes"]["seeds"]
    runs = [(r["variant"], r["seed"]) for r in record["runs"]]
    assert runs == [("start model", None)] + [(v, s) for v in chapter.VARIANTS for s in seeds]
    for run in record["runs"]:
        for measure in chapter.MEASURES:
            values = run["per_query"][measure]
            assert len(values) == record["data"]["test_queries"]
            # each run's result is the mean of its per-query values (what the bootstrap resamples)
            assert np.mean(list(values.values())) == pytest.approx(
                run["results"][measure], abs=1e-12
            )
    assert set(record["teachers"]) == {"cross-encoder", "bi-encoder"}
    assert set(record["mining"]["rows"]) == set(chapter.VARIANTS)


def test_the_recorded_files_hold_what_the_chapter_reads():
    baselines = recorded_results("bm25_baselines_gpu_h200")
    assert {"overlap@10", "overlap@20"} <= set(baselines["anserini_agreement"])
    for name in ("msmarco-dev-subset", "trec-dl19"):
        methods = baselines["retrieval"][name]
        assert {"bm25", "dense", "hybrid_rrf"} <= set(methods) and "queries" in methods
    records = recorded_matching(("cached_mnrl_memory_cpu_*.json", "cached_mnrl_memory_gpu_*.json"))
    assert {"_cpu_" in name for name in records} == {True, False}  # a CPU file and a GPU file
    for record in records.values():
        results = record.get("rows") or list(record["results"].values())
        assert {r["variant"] for r in results} == {"mnrl", "cached_mnrl"}
        assert all("peak_minus_before_bytes" in r for r in results)


def test_the_memory_figure_draws_one_line_per_record_and_objective():
    rows = pd.DataFrame(
        {
            "record": ["cpu"] * 2 + ["gpu"] * 4,
            "batch size": [256, 256, 32, 32, 512, 512],
            "variant": ["mnrl", "cached_mnrl"] * 3,
            "step memory (MiB)": [4960.0, 723.0, 100.0, 50.0, 1600.0, None],  # one failed
        }
    )
    ax = chapter.plot_memory(rows)
    assert ax.get_xscale() == "log"
    lines = {line.get_label(): list(line.get_xdata()) for line in ax.get_lines()}
    assert lines == {
        "mnrl (cpu)": [256],
        "cached_mnrl (cpu)": [256],
        "mnrl (gpu)": [32, 512],
        "cached_mnrl (gpu)": [32],
    }


@needs_data
def test_the_split_keeps_test_queries_out_of_training():
    sizes = chapter.RetrieverSizes(start="unused", test_queries=100, other_passages=0)
    data = chapter.load_retriever_data(sizes)
    described = data.describe()
    assert described["test_queries"] == 100
    assert described["train_queries"] + described["test_queries"] == 540
    assert not set(data.pairs["anchor"]) & set(data.test.queries.values())
    assert not set(data.labelled["query"]) & set(data.test.queries.values())
    assert set(data.test_candidates) == set(data.test.queries)
    # every training pair's positive is a judged passage, and the mining pool holds it
    assert set(data.pairs["positive"]) <= set(data.pool)
    # train_queries keeps a seeded subset of the training side, and only those queries train
    fewer = chapter.load_retriever_data(dataclasses.replace(sizes, train_queries=50))
    assert fewer.describe()["train_queries"] == 50
    assert set(fewer.pairs["anchor"]) < set(data.pairs["anchor"])
    assert set(fewer.labelled["query"]) == set(fewer.pairs["anchor"])
    assert fewer.test.queries == data.test.queries
    with pytest.raises(ValueError, match="train_queries=441.*1..440"):
        chapter.load_retriever_data(dataclasses.replace(sizes, train_queries=441))


def test_the_recorded_study_names_its_start_and_its_corrections():
    from sbert_tutor.book.recorded import how_recorded

    record = recorded_results("retriever_study_t4_h200")
    # the record predates train_queries; t4 leaves it at its default, all training queries
    assert chapter.SIZES["t4"].train_queries is None
    assert record["sizes"] | {"train_queries": None} == chapter.SIZES["t4"].describe() | {
        "seeds": [0, 1, 2]
    }
    assert "590168c" in how_recorded(record)["corrections"]
    assert chapter.SIZES["quick"].describe()["start"] == "all-MiniLM-L6-v2, first 1 layer"
