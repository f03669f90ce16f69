"""benchmarks/chapter_times.py: CI's chapter times (JUnit XML or a --durations log) and a run of
chapter scripts become one results record with provenance, refused when incomplete."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.scripts import load_script

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ct():
    return load_script("benchmarks/chapter_times.py")


#: What `pytest book --nbmake --junitxml=...` writes (copied from a real nbmake 1.5 run: one
#: chapter passed, one failed), plus a unit test that is not a chapter.
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="3" time="6.813" timestamp="2026-11-24T08:29:09.075205+00:00" hostname="vm"><testcase classname="tests.test_metrics" name="test_mrr" time="0.010" /><testcase classname="book.01_a.ipynb" name="01_a.ipynb" time="3.654" /><testcase classname="book.02_b.ipynb" name="02_b.ipynb" time="3.064"><failure message="#x1B[31mValueError#x1B[39m: boom">ValueError: boom</failure></testcase></testsuite></testsuites>"""

#: The same run as a `--durations=0 -q` log (lines as pytest prints them).
DURATIONS = """============================== slowest durations ===============================
3.65s call     book/01_a.ipynb::01_a.ipynb
0.02s setup    book/01_a.ipynb::01_a.ipynb
3.06s call     book/02_b.ipynb::02_b.ipynb
0.10s call     tests/test_metrics.py::test_mrr
=========================== short test summary info ============================
FAILED book/02_b.ipynb::02_b.ipynb - ValueError: boom
1 failed, 1 passed in 6.73s
"""


def _book(tmp_path, *stems):
    book = tmp_path / "book"
    book.mkdir()
    for stem, code in stems:
        cell = {
            "cell_type": "code",
            "metadata": {},
            "source": code,
            "outputs": [],
            "execution_count": None,
        }
        (book / f"{stem}.ipynb").write_text(
            json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        )
    return book


def test_junit_and_durations_give_the_same_chapters(ct, tmp_path):
    xml = tmp_path / "nbmake.xml"
    xml.write_text(JUNIT)
    junit = ct.parse_junit(xml)
    assert junit == {
        "01_a": {"seconds": pytest.approx(3.654), "outcome": "passed"},
        "02_b": {"seconds": pytest.approx(3.064), "outcome": "failed"},
    }
    durations = ct.parse_durations(DURATIONS)
    assert durations["01_a"] == {"seconds": pytest.approx(3.67), "outcome": "passed"}
    assert durations["02_b"]["outcome"] == "failed" and "test_mrr" not in str(durations)


def test_real_chapter_names_are_recognised(ct):
    line = "1234.56s call     book/11a_transfer_tasks.ipynb::11a_transfer_tasks.ipynb"
    assert ct.parse_durations(line) == {
        "11a_transfer_tasks": {"seconds": 1234.56, "outcome": "passed"}
    }
    assert set(ct.chapters_in()) >= {
        "01_introduction",
        "11a_transfer_tasks",
        "13_computational_efficiency",
    }


def test_an_incomplete_run_is_not_recorded_unless_asked(ct, tmp_path, monkeypatch, capsys):
    xml = tmp_path / "nbmake.xml"
    xml.write_text(JUNIT)
    book = _book(tmp_path, ("01_a", "x = 1"), ("02_b", "x = 2"), ("03_c", "x = 3"))
    monkeypatch.delenv("SBERT_TUTOR_DATA", raising=False)
    out = tmp_path / "times.json"
    args = ["from-junit", str(xml), "--book", str(book), "--profile", "quick", "--out", str(out)]
    assert ct.main(args) == 1 and not out.exists()
    assert "02_b: failed" in capsys.readouterr().err
    assert ct.main([*args, "--allow-incomplete"]) == 0
    record = json.loads(out.read_text())
    assert record["complete"] is False and "03_c: missing" in record["problems"]
    assert record["profile"] == "quick" and record["provenance"]["git"]["sha"]
    assert record["chapters"]["01_a"]["seconds"] == pytest.approx(3.654)


def test_a_complete_run_is_recorded_with_provenance_and_data_hashes(ct, tmp_path, monkeypatch):
    xml = tmp_path / "nbmake.xml"
    xml.write_text(
        JUNIT.replace(
            '<failure message="#x1B[31mValueError#x1B[39m: boom">ValueError: boom</failure>', ""
        )
    )
    book = _book(tmp_path, ("01_a", "x = 1"), ("02_b", "x = 2"))
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.tsv").write_text("x\n")
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(data))
    out = tmp_path / "times.json"
    assert (
        ct.main(
            ["from-junit", str(xml), "--book", str(book), "--profile", "quick", "--out", str(out)]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert record["complete"] and record["problems"] == [] and record["source"].startswith("JUnit")
    assert list(record["provenance"]["data_files"]) == ["SBERT_TUTOR_DATA/a.tsv"]
    assert record["seconds"] == pytest.approx(3.654 + 3.064)


def test_run_times_each_chapter_in_its_own_process(ct, tmp_path, monkeypatch):
    """On a CPU the peak GPU memory is None; a failing chapter is recorded as failed."""
    book = _book(
        tmp_path,
        ("01_a", "%pip install nothing\nimport os\nprint(os.environ['SBERT_TUTOR_PROFILE'])"),
        ("02_b", "raise ValueError('boom')"),
    )
    out = tmp_path / "gpu.json"
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "quick")
    code = ct.main(
        [
            "run",
            "--book",
            str(book),
            "--profile",
            "t4",
            "--out",
            str(out),
            "--allow-incomplete",
            "--timeout",
            "120",
        ]
    )
    assert code == 0
    # the chapters ran under t4; this process (and every notebook pytest runs after it) keeps quick
    assert os.environ["SBERT_TUTOR_PROFILE"] == "quick"
    record = json.loads(out.read_text())
    assert record["profile"] == "t4" and not record["complete"]
    assert record["chapters"]["01_a"]["outcome"] == "passed"
    assert record["chapters"]["01_a"]["peak_memory_gb"] is None
    assert (
        record["chapters"]["02_b"]["outcome"] == "failed"
        and "boom" in record["chapters"]["02_b"]["error"]
    )


def test_ci_records_the_chapter_times_the_time_table_reads(ct):
    import fnmatch

    from sbert_tutor.book import run_times

    task = (REPO / ".ci" / "task").read_text()
    assert "--junitxml=_build/nbmake.xml" in task
    assert "benchmarks/chapter_times.py from-junit _build/nbmake.xml" in task
    assert "_build/nbmake.xml" in (run_times.__doc__ or "")
    # every name --out auto writes is one the table reads
    for profile, gpu in [("quick", None), ("t4", None), ("t4", "Tesla T4")]:
        name = ct._out_path("auto", profile, gpu).name
        assert any(fnmatch.fnmatchcase(name, pattern) for pattern in run_times.RECORDS), name


def test_junit_counts_nbmake_cases_only_appendix_included(ct, tmp_path):
    """Other tests that name a notebook (``[colab/01_a.ipynb]``) are not chapter runs; an
    appendix notebook is one."""
    xml = tmp_path / "n.xml"
    xml.write_text(
        JUNIT.replace(
            '<testcase classname="tests.test_metrics"',
            '<testcase classname="tests.book.test_clean" name="test_x[colab/01_a.ipynb]" '
            'time="9.0" /><testcase classname="book.appendix_running.ipynb" '
            'name="appendix_running.ipynb" time="2.5" /><testcase classname="tests.test_metrics"',
        )
    )
    junit = ct.parse_junit(xml)
    assert sorted(junit) == ["01_a", "02_b", "appendix_running"]
    assert junit["01_a"]["seconds"] == pytest.approx(3.654)
    assert junit["appendix_running"] == {"seconds": 2.5, "outcome": "passed"}


def test_merge_keeps_each_chapters_own_run_and_refuses_mixed_profiles(ct):
    def record(profile, stem, sha, hardware=None):
        return {
            "profile": profile,
            "hardware": hardware,
            "source": "benchmarks/chapter_times.py run",
            "chapters": {stem: {"seconds": 10.0, "outcome": "passed", "peak_memory_gb": None}},
            "provenance": {"git": {"sha": sha}, "timestamp": "t", "command": ["run"]},
        }

    chapters, profile, gpu = ct.merge_records(
        [record("t4", "10_a", "aaa"), record("t4", "11_b", "bbb"), record("t4", "10_a", "ccc")]
    )
    assert (profile, gpu, sorted(chapters)) == ("t4", None, ["10_a", "11_b"])
    assert chapters["10_a"]["run"]["git"] == {"sha": "ccc"}  # the last run of a chapter wins
    assert chapters["11_b"]["run"]["git"] == {"sha": "bbb"}
    with pytest.raises(SystemExit, match="one profile"):
        ct.merge_records([record("t4", "10_a", "a"), record("quick", "11_b", "b")])
    with pytest.raises(SystemExit, match="one GPU"):
        ct.merge_records([record("t4", "10_a", "a"), record("t4", "11_b", "b", "Tesla T4")])
    other = record("t4", "11_b", "b")
    other["provenance"]["hardware"] = {"cpu_model": "another CPU", "cpu_count": 2}
    with pytest.raises(SystemExit, match="different machines"):
        ct.merge_records([record("t4", "10_a", "a"), other])
    # one model name, different instruction sets: two machines too
    one, two = record("t4", "10_a", "a"), record("t4", "11_b", "b")
    one["provenance"]["hardware"] = {"cpu_model": "AMD EPYC", "cpu_isa": ["avx2", "avx512_bf16"]}
    two["provenance"]["hardware"] = {"cpu_model": "AMD EPYC", "cpu_isa": ["avx2"]}
    with pytest.raises(SystemExit, match="different machines"):
        ct.merge_records([one, two])


def test_a_stand_in_is_served_beside_the_models_already_there(ct, tmp_path, monkeypatch):
    real = tmp_path / "real"
    (real / "sentence-transformers" / "all-MiniLM-L6-v2").mkdir(parents=True)
    (real / "nreimers" / "other-model").mkdir(parents=True)
    monkeypatch.setenv("SBERT_TUTOR_MODELS", str(real))
    served = tmp_path / "served"
    stand_in = (
        f"nreimers/MiniLM-L6-H384-uncased={real / 'sentence-transformers' / 'all-MiniLM-L6-v2'}"
    )
    env = ct._stand_ins([stand_in], served)
    assert env == {"SBERT_TUTOR_MODELS": str(served)}
    assert (served / "nreimers" / "MiniLM-L6-H384-uncased").resolve() == (
        real / "sentence-transformers" / "all-MiniLM-L6-v2"
    ).resolve()
    assert (served / "nreimers" / "other-model").is_dir()  # the shared org keeps its models
    assert (served / "sentence-transformers" / "all-MiniLM-L6-v2").is_dir()
    assert ct._stand_ins([], tmp_path / "none") == {}
    with pytest.raises(SystemExit, match="NAME=FOLDER"):
        ct._stand_ins(["x=/no/such/folder"], served)


def test_tree_git_names_the_tree_whose_chapters_ran(ct, tmp_path):
    import subprocess

    assert ct.tree_git(tmp_path) == {"sha": None, "dirty": None}  # not a repository
    run = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (tmp_path / "f").write_text("x")
    run("add", "f")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True
    ).stdout.strip()
    assert ct.tree_git(tmp_path) == {"sha": sha, "dirty": False}
    (tmp_path / "f").write_text("y")
    assert ct.tree_git(tmp_path)["dirty"] is True


def test_merge_refuses_a_profile_the_records_do_not_have(ct, tmp_path):
    part = {
        "profile": "t4",
        "hardware": None,
        "source": "run",
        "chapters": {"01_a": {"seconds": 1.0, "outcome": "passed"}},
        "provenance": {"git": {"sha": "a"}, "hardware": {"cpu_count": 2}},
    }
    path = tmp_path / "part.json"
    path.write_text(json.dumps(part))
    with pytest.raises(SystemExit, match="records are of the t4 profile"):
        ct.main(["merge", str(path), "--profile", "quick", "--out", str(tmp_path / "out.json")])
    assert not (tmp_path / "out.json").exists()
