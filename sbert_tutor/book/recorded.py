"""Recorded runs: results files written by the benchmark scripts and the CLI, and how each was made.

A run too long to repeat at every build (a GPU benchmark, the SentEval tasks, the chapters'
times) is recorded once as JSON with its provenance (:func:`sbert_tutor.provenance.provenance`)
in ``sbert_tutor/book/results/``, package data, read through :func:`results_folder` so that a
pip-installed copy (Colab) reads the same files. The chapters print :func:`how_recorded` beside
every number they take from one.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from sbert_tutor.provenance import commit_label

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = [
    "KEY_PACKAGES",
    "RETIRED_PROFILES",
    "hardware_text",
    "how_recorded",
    "recorded_matching",
    "recorded_results",
    "results_folder",
]

#: Packages whose versions :func:`how_recorded` lists.
KEY_PACKAGES = ("torch", "transformers", "sentence-transformers")
#: Profile names of older records, as :func:`how_recorded` shows them.
RETIRED_PROFILES = {
    "full": "full (a retired profile name: a run on all the data, recorded before the "
    "profiles were quick, t4 and paper)",
}


def results_folder() -> Traversable:
    """The recorded results as the installed package has them (a folder in a checkout or an
    installed wheel; any importable location)."""
    return resources.files("sbert_tutor.book").joinpath("results")


def _folder(folder: str | Path | Traversable | None) -> Traversable:
    if folder is None:
        return results_folder()
    return Path(folder) if isinstance(folder, str | Path) else folder


def recorded_results(
    name: str, folder: str | Path | Traversable | None = None
) -> dict[str, Any] | None:
    """The results JSON ``<folder>/<name>.json`` (default: :func:`results_folder`), or ``None``
    when it was never recorded."""
    path = _folder(folder).joinpath(f"{name}.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def recorded_matching(
    patterns: Sequence[str], folder: str | Path | Traversable | None = None
) -> dict[str, dict[str, Any]]:
    """Every results JSON in ``folder`` (default: :func:`results_folder`) whose name matches
    one of the glob ``patterns``: file stem -> parsed JSON, in pattern order (names sorted
    within a pattern); empty when none."""
    base = _folder(folder)
    files = sorted(base.iterdir(), key=lambda f: f.name) if base.is_dir() else []
    found: dict[str, dict[str, Any]] = {}
    for pattern in patterns:
        for path in files:
            if path.is_file() and fnmatch.fnmatchcase(path.name, pattern):
                found[path.name.rsplit(".", 1)[0]] = json.loads(path.read_text(encoding="utf-8"))
    return found


def hardware_text(hardware: Mapping[str, Any], gpu: str | None = None) -> str:
    """The hardware of a run in words: the GPU when there was one, else device, cores, threads,
    and the CPU's model and instruction-set flags where the record has them (runs recorded
    before provenance kept them name only the architecture)."""
    if gpu or hardware.get("gpu"):
        return str(gpu or hardware.get("gpu"))
    text = (
        f"{hardware.get('device')}, {hardware.get('cpu_count')} cores, "
        f"{hardware.get('torch_threads')} torch threads"
    )
    if "cpu_model" not in hardware:
        return f"{text}; {hardware.get('cpu', 'CPU')}, model and instruction sets not recorded"
    isa = ", ".join(hardware.get("cpu_isa") or []) or "none of those listed"
    return f"{text}; {hardware.get('cpu_model') or hardware.get('cpu')} ({isa})"


def how_recorded(record: Mapping[str, Any]) -> pd.Series:
    """How a recorded run was made, named after its model or benchmark: git commit, hardware,
    packages, profile, data files (sha256), seconds, timestamp, command and any corrections
    written into the file after the run, each only where the record has it."""
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
        "corrections": " ".join(record.get("corrections", [])),
    }
    return pd.Series(
        {k: v for k, v in rows.items() if v not in (None, "")},
        name=record.get("model") or record.get("benchmark"),
    )
