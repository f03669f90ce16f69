r"""How chapters report results: measured numbers beside published ones, and how runs were made.

Every row says what it is: ``this run (quick profile, CPU, ...)`` for numbers computed at build
time, ``published: <paper, table>`` for numbers copied from a paper
(:mod:`~sbert_tutor.book.published`); a quick-profile number is never shown as a reproduction.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from sbert_tutor.book.profiles import Profile, get_profile
from sbert_tutor.book.recorded import hardware_text
from sbert_tutor.provenance import commit_label, hardware_label

__all__ = [
    "FoldedProvenance",
    "common_budget",
    "folded_provenance",
    "measured_label",
    "measured_vs_published",
    "provenance_table",
    "run_summary",
]


def measured_label(profile: Profile, hardware: str | None = None) -> str:
    """How this run's numbers are labelled: ``"this run (quick profile, <hardware>; small
    subsets, not a reproduction)"``, ``"this run (t4 profile, <hardware>; not a reproduction)"``
    or ``"this run (paper profile, <hardware>; the papers' setups, deviations listed)"``."""
    where = hardware or hardware_label()
    name = getattr(profile, "name", "quick")
    if name == "paper":
        return f"this run (paper profile, {where}; the papers' setups, deviations listed)"
    if name == "t4":
        return f"this run (t4 profile, {where}; not a reproduction)"
    return f"this run (quick profile, {where}; small subsets, not a reproduction)"


def measured_vs_published(
    measured: Sequence[Mapping[str, Any]],
    published: Sequence[Mapping[str, Any]] = (),
    profile: Profile | None = None,
) -> pd.DataFrame:
    """One table: ``setup``, ``metric``, ``value``, ``kind`` (this run / published: source), from
    ``measured`` rows ``{"setup", "metric", "value"}`` of this run (under ``profile``, default
    the one in use) and ``published`` rows with their ``"source"`` (paper and table) as well."""
    label = measured_label(profile or get_profile())
    rows = [{**row, "kind": label} for row in measured]
    for row in published:
        if "source" not in row:
            raise ValueError(f"a published number needs its source: {dict(row)}")
        rows.append(
            {k: v for k, v in row.items() if k != "source"}
            | {"kind": f"published: {row['source']}"}
        )
    return pd.DataFrame(rows, columns=["setup", "metric", "value", "kind"])


def provenance_table(runs: Mapping[str, Any]) -> pd.DataFrame:
    """The key provenance fields of each run's ``log["provenance"]``, one column a run; ``runs``:
    name -> :class:`~sbert_tutor.training.recipe.TrainRun` or its ``log`` (e.g. the ``logs`` of
    :func:`~sbert_tutor.book.seeds.seeded_variants`)."""
    rows = {}
    for name, run in runs.items():
        log = run.log if hasattr(run, "log") else run
        prov = log["provenance"]
        hw = prov.get("hardware", {})
        model = prov.get("model") or {}
        rows[name] = {
            "git commit": commit_label(prov),
            "profile": prov.get("profile"),
            "hardware": f"{hw.get('device')}, {hw.get('torch_threads')} threads, {hw.get('cpu')}",
            "model": f"{model.get('name')} ({model.get('pooling')} pooling)",
            "seed": prov.get("seed"),
            "data files (sha256)": "; ".join(
                f"{path.rsplit('/', 2)[-2]}/{path.rsplit('/', 1)[-1]}: {digest[:12]}"
                for path, digest in prov.get("data_files", {}).items()
            ),
            "train data": log["train_data"]["source"],
            "timestamp": prov.get("timestamp"),
        }
    return pd.DataFrame(rows)


def _objective_text(settings: Mapping[str, Any]) -> str:
    # {"name": "softmax", "features": ["u", "v"]} -> "softmax (features=u, v)"
    rest = {k: v for k, v in settings.items() if k not in ("name", "label_names")}
    options = "; ".join(
        f"{k}={', '.join(map(str, v)) if isinstance(v, list | tuple) else v}"
        for k, v in rest.items()
    )
    return f"{settings['name']} ({options})" if options else str(settings["name"])


def run_summary(logs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per training log (``TrainRun.log``): what was trained, on what, for how long."""
    rows = []
    for name, log in logs.items():
        config = log["config"]
        rows.append(
            {
                "run": name,
                "start model": (log.get("base_model") or {}).get("name"),
                "objective": _objective_text(log["loss"]),
                "train data": log["train_data"]["source"],
                "examples": log["train_data"]["examples"],
                "steps": log["steps_done"],
                "batch size": config["batch_size"],
                "lr": config["lr"],
                "warm-up steps": log["warmup_steps"],
                "seconds": round(float(log["train_seconds"]), 1),
            }
        )
    return pd.DataFrame(rows).set_index("run")


def common_budget(logs: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """The training budget shared by runs (``TrainRun.log`` dicts): ``{"steps", "batch_size",
    "examples"}``, for prose to quote (glued); ``ValueError`` when there are no logs or they
    differ in steps or batch size."""
    if not logs:
        raise ValueError("common_budget needs at least one training log")
    budgets = {
        name: (int(log["steps_done"]), int(log["config"]["batch_size"]))
        for name, log in logs.items()
    }
    if len(set(budgets.values())) != 1:
        raise ValueError(f"the runs differ in (steps, batch size): {budgets}")
    steps, batch_size = next(iter(budgets.values()))
    return {"steps": steps, "batch_size": batch_size, "examples": steps * batch_size}


class FoldedProvenance:
    """A provenance record as one line (:attr:`line`) with the whole record folded under it: an
    HTML ``<details>`` element in a notebook or on the page, both as text elsewhere."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record = dict(record)

    @property
    def line(self) -> str:
        """Commit, profile, hardware, data files and time of the record (of its first part that
        has a commit, when the record holds several runs' records by name)."""
        record: Mapping[str, Any] = self.record
        parts = [v for v in self.record.values() if isinstance(v, Mapping) and "git" in v]
        if "git" not in record and parts:
            record = parts[0]
        files = record.get("data_files") or record.get("data_sources")
        bits = [
            record.get("git") and f"git {commit_label(record)}",
            record.get("profile") and f"{record['profile']} profile",
            isinstance(record.get("hardware"), Mapping) and hardware_text(record["hardware"]),
            files and f"{len(files)} data file(s) with their sha256",
            record.get("timestamp") and str(record["timestamp"]),
            "git" not in self.record
            and len(parts) > 1
            and f"{len(parts)} records: {', '.join(map(str, self.record))}",
        ]
        return "; ".join(b for b in bits if b)

    def _detail(self) -> str:
        return json.dumps(self.record, indent=1, default=str, ensure_ascii=False)

    def _repr_html_(self) -> str:
        return (
            f"<details><summary>How this was made: {html.escape(self.line)}</summary>"
            f"<pre>{html.escape(self._detail())}</pre></details>"
        )

    def __repr__(self) -> str:
        return f"How this was made: {self.line}\n{self._detail()}"


def folded_provenance(record: Mapping[str, Any]) -> FoldedProvenance:
    """A provenance record (:func:`sbert_tutor.provenance.provenance`, or a few by name) shown as
    one line, the whole record folded under it."""
    return FoldedProvenance(record)
