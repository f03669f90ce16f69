"""The cost table: every chapter and profile with minutes on 2 CPU cores, a T4 and an H100 and
the peak GPU memory, each with its basis; CI's chapter times feed the CPU column; the t4 profile
fits a T4 by its own estimate."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sbert_tutor.book import profile_costs
from sbert_tutor.book.profiles import PROFILES
from sbert_tutor.book.sizes import (
    CHAPTERS,
    SIZES,
    T4_START,
    ClassificationSizes,
    RegressionSizes,
    sizes_for,
)

FIGURES = {
    "CPU, 2 cores (min)": "CPU basis",
    "T4 (min)": "T4 basis",
    "H100 (min)": "H100 basis",
    "peak GPU memory (GB)": "memory basis",
}


def _cpu_record(seconds: dict[str, float], complete: bool = True) -> dict:
    return {
        "benchmark": "chapter_times",
        "profile": "quick",
        "complete": complete,
        "chapters": {c: {"seconds": s, "outcome": "passed"} for c, s in seconds.items()},
        "provenance": {"git": {"sha": "abcdef1234567890"}, "timestamp": "2026-11-24T00:00:00"},
    }


def test_every_chapter_and_profile_with_a_basis_for_every_figure(tmp_path):
    table = profile_costs.cost_table(folder=tmp_path)  # nothing recorded there
    chapters = {profile_costs.INTRODUCTION, *CHAPTERS.values()}
    for profile in PROFILES:
        rows = table.xs(profile, level="profile")
        assert set(rows.index) == chapters | {"book (all chapters)"}
        for chapter in chapters:
            row = rows.loc[chapter]
            assert row["trains"] and row["evaluates"]
            for figure, basis in FIGURES.items():
                text = row[basis]
                assert text.startswith(
                    ("measured:", "scaled from", "unmeasured:", "estimated", "the ")
                ), (
                    chapter,
                    basis,
                    text,
                )
                if row[figure] != row[figure]:  # NaN: then the basis says how to measure it
                    assert "unmeasured" in text, (chapter, figure)
    assert "unmeasured" in table.attrs["note"] and "chapter_times_cpu" in table.attrs["note"]
    # GPU memory is an estimate until a GPU run records it, and says what measures it
    assert (
        table["memory basis"]
        .dropna()
        .str.contains("unmeasured: python benchmarks/chapter_times.py run")
        .all()
    )


def test_the_t4_profile_fits_a_t4_and_the_book_fits_90_minutes(tmp_path):
    """The t4 profile's sizes against a T4's budget, read from the figures themselves (their
    arithmetic is checked by hand below), not from the table's own verdict column."""
    table = profile_costs.cost_table(("t4",), folder=tmp_path)
    chapters = table.drop(index=("book (all chapters)", "t4"))
    too_long = chapters[chapters["T4 (min)"] > 10]
    too_big = chapters[chapters["peak GPU memory (GB)"] > profile_costs.T4_MEMORY_GB]
    assert too_long.empty and too_big.empty, (too_long.index, too_big.index)
    assert table.loc[("book (all chapters)", "t4"), "T4 (min)"] <= 90
    assert table.loc[("book (all chapters)", "t4"), "peak GPU memory (GB)"] <= 15
    paper = profile_costs.cost_table(("paper",), folder=tmp_path)
    assert (paper["T4 (min)"] > 10).any() or (paper["peak GPU memory (GB)"] > 15).any()


def _regression_row(monkeypatch, tmp_path, **sizes):
    """Chapter 7's t4 row with its sizes replaced: one run from MiniLM (compute factor 1)."""
    s = dataclasses.replace(
        sizes_for(RegressionSizes, "t4"), start=T4_START, model=T4_START, seeds=(0,), **sizes
    )
    monkeypatch.setitem(SIZES[RegressionSizes], "t4", s)
    table = profile_costs.cost_table(("t4",), folder=tmp_path)
    return table, table.loc[(CHAPTERS[RegressionSizes], "t4")]


def test_the_estimates_arithmetic_on_a_hand_worked_chapter(monkeypatch, tmp_path):
    """Chapter 7 in the t4 profile cut to one MiniLM run of 360 steps of 16 pairs (the H100
    measurement itself) and a label-scale table of 1,000 pairs, worked out by hand:

    * training: 360 x 16 pairs x 2 texts = 11,520 sentence equivalents at the measured
      16 x 2 x 360 / 8.4 a second: 8.4 s exactly;
    * encoding: 2 x 1,000 scale pairs + STSb test (1,379 pairs, 2 texts) scored twice (the start
      and the one run) = 2,000 + 5,516 = 7,516 sentences at 14,100 a second: 0.533 s;
    * H100: (27 s a chapter + 8.933 s) / 60 = 0.599 -> 0.6 min;
    * T4: (60 s allowance + 8.933 s x 67 / 8.1) / 60 = (60 + 73.89) / 60 = 2.23 -> 2.2 min;
    * memory: 16 B x 22.7M (weights, gradients, Adam) + 4 B x 22.7M x 2 kept models = 544.8 MB,
      plus 32 texts x 32 tokens x 384 x (34 + 5 x 12 x 32 / 384 = 39) B x 6 layers = 92.0 MB:
      0.637 -> 0.64 GB.
    """
    table, row = _regression_row(monkeypatch, tmp_path, steps=360, batch_size=16, scale_pairs=1000)
    assert "11,520 training and 7,516 encoding" in row["H100 basis"]
    assert row["H100 (min)"] == 0.6
    assert row["T4 (min)"] == 2.2
    assert row["peak GPU memory (GB)"] == 0.64
    assert row[profile_costs.FITS]
    # the book row: the chapters' minutes summed (each row rounded to 0.1) and the largest memory
    chapters = table.drop(index=("book (all chapters)", "t4"))
    book = table.loc[("book (all chapters)", "t4")]
    assert book["T4 (min)"] == pytest.approx(chapters["T4 (min)"].sum(), abs=0.05 * len(chapters))
    assert book["peak GPU memory (GB)"] == chapters["peak GPU memory (GB)"].max()

    # ten times the steps: 84 s + 0.533 s on an H100, (60 + 84.533 x 67 / 8.1) / 60 = 12.65 min
    # on a T4: over 10 minutes although the H100 needs (27 + 84.533) / 60 = 1.9
    _, row = _regression_row(monkeypatch, tmp_path, steps=3600, batch_size=16, scale_pairs=1000)
    assert (row["T4 (min)"], row["H100 (min)"]) == (12.7, 1.9)
    assert not row[profile_costs.FITS]

    # one step of 4,096 pairs: 8,192 texts (5.973 s + 0.533 s: 1.9 min on a T4), but 256 times
    # the activations above: 0.5448 + 256 x 0.0920 = 24.10 GB, over a T4's 15
    _, row = _regression_row(monkeypatch, tmp_path, steps=1, batch_size=4096, scale_pairs=1000)
    assert (row["T4 (min)"], row["peak GPU memory (GB)"]) == (1.9, 24.1)
    assert not row[profile_costs.FITS]


def test_a_t4_profile_too_big_is_caught(monkeypatch, tmp_path):
    """The check's control: ten times the steps of chapter 6 no longer fit a T4."""
    big = dataclasses.replace(sizes_for(ClassificationSizes, "t4"), steps=1000)
    monkeypatch.setitem(SIZES[ClassificationSizes], "t4", big)
    table = profile_costs.cost_table(("t4",), folder=tmp_path)
    assert not table.loc[(CHAPTERS[ClassificationSizes], "t4"), profile_costs.FITS]
    assert not table.loc[("book (all chapters)", "t4"), profile_costs.FITS]


def test_estimates_follow_the_sizes_and_the_models():
    quick, t4, paper = (profile_costs.work(ClassificationSizes, p) for p in PROFILES)
    assert quick.train_units < t4.train_units < paper.train_units
    assert profile_costs.model_factor("bert-base-uncased") == pytest.approx(19_700 / 7_100)
    assert profile_costs.model_factor("nreimers/MiniLM-L6-H384-uncased") == 1.0
    with pytest.raises(ValueError, match="no cost model"):
        profile_costs.model_factor("gpt2")
    # the paper profile's SupMPN (BERT-base, 256 groups of 11 texts) needs more than a T4 has
    table = profile_costs.cost_table(("paper",))
    assert table.loc[("10_supmpn", "paper"), "peak GPU memory (GB)"] > 16
    assert table.loc[("06_classification_objective", "paper"), "T4 (min)"] > 600


def test_t4_minutes_are_the_h100_work_times_the_stated_factor(tmp_path):
    table = profile_costs.cost_table(("t4",), folder=tmp_path)
    work = profile_costs.work(ClassificationSizes, "t4")
    gpu = profile_costs.h100_seconds(work)
    row = table.loc[(CHAPTERS[ClassificationSizes], "t4")]
    assert row["T4 (min)"] == pytest.approx((60 + gpu * 67 / 8.1) / 60, abs=0.05)
    assert "by 8.3" in row["T4 basis"] and "67/8.1" in row["T4 basis"]
    assert row["H100 (min)"] == pytest.approx((27 + gpu) / 60, abs=0.05)


def test_the_cpu_column_comes_from_ci_chapter_times(tmp_path):
    seconds = {c: 100.0 for c in [profile_costs.INTRODUCTION, *CHAPTERS.values()]}
    seconds[CHAPTERS[ClassificationSizes]] = 240.0
    (tmp_path / "chapter_times_cpu.json").write_text(json.dumps(_cpu_record(seconds)))
    table = profile_costs.cost_table(folder=tmp_path)
    quick = table.loc[(CHAPTERS[ClassificationSizes], "quick")]
    assert quick["CPU, 2 cores (min)"] == 4.0
    assert (
        quick["CPU basis"].startswith("measured: the quick profile's chapter times")
        and "abcdef1234" in quick["CPU basis"]
    )
    t4 = table.loc[(CHAPTERS[ClassificationSizes], "t4")]
    assert t4["CPU basis"].startswith("scaled from this chapter's measured quick time (240 s)")
    assert t4["CPU, 2 cores (min)"] > 4.0
    assert table.loc[("book (all chapters)", "quick"), "CPU, 2 cores (min)"] == pytest.approx(
        sum(seconds.values()) / 60, abs=0.2
    )
    assert "the quick profile's chapter times from" in table.attrs["note"]


def test_a_recorded_gpu_run_replaces_the_estimates(tmp_path):
    chapter = CHAPTERS[ClassificationSizes]
    record = {
        "benchmark": "chapter_times",
        "profile": "t4",
        "hardware": "Tesla T4",
        "chapters": {chapter: {"seconds": 300.0, "outcome": "passed", "peak_memory_gb": 2.5}},
        "provenance": {"git": {"sha": "0123456789ab"}, "timestamp": "2026-12-01"},
    }
    (tmp_path / "chapter_times_gpu_tesla_t4.json").write_text(json.dumps(record))
    row = profile_costs.cost_table(("t4",), folder=tmp_path).loc[(chapter, "t4")]
    assert row["T4 (min)"] == 5.0 and row["T4 basis"].startswith("measured: a recorded GPU run")
    assert row["peak GPU memory (GB)"] == 2.5 and "Tesla T4" in row["memory basis"]
    assert row["H100 basis"].startswith("scaled from")  # an H100 figure still needs an H100 run


def test_the_transfer_chapter_is_cpu_bound_and_scaled_from_the_recorded_run():
    table = profile_costs.cost_table(("paper",))
    row = table.loc[("03b_transfer_tasks", "paper")]
    assert "transfer_minilm_cpu.json" in row["CPU basis"] and "6 (3 poolings" in row["CPU basis"]
    assert row["T4 (min)"] == row["CPU, 2 cores (min)"] and "run on the CPU" in row["T4 basis"]
