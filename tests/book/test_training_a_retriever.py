"""Chapter 12a (sbert_tutor.book.chapters.training_a_retriever): the recorded baselines and memory
runs are read whatever rows a record holds: BM25 only or with dense and hybrid rows, one batch
size or several, CPU and GPU files, a variant that failed."""

from __future__ import annotations

import copy

import matplotlib
import pytest

from sbert_tutor.book.chapters import training_a_retriever as chapter
from sbert_tutor.book.recorded import recorded_matching, recorded_results

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
    assert set(measures.index.get_level_values("method")) == {"BM25"}
    assert "only BM25 is recorded" in chapter.baselines_sentence(record)
    rows = chapter.memory_rows(recorded_matching(chapter.MEMORY_RECORDS))
    assert list(rows["variant"][:2]) == ["mnrl", "cached_mnrl"]
    assert "times less" in chapter.memory_sentence(rows)


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
    assert "at a batch of 64 pairs" in sentence and "10.0 times less" in sentence
    assert "no number for mnrl" in sentence
    ax = chapter.plot_memory(rows)
    assert ax.get_xscale() == "log"  # several batch sizes: lines over the batch size
    assert chapter.plot_memory(rows[rows["batch size"] == 256]).get_xscale() == "linear"
