"""benchmarks/senteval_reference.py --merge: runs of a few SentEval tasks each become one record in
which every task keeps the run that made it and every run keeps its provenance; runs of another
evaluation are refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.scripts import load_script

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ref():
    return load_script("benchmarks/senteval_reference.py")


def _run(root: str, results: dict, sha: str) -> dict:
    return {
        "model": "m",
        "engine": "SentEval",
        "config": {"kfold": 10, "seed": 1111},
        "senteval_commit": "c0ffee",
        "results": results,
        "provenance": {
            "git": {"sha": sha},
            "data_files": {
                f"{root}/senteval/MR/rt-polarity.pos": "aa",
                f"{root}/senteval/CR/x": "bb",
            },
        },
    }


def test_tasks_keep_their_run_and_runs_their_provenance(ref, tmp_path):
    a = _run("/one/data", {"CR": {"acc": 81.0, "seconds": 10.0}}, "sha-a")
    b = _run("/other/place", {"MR": {"acc": 76.0, "seconds": 20.0}}, "sha-b")
    paths = []
    for name, record in (("a", a), ("b", b)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(record))
    out = tmp_path / "merged.json"
    assert ref.main(["--merge", *map(str, paths), "--json", str(out)]) == 0
    merged = json.loads(out.read_text())
    # SentEval's task order (MR before CR), not the order of the files
    assert list(merged["results"]) == ["MR", "CR"]
    assert merged["results"]["MR"] == {"acc": 76.0, "seconds": 20.0, "run": 1}
    assert merged["results"]["CR"] == {"acc": 81.0, "seconds": 10.0, "run": 0}
    assert [r["tasks"] for r in merged["runs"]] == [["CR"], ["MR"]]
    assert [r["provenance"]["git"]["sha"] for r in merged["runs"]] == ["sha-a", "sha-b"]
    assert merged["model"] == "m" and merged["config"] == a["config"]
    # the record says how it was put together
    assert merged["provenance"]["merged_from"] == ["a.json", "b.json"]
    assert merged["provenance"]["command"][-3:] == [str(paths[1]), "--json", str(out)]


def test_refuses_runs_of_another_evaluation(ref):
    a = _run("/d", {"CR": {"acc": 81.0}}, "a")
    other_config = copy.deepcopy(a)
    other_config["config"]["kfold"] = 5
    other_config["results"] = {"MR": {"acc": 1.0}}
    with pytest.raises(ValueError, match="'config'"):
        ref.merge_runs([a, other_config])
    other_data = _run("/d", {"MR": {"acc": 1.0}}, "b")
    other_data["provenance"]["data_files"]["/d/senteval/CR/x"] = "changed"
    with pytest.raises(ValueError, match="other data than run 0: CR/x"):
        ref.merge_runs([a, other_data])
    with pytest.raises(ValueError, match="task CR is in run 0 and run 1"):
        ref.merge_runs([a, _run("/d", {"CR": {"acc": 80.0}}, "c")])
    with pytest.raises(ValueError, match="at least two"):
        ref.merge_runs([a])


def test_merge_needs_an_output(ref, tmp_path, capsys):
    with pytest.raises(SystemExit):
        ref.main(["--merge", "a.json", "b.json"])
    assert "--json" in capsys.readouterr().err
