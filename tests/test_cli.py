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
