"""The recorded runs the chapters read ship with the package: read from an installed wheel.

Chapters 11a and 13 (and the appendix's time table) read ``sbert_tutor/book/results/*.json``. On Colab the
library is pip-installed, with no source checkout beside it, so those files must be package
data. This builds the wheel, installs it into a folder of its own (no dependencies: the test's
environment has them), and reads records from there in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sbert_tutor.book import recorded

REPO = Path(__file__).resolve().parents[2]
#: What the chapters read: the files must be in the package and in the wheel.
READ_BY_CHAPTERS = (
    "transfer_minilm_cpu",  # chapter 11a
    "transfer_minilm_senteval_reference",  # chapter 11a
    "encode_cpu_2threads",  # chapter 13
)


def test_the_chapters_records_are_in_the_package_folder():
    folder = recorded.results_folder()
    for name in READ_BY_CHAPTERS:
        assert folder.joinpath(f"{name}.json").is_file(), name
        assert recorded.recorded_results(name)["provenance"]
    # the benchmark scripts write where it reads: the package's own results folder
    assert Path(str(folder)) == REPO / "sbert_tutor" / "book" / "results"
    assert not (REPO / "benchmarks" / "results").exists()  # one home, no second copy


def test_recorded_matching_reads_a_traversable(tmp_path):
    (tmp_path / "encode_gpu_t4.json").write_text(json.dumps({"a": 1}))
    (tmp_path / "encode_gpu_h100.json").write_text(json.dumps({"a": 2}))
    (tmp_path / "other.json").write_text("{}")
    found = recorded.recorded_matching(["encode_gpu_*.json"], tmp_path)
    assert list(found) == ["encode_gpu_h100", "encode_gpu_t4"]
    assert recorded.recorded_matching(["x*.json"], tmp_path / "absent") == {}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel ``pip wheel --no-deps`` builds from this checkout, installed into a folder."""
    import shutil

    source = tmp_path_factory.mktemp("source") / "sbert-tutor"  # setuptools writes build/ there
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(".git", ".venv", "_build", "build", "*.egg-info", ".gpu"),
    )
    build = tmp_path_factory.mktemp("wheel")
    target = tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    env = {**os.environ, "PIP_NO_INPUT": "1"}
    made = None
    # build isolation fetches the build backend pyproject.toml names (from the registry); the
    # environment's own setuptools is the fallback
    for isolation in ([], ["--no-build-isolation"]):
        made = subprocess.run(
            [*pip, "wheel", "--no-deps", *isolation, "-w", str(build), str(source)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        if made.returncode == 0:
            break
    assert made.returncode == 0, f"could not build the wheel: {made.stderr[-1500:]}"
    wheel = next(build.glob("sbert_tutor-*.whl"))
    done = subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return wheel, target


def test_the_wheel_ships_the_records_and_they_load_when_installed(installed, tmp_path):
    import zipfile

    wheel, target = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in READ_BY_CHAPTERS:
        assert f"sbert_tutor/book/results/{name}.json" in names
    script = (
        "import json, sbert_tutor\n"
        "from sbert_tutor.book.recorded import recorded_results, recorded_matching, how_recorded\n"
        "from sbert_tutor.book.chapters.transfer_tasks import RECORDED_RUN\n"
        "ours = recorded_results(RECORDED_RUN)\n"
        "print(json.dumps({'file': sbert_tutor.__file__, 'model': ours['model'],\n"
        "  'commit': how_recorded(ours)['git commit'],\n"
        "  'cpu': sorted(recorded_matching(['encode_cpu_*.json']))}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,  # not the checkout: only the installed copy is importable by path
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(seen["file"]).resolve().is_relative_to(target.resolve())
    assert seen["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert seen["commit"] and seen["cpu"] == ["encode_cpu_2threads"]
