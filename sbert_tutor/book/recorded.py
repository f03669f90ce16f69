"""Recorded runs: results files written by the benchmark scripts and the CLI, and how each was made.

A run too long to repeat at every build (a GPU benchmark, the seven SentEval tasks) is recorded
once as JSON with its provenance (git commit, hardware, packages, data hashes, profile, command;
:func:`sbert_tutor.provenance.provenance`). The chapters read those files from
:data:`RESULTS_FOLDER` and print :func:`how_recorded` beside every number they take from one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sbert_tutor.provenance import commit_label

#: Where the benchmark scripts' JSON results are recorded in the repository.
RESULTS_FOLDER: Path = Path(__file__).resolve().parents[2] / "benchmarks" / "results"

#: Packages whose versions :func:`how_recorded` lists.
KEY_PACKAGES = ("torch", "transformers", "sentence-transformers")
#: Profile names of older records, as :func:`how_recorded` shows them.
RETIRED_PROFILES = {
    "full": "full (a retired profile name: a run on all the data, recorded before the "
    "profiles were quick, t4 and paper)",
}


def recorded_results(name: str, folder: str | Path | None = None) -> dict[str, Any] | None:
    """The results JSON ``<folder>/<name>.json`` (default :data:`RESULTS_FOLDER`), or ``None``
    when it was never recorded."""
    path = Path(folder if folder is not None else RESULTS_FOLDER) / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def recorded_matching(
    patterns: Sequence[str], folder: str | Path | None = None
) -> dict[str, dict[str, Any]]:
    """Every results JSON in ``folder`` (default :data:`RESULTS_FOLDER`) whose name matches one
    of the glob ``patterns``: file stem -> parsed JSON, in pattern order; empty when none."""
    base = Path(folder if folder is not None else RESULTS_FOLDER)
    found: dict[str, dict[str, Any]] = {}
    for pattern in patterns:
        for path in sorted(base.glob(pattern)):
            found[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    return found


def hardware_text(hardware: Mapping[str, Any], gpu: str | None = None) -> str:
    """The hardware of a run in words: the GPU when there was one, else device, cores, threads."""
    if gpu or hardware.get("gpu"):
        return str(gpu or hardware.get("gpu"))
    return (
        f"{hardware.get('device')}, {hardware.get('cpu_count')} cores, "
        f"{hardware.get('torch_threads')} torch threads"
    )


def how_recorded(record: Mapping[str, Any]) -> pd.Series:
    """How a recorded run was made: git commit, hardware, packages, profile, data files (sha256),
    seconds, timestamp and command, each row only where the record has it. Named after the
    record's model or benchmark."""
    prov = record.get("provenance", {})
    packages = prov.get("packages", {})
    files = prov.get("data_files", {})
    rows = {
        "git commit": commit_label(prov),
        "hardware": hardware_text(prov.get("hardware", {}), record.get("gpu")),
        "packages": ", ".join(f"{k} {packages[k]}" for k in KEY_PACKAGES if k in packages),
        "profile": RETIRED_PROFILES.get(prov.get("profile"), prov.get("profile")),
        "data files (sha256)": f"{len(files)} files, e.g. "
        + "; ".join(f"{p.rsplit('/', 1)[-1]}: {d[:12]}" for p, d in list(files.items())[:2])
        if files
        else None,
        "seconds": round(float(record["seconds"]), 1) if "seconds" in record else None,
        "timestamp": prov.get("timestamp"),
        "command": " ".join(prov.get("command", [])),
    }
    return pd.Series(
        {k: v for k, v in rows.items() if v not in (None, "")},
        name=record.get("model") or record.get("benchmark"),
    )
