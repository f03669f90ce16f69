"""One setting says where the project is published; every badge and install cell agrees with it.

The setting: ``sbert_tutor.settings.REPOSITORY_URL`` and ``RELEASE_REF``. ``.ci/sync_publishing.py``
writes cells 1-2 of every chapter, ``pyproject.toml``'s URLs, ``_config.yml``'s repository and
launch buttons, and the README's and front page's install lines from it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import tomllib

from sbert_tutor.settings import RELEASE_REF, REPOSITORY_URL
from tests.scripts import load_script

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((REPO / "book").glob("*.ipynb"))


#: ``.ci/publishing.py``: the badge and install cell every chapter starts with.
publishing = load_script(".ci/publishing.py")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_every_place_agrees_with_the_setting():
    assert len(CHAPTERS) >= 14
    assert load_script(".ci/sync_publishing.py").problems(REPO) == []


def test_the_release_is_the_version_and_the_repository_is_on_github():
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert f"v{version}" == RELEASE_REF
    urls = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Repository"] == urls["Homepage"] == REPOSITORY_URL
    assert publishing.github_repository() == "/".join(REPOSITORY_URL.split("/")[-2:])
    with pytest.raises(ValueError, match="github.com"):
        publishing.github_repository("https://gitlab.com/a/b")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_badge_and_install_name_the_same_release(chapter):
    cells = _cells(chapter)
    badge = "".join(cells[1]["source"])
    install = "".join(cells[2]["source"])
    opened = re.fullmatch(
        r"\[!\[Open in Colab\]\(\S+\)\]\(https://colab\.research\.google\.com/github/"
        r"([\w.-]+/[\w.-]+)/blob/([^/]+)/book/colab/([\w.]+)\)",
        badge,
    )
    assert opened, badge
    installed = re.findall(
        r'%pip install -q "sbert-tutor\[colab\] @ git\+https://github\.com/'
        r'([\w.-]+/[\w.-]+)@([^"]+)"',
        install,
    )
    assert installed == [(opened.group(1), opened.group(2))]  # same repository, same ref
    assert opened.group(2) == RELEASE_REF and opened.group(3) == chapter.name
    assert "hide-cell" in cells[2]["metadata"].get("tags", [])
    # no other cell installs or links elsewhere
    for cell in cells[3:]:
        assert "pip install" not in "".join(cell["source"]), chapter.name


def test_the_install_cell_keeps_torch_and_takes_an_uploaded_wheel_first():
    source = publishing.install_source()
    assert "torch" not in source.split("# to this notebook")[1]  # never names torch to install
    assert "--upgrade" not in source and "-U " not in source and "--force" not in source
    assert source.index('glob.glob("sbert_tutor-*.whl")') < source.index("git+")
    assert '%pip install -q "{wheels[-1]}[colab]"' in source


def test_sync_rewrites_cells_1_and_2_only_and_check_sees_a_stale_badge(tmp_path):
    chapter = tmp_path / CHAPTERS[0].name
    shutil.copy(CHAPTERS[0], chapter)
    assert publishing.check_notebook(chapter) == [] and not publishing.sync_notebook(chapter)
    notebook = json.loads(chapter.read_text())
    notebook["cells"][1]["source"] = [
        notebook["cells"][1]["source"][0].replace(RELEASE_REF, "main")
    ]
    notebook["cells"][2]["source"] = [
        '%pip install -q "sbert-tutor @ git+https://example.org/x@v9"'
    ]
    later = json.dumps(notebook["cells"][3])
    chapter.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    found = publishing.check_notebook(chapter)
    assert any("cell 1" in p for p in found) and any("cell 2" in p for p in found)
    assert publishing.sync_notebook(chapter)
    assert publishing.check_notebook(chapter) == []
    assert json.dumps(_cells(chapter)[3]) == later  # the rest untouched
    assert chapter.read_text() == CHAPTERS[0].read_text()


def test_sync_refuses_a_notebook_of_another_layout(tmp_path):
    chapter = tmp_path / "x.ipynb"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# x"]}] * 3
    chapter.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    with pytest.raises(ValueError, match="not a Colab badge"):
        publishing.sync_notebook(chapter)


def test_the_install_check_reads_torch_from_a_pip_report():
    check = load_script(".ci/check_colab_install.py")
    report = {"install": [{"metadata": {"name": "transformers", "version": "5"}}]}
    assert check.torch_in_report(report) == []
    report["install"].append({"metadata": {"name": "torch", "version": "2.15.0"}})
    assert check.torch_in_report(report) == ["torch==2.15.0"]


def test_conda_takes_torch_from_conda_forge_cpu_build_by_default():
    import yaml

    env = yaml.safe_load((REPO / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]  # the pytorch channel stopped after 2.5
    deps = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "cpuonly" not in deps
    torch = [d for d in deps if d.startswith("pytorch")]
    assert torch == ["pytorch[version='>=2.1',build='cpu*']"]
    text = (REPO / "environment.yml").read_text()
    assert "build='cuda*'" in text and "CONDA_OVERRIDE_CUDA" in text  # how to get the CUDA one
