"""The sbert-tutor CLI: table, JSON layout, and errors that say what to do."""

from __future__ import annotations

import json

import pytest

from sbert_tutor.cli import main
from tests.conftest import MINILM, needs_data


@needs_data
def test_eval_sts_json(tmp_path, capsys):
    out = tmp_path / "out.json"
    assert main(["eval-sts", "--model", MINILM, "--tasks", "stsb,sts13", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "aggregation='all'" in printed and "STSb" in printed and "STS13" in printed
    payload = json.loads(out.read_text())
    assert payload["model"] == MINILM
    stsb, sts13 = payload["results"]["stsb"], payload["results"]["sts13"]
    assert stsb["n"] == 1379 and sts13["n"] == 1500
    assert (
        set(stsb["spearman"]) == {"all", "mean", "wmean"}
        and len(set(stsb["spearman"].values())) == 1
    )
    assert (
        sts13["subsets"]["FNWN"]["n"] == 189
        and sts13["spearman"]["mean"] != sts13["spearman"]["all"]
    )
    assert set(payload["provenance"]) >= {
        "git",
        "packages",
        "hardware",
        "profile",
        "data_files",
        "timestamp",
    }


def test_unknown_task_is_a_clean_error(capsys):
    assert main(["eval-sts", "--model", MINILM, "--tasks", "sts99"]) == 2
    assert "valid names" in capsys.readouterr().err


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "eval-sts" in capsys.readouterr().out


def test_version(capsys):
    from sbert_tutor import __version__

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"sbert-tutor {__version__}"


@pytest.mark.parametrize("command", ["eval-sts", "eval-ir", "train", "mine"])
def test_command_help_shows_defaults_and_examples(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "(default: 64)" in out or "(default: 16)" in out  # --batch-size
    assert "examples:\n  sbert-tutor " + command in out
    assert "(default: None)" not in out


TRAIN = ["train", "--loss", "cosine", "--out", "unused"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval-sts", "--tasks", "stsb,sts1"], "unknown STS task 'sts1'"),
        (["eval-transfer", "--tasks", "cr,mrr"], "unknown transfer task 'mrr'"),
        ([*TRAIN, "--train", "stsbb"], "unknown training set 'stsbb'"),
        ([*TRAIN, "--train", "stsb", "--eval-steps", "5", "--eval-task", "sts"], "'sts'"),
    ],
    ids=["eval-sts", "eval-transfer", "train", "train-eval-task"],
)
def test_name_typo_fails_before_any_model_loads(capsys, args, message):
    # the model does not exist: the error must be about the name, found first
    assert main([*args, "--model", "/no/such/model"]) == 2
    err = capsys.readouterr().err
    assert message in err and "no/such/model" not in err


def test_unknown_pooling_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["eval-sts", "--model", MINILM, "--pooling", "average"])
    assert stop.value.code == 2 and "unknown pooling 'average'" in capsys.readouterr().err


def test_import_is_light_and_dir_lists_the_api():
    import subprocess
    import sys

    code = (
        "import sys, sbert_tutor; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; "
        "print(' '.join(dir(sbert_tutor)))"
    )
    names = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    api = {"SentenceEncoder", "evaluate_sts", "evaluate_transfer", "semantic_search"}
    assert api | {"evaluate_run", "fit", "load_transfer"} <= set(names)


def test_every_exported_name_resolves():
    import sbert_tutor

    assert set(sbert_tutor.__all__) == {*sbert_tutor._EXPORTS, "__version__"}
    for name in sbert_tutor.__all__:
        assert getattr(sbert_tutor, name) is not None, name


def test_wheel_ships_py_typed(tmp_path):
    """PEP 561: the built wheel holds sbert_tutor/py.typed."""
    import shutil
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, src / name)
    shutil.copytree(
        root / "sbert_tutor", src / "sbert_tutor", ignore=shutil.ignore_patterns("__pycache__")
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert "sbert_tutor/py.typed" in zipfile.ZipFile(wheel).namelist()
