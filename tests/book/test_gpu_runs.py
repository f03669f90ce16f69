"""Chapter 13's GPU section: recorded GPU runs read back with their provenance, their table and
figure, and the plain statement that the GPU figures are unmeasured when none is recorded."""

from __future__ import annotations

import json

import matplotlib
import pytest

from sbert_tutor.book.chapters.computational_efficiency import (
    GPU_RESULTS,
    GPU_RUN_COMMAND,
    encode_table,
    gpu_run_report,
)
from sbert_tutor.book.recorded import recorded_matching

matplotlib.use("Agg")


def test_no_recorded_run_says_unmeasured_and_how_to_measure(tmp_path):
    report = gpu_run_report(tmp_path)
    assert report.runs == {} and report.plot() is None
    assert "unmeasured" in report.note and GPU_RUN_COMMAND in report.note


def _record(tmp_path):
    """A recorded run in the layout benchmarks/encode.py --preset gpu writes (two dtypes)."""
    prov = {
        "git": {"sha": "0123456789abcdef", "dirty": False},
        "hardware": {"device": "cuda", "gpu": "NVIDIA H100"},
        "packages": {"torch": "2.11", "transformers": "5.17"},
        "timestamp": "2026-11-23T00:00:00+00:00",
        "command": ["benchmarks/encode.py", "--preset", "gpu"],
    }
    common = {"set": "stsb", "batch_size": 64, "n": 100, "device": "cuda", "bucket": "auto"}
    encode = {
        "benchmark": "encode_gpu",
        "gpu": "NVIDIA H100",
        "results": [
            {**common, "dtype": "fp32", "warm_sps": 1000.0, "forward_only_sps": 1500.0,
             "end_to_end_vs_forward_only": 1000 / 1500, "padded_tokens": 400, "real_tokens": 300},
            {**common, "dtype": "bf16", "warm_sps": 1600.0, "forward_only_sps": 2000.0,
             "end_to_end_vs_forward_only": 0.8, "padded_tokens": 512, "real_tokens": 300,
             "max_abs_diff_vs_fp32": 1e-3},
        ],
        "first_pass": [
            {**common, "dtype": "fp32", "ours_sps": 500.0, "st_sps": 400.0},
            {**common, "dtype": "bf16", "ours_sps": 700.0, "st_sps": 100.0},
        ],
        "diagnosis": [
            {**common, "dtype": "bf16", "bucket": b, "cudnn": c, "sentences_per_s": v}
            for b, c, v in ((None, "on", 100.0), (32, "on", 300.0), (None, "off", 500.0))
        ],
        "criteria": [{"set": "stsb", "batch_size": 64, "check": "warm bf16 / fp32",
                      "value": 1.6, "bar": 1.4, "pass": True}],
        "provenance": prov,
    }  # fmt: skip
    (tmp_path / "encode_gpu_h100.json").write_text(json.dumps(encode))
    (tmp_path / "encode_cpu_2threads.json").write_text("{}")  # not a GPU run: ignored
    return encode


def test_a_recorded_run_becomes_tables_and_figures(tmp_path):
    encode = _record(tmp_path)
    assert list(recorded_matching(GPU_RESULTS, tmp_path)) == ["encode_gpu_h100"]
    report = gpu_run_report(tmp_path)
    assert report.runs and "0123456789ab" in report.note and "NVIDIA H100" in report.note
    assert report.runs == {"encode_gpu_h100": encode}
    table = encode_table(report.runs["encode_gpu_h100"])
    bf16 = table.loc[("stsb", 64, "bf16")]
    assert bf16["first pass"] == 700 and bf16["warm"] == 1600
    assert bf16["first pass, sentence-transformers"] == 100
    assert bf16["end-to-end / forward-only"] == 0.8
    assert bf16["padding share"] == pytest.approx(1 - 300 / 512)
    assert bf16["max |x - fp32|"] == 1e-3
    assert table.loc[("stsb", 64, "fp32"), "forward only"] == 1500
    assert report.plot() is not None
