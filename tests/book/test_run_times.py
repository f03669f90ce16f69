"""The time table: measured minutes per chapter, one column per recorded run, nothing estimated;
an upper bound only where a profile has a CPU record and no GPU record."""

from __future__ import annotations

import json
import math

import pytest

from sbert_tutor.book.run_times import time_table


def _write(folder, name, profile, chapters, *, gpu=None, complete=True, note=None):
    record = {
        **({"note": note} if note else {}),
        "benchmark": "chapter_times",
        "profile": profile,
        "hardware": gpu,
        "complete": complete,
        "problems": [] if complete else ["03_c: missing"],
        "chapters": chapters,
        "provenance": {
            "git": {"sha": "0123456789abcdef", "dirty": False},
            "timestamp": "2026-11-27T20:00:00+00:00",
            "hardware": {"device": "cpu", "cpu_count": 2, "torch_threads": 2},
        },
    }
    (folder / f"{name}.json").write_text(json.dumps(record))


def _passed(seconds, memory=None):
    return {"seconds": seconds, "outcome": "passed", "peak_memory_gb": memory}


def test_minutes_are_the_recorded_seconds_and_a_failed_chapter_is_blank(tmp_path):
    _write(tmp_path, "chapter_times_cpu", "quick", {"01_a": _passed(60.0), "02_b": _passed(30.0)})
    _write(
        tmp_path,
        "chapter_times_cpu_t4",
        "t4",
        {"01_a": _passed(600.0), "02_b": {"seconds": 5.0, "outcome": "failed"}},
        complete=False,
        note="beside other work",
    )
    table = time_table(tmp_path)
    assert table.loc["01_a", "quick: 2-core CPU (min)"] == pytest.approx(1.0)
    assert table.loc["02_b", "quick: 2-core CPU (min)"] == pytest.approx(0.5)
    assert table.loc["01_a", "t4: 2-core CPU (min)"] == pytest.approx(10.0)
    assert math.isnan(table.loc["02_b", "t4: 2-core CPU (min)"])  # failed: not a time
    # no GPU record of t4: its CPU time is stated as the bound; quick gets none
    assert table.loc["01_a", "t4: a GPU machine (min), at most"] == pytest.approx(10.0)
    assert not [c for c in table.columns if c.startswith("quick") and "at most" in c]
    runs = table.attrs["runs"]
    assert "every chapter passed" in runs["quick: 2-core CPU (min)"]
    assert "1 chapter(s) passed, 1 missing or not passed" in runs["t4: 2-core CPU (min)"]
    assert "beside other work" in runs["t4: 2-core CPU (min)"]
    assert "0123456789ab" in runs["quick: 2-core CPU (min)"]


def test_a_merged_record_of_several_commits_says_so(tmp_path):
    _write(tmp_path, "chapter_times_cpu_t4", "t4", {"01_a": _passed(60.0)})
    path = tmp_path / "chapter_times_cpu_t4.json"
    record = json.loads(path.read_text())
    record["provenance"]["git"] = {"sha": None, "dirty": None}  # as merge writes it
    path.write_text(json.dumps(record))
    runs = time_table(tmp_path).attrs["runs"]
    assert runs["t4: 2-core CPU (min)"].startswith("each chapter at the commit its entry names")


def test_a_gpu_record_replaces_the_bound_and_brings_its_memory(tmp_path):
    _write(tmp_path, "chapter_times_cpu_t4", "t4", {"01_a": _passed(600.0)})
    _write(
        tmp_path, "chapter_times_gpu_tesla_t4", "t4", {"01_a": _passed(90.0, 3.5)}, gpu="Tesla T4"
    )
    table = time_table(tmp_path)
    assert table.loc["01_a", "t4: Tesla T4 (min)"] == pytest.approx(1.5)
    assert table.loc["01_a", "t4: peak GPU memory (GB)"] == pytest.approx(3.5)
    assert not [c for c in table.columns if "at most" in c]


def test_the_books_record_has_every_chapter_of_the_quick_profile():
    """The shipped quick record is complete: one time for every notebook of book/."""
    from pathlib import Path

    book = Path(__file__).resolve().parents[2] / "book"
    table = time_table()
    (column,) = [c for c in table.columns if c.startswith("quick: 2-core CPU")]
    assert set(table[column].dropna().index) == {p.stem for p in book.glob("*.ipynb")}


def test_cpus_are_told_apart_by_instruction_set_and_a_clash_is_refused(tmp_path):
    _write(tmp_path, "chapter_times_cpu_t4", "t4", {"01_a": _passed(600.0), "02_b": _passed(60.0)})
    _write(tmp_path, "chapter_times_cpu_t4_avx2", "t4", {"01_a": _passed(300.0)})
    for name, flags in [
        ("chapter_times_cpu_t4", ["avx2", "avx512_bf16", "avx512f"]),
        ("chapter_times_cpu_t4_avx2", ["avx2", "fma"]),
    ]:
        path = tmp_path / f"{name}.json"
        record = json.loads(path.read_text())
        record["provenance"]["hardware"]["cpu_isa"] = flags
        path.write_text(json.dumps(record))
    table = time_table(tmp_path)
    assert table.loc["01_a", "t4: 2-core CPU with AVX-512 BF16 (min)"] == pytest.approx(10.0)
    assert table.loc["01_a", "t4: 2-core CPU with AVX2 (min)"] == pytest.approx(5.0)
    assert math.isnan(table.loc["02_b", "t4: 2-core CPU with AVX2 (min)"])
    # the bound: each chapter's least CPU time, from whichever run holds it
    bound = table["t4: a GPU machine (min), at most"]
    assert bound["01_a"] == pytest.approx(5.0) and bound["02_b"] == pytest.approx(1.0)
    # two records of one profile on the same kind of CPU would be one column: refused
    _write(tmp_path, "chapter_times_cpu_t4_again", "t4", {"01_a": _passed(1.0)})
    _write(tmp_path, "chapter_times_cpu_t4_more", "t4", {"01_a": _passed(2.0)})
    with pytest.raises(ValueError, match=r"both 't4: 2-core CPU \(min\)'.*merge them"):
        time_table(tmp_path)
