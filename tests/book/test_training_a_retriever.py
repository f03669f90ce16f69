"""Chapter 12a (sbert_tutor.book.chapters.training_a_retriever): the recorded baselines and memory
runs are read whatever rows a record holds: BM25 only or with dense and hybrid rows, one batch
size or several, CPU and GPU files, a variant that failed."""

from __future__ import annotations

import copy

import matplotlib
import pandas as pd
import pytest

from sbert_tutor.book.chapters import training_a_retriever as chapter
from sbert_tutor.book.recorded import recorded_matching, recorded_results
from tests.conftest import needs_data

matplotlib.use("Agg")

BM25_ONLY = {
    "anserini_agreement": {
        "overlap@10": {"mean": 0.8, "queries_identical": 10, "queries": 20},
        "overlap@20": {"mean": 0.9, "queries_identical": 15, "queries": 20},
        "top1_agreement": 0.9,
    },
    "retrieval": {
        "trec-dl19": {"bm25": {"mrr@10": 0.7, "ndcg@10": 0.5, "recall@100": 0.6}, "queries": 43}
    },
}


def test_the_recorded_files_read_as_tables():
    record = recorded_results(chapter.BASELINES_RECORD)
    overlap, measures = chapter.baseline_tables(record)
    assert list(overlap.index) == ["10", "20"]
    assert set(measures.index.get_level_values("method")) == {"BM25", "dense", "hybrid (RRF)"}
    assert "best nDCG@10" in chapter.baselines_sentence(record)
    rows = chapter.memory_rows(recorded_matching(chapter.MEMORY_RECORDS))
    assert list(rows["variant"][:2]) == ["mnrl", "cached_mnrl"]
    assert set(rows["device"]) == {"CPU", "GPU"}  # the GPU run's flat rows are read too
    assert chapter.memory_sentence(rows).count("times less") == 2  # one clause a record


def test_dense_and_hybrid_rows_appear_and_the_sentence_names_the_best():
    record = copy.deepcopy(BM25_ONLY)
    record["retrieval"]["trec-dl19"]["dense"] = {"mrr@10": 0.8, "ndcg@10": 0.6, "recall@100": 0.7}
    record["retrieval"]["trec-dl19"]["hybrid_rrf"] = {
        "mrr@10": 0.85,
        "ndcg@10": 0.65,
        "recall@100": 0.75,
    }
    overlap, measures = chapter.baseline_tables(record)
    assert overlap.loc["20", "queries identical"] == 15
    assert list(measures.loc["trec-dl19"].index) == ["BM25", "dense", "hybrid (RRF)"]
    sentence = chapter.baselines_sentence(record)
    assert "15 of 20 queries" in sentence
    assert "best nDCG@10 is hybrid (RRF)'s, 0.650 (BM25 0.500, dense 0.600)" in sentence
    assert "only BM25" in chapter.baselines_sentence(BM25_ONLY)


def _variant(name: str, mib: float, **extra) -> dict:
    return {"variant": name, "peak_minus_before_bytes": mib * 2**20, "step_seconds": 1.0, **extra}


def test_several_batch_sizes_a_gpu_file_and_a_failed_variant():
    cpu = {
        "runs": [
            {
                "batch_size": b,
                "mini_batch_size": 32,
                "results": {"mnrl": _variant("mnrl", 10 * b), "cached_mnrl": _variant("c", b)},
            }
            for b in (64, 256)
        ],
        "provenance": {"hardware": {"device": "cpu", "cpu_count": 2, "torch_threads": 2}},
    }
    gpu = {
        "batch_size": 1024,
        "mini_batch_size": 64,
        "gpu": "NVIDIA H100",
        "results": {
            "mnrl": {"error": "Traceback ...\ntorch.OutOfMemoryError: CUDA out of memory"},
            "cached_mnrl": {"peak_allocated_minus_before_bytes": 3 * 2**30, "step_seconds": 2.0},
        },
    }
    rows = chapter.memory_rows(
        {"cached_mnrl_memory_cpu_x": cpu, "cached_mnrl_memory_gpu_h100": gpu}
    )
    assert len(rows) == 6
    gpu_rows = rows[rows["device"] == "GPU"].set_index("variant")
    assert gpu_rows.loc["cached_mnrl", "step memory (MiB)"] == pytest.approx(3072)
    assert gpu_rows.loc["mnrl", "error"] == "torch.OutOfMemoryError: CUDA out of memory"
    assert gpu_rows.loc["cached_mnrl", "hardware"] == "NVIDIA H100"
    sentence = chapter.memory_sentence(rows)
    assert "at a batch of 256 pairs" in sentence and "10.0 times less" in sentence
    assert "grew from 640 to 2,560 MiB" in sentence
    assert "no number for mnrl" in sentence
    ax = chapter.plot_memory(rows)
    assert ax.get_xscale() == "log"  # several batch sizes: lines over the batch size
    assert chapter.plot_memory(rows[rows["batch size"] == 256]).get_xscale() == "linear"


def test_the_gpu_benchmarks_flat_rows_group_by_batch_size():
    record = {
        "gpu": "NVIDIA H200",
        "mini_batch_size": 32,
        "rows": [
            {"batch_size": b, **_variant(v, mib)}
            for b, pair in ((32, (100, 50)), (512, (1600, 60)))
            for v, mib in zip(("mnrl", "cached_mnrl"), pair, strict=True)
        ],
    }
    rows = chapter.memory_rows({"cached_mnrl_memory_gpu_h200": record})
    assert list(rows["batch size"]) == [32, 32, 512, 512]
    assert list(rows["mini-batch"].fillna(0)) == [0, 32, 0, 32]
    sentence = chapter.memory_sentence(rows)
    assert "batch of 512 pairs" in sentence and "26.7 times less" in sentence


def _study(per_query: dict[str, list[list[float]]]) -> dict:
    """A study record: variant -> one list of per-query MRR@10 values a seed (recall the same)."""
    runs = []
    for variant, seeds in per_query.items():
        for seed, values in enumerate(seeds):
            q = {f"q{i}": v for i, v in enumerate(values)}
            runs.append(
                {
                    "variant": variant,
                    "seed": None if variant == "start model" else seed,
                    "results": {m: sum(values) / len(values) for m in chapter.MEASURES},
                    "per_query": dict.fromkeys(chapter.MEASURES, q),
                }
            )
    return {"runs": runs, "data": {"test_queries": len(values)}}


def test_summary_and_bootstrap_average_the_seeds_per_query():
    study = _study(
        {
            "start model": [[0.0, 0.5, 1.0, 0.0]],
            "in-batch negatives": [[1.0, 0.5, 1.0, 0.5], [1.0, 1.0, 1.0, 0.0]],
            "BM25 negatives": [[1.0, 0.5, 1.0, 0.5], [1.0, 1.0, 1.0, 0.0]],
        }
    )
    table = chapter.summary_table(study)
    assert table.loc["in-batch negatives", "mrr@10"] == pytest.approx(0.75)  # (0.75 + 0.75) / 2
    assert table.loc["in-batch negatives", "mrr@10 spread"] == pytest.approx(0.0)
    assert table.loc["start model", "seeds"] == 0
    boot = chapter.bootstrap_table(study, n_resamples=200)
    # seed means per query: 1.0, 0.75, 1.0, 0.25 against 0.0, 0.5, 1.0, 0.0
    assert boot.loc["in-batch negatives", "mrr@10 change"] == pytest.approx(0.375)
    assert boot.loc["in-batch negatives", "queries better"] == 3
    assert boot.loc["in-batch negatives", "queries worse"] == 0
    verdicts = chapter.verdict_table(study, n_resamples=200)
    assert verdicts.loc["BM25 negatives", "MRR@10"] == "no difference"  # identical runs
    assert "in-batch negatives" not in verdicts.index
    sentence = chapter.study_findings(study, n_resamples=200)
    assert "from 0.375 to 0.750" in sentence and "+0.375" in sentence


def test_a_variant_always_worse_is_called_lower():
    study = _study(
        {
            "start model": [[0.0] * 20],
            "in-batch negatives": [[1.0] * 20],
            "dense negatives, filtered": [[0.5] * 20],
        }
    )
    verdicts = chapter.verdict_table(study, n_resamples=200)
    assert verdicts.loc["dense negatives, filtered", "MRR@10"] == "lower"
    assert verdicts.loc["dense negatives, filtered", "MRR@10 change [95%]"].startswith("-0.500")


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


def test_the_verdict_sentence_groups_the_variants():
    table = pd.DataFrame(
        {"MRR@10": ["higher", "no difference", "lower"]},
        index=["BM25 negatives, top 3 skipped", "BM25 negatives", "Margin-MSE from a bi-encoder"],
    )
    sentence = chapter.verdict_sentence(table)
    assert sentence.startswith("MRR@10 is higher than in-batch negatives'")
    assert '"BM25 negatives, top 3 skipped"; lower' in sentence
    assert sentence.endswith('indistinguishable from in-batch negatives\' for "BM25 negatives"')


def test_the_recorded_study_names_its_start_and_its_corrections():
    from sbert_tutor.book.recorded import how_recorded

    record = recorded_results("retriever_study_t4_h200")
    assert record["sizes"] == chapter.SIZES["t4"].describe() | {"seeds": [0, 1, 2]}
    assert "590168c" in how_recorded(record)["corrections"]
    assert chapter.SIZES["quick"].describe()["start"] == "all-MiniLM-L6-v2, first 1 layer"
