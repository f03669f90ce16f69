"""How chapters report training results: our measured numbers beside published ones, labelled.

Every row says what it is: ``this run (quick profile, CPU, ...)`` for numbers computed at build
time, ``published: <paper, table>`` for numbers copied from a paper. A quick-profile number is never
presented as a reproduction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd


def measured_label(profile: Any, hardware: str | None = None) -> str:
    """``"this run (quick profile: CPU, small subsets; not a reproduction)"`` or ``"this run (full profile)"``."""
    from sbert_tutor.provenance import hardware_label

    where = hardware or hardware_label()
    if getattr(profile, "is_quick", True):
        return f"this run (quick profile, {where}; small subsets, not a reproduction)"
    return f"this run (full profile, {where})"


def measured_vs_published(
    measured: Sequence[Mapping[str, Any]],
    published: Sequence[Mapping[str, Any]] = (),
    profile: Any = None,
) -> pd.DataFrame:
    """One table: ``setup``, ``metric``, ``value``, ``kind`` (this run / published: source).

    Args:
        measured: rows ``{"setup": ..., "metric": ..., "value": ...}`` computed by this run.
        published: rows with the same keys plus ``"source"`` (paper and table).
        profile: the :class:`~sbert_tutor.profiles.Profile` the measured rows come from.
    """
    if profile is None:
        from sbert_tutor.profiles import get_profile

        profile = get_profile()
    label = measured_label(profile)
    rows = [{**row, "kind": label} for row in measured]
    for row in published:
        if "source" not in row:
            raise ValueError(f"a published number needs its source: {dict(row)}")
        rows.append(
            {k: v for k, v in row.items() if k != "source"}
            | {"kind": f"published: {row['source']}"}
        )
    frame = pd.DataFrame(rows, columns=["setup", "metric", "value", "kind"])
    frame.attrs["profile"] = getattr(profile, "name", None)
    return frame


def plot_loss_curves(records: Mapping[str, Any], ax=None, window: int = 10):
    """Training loss (moving average over ``window`` steps) per named run."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for name, record in records.items():
        steps = record.steps_frame()
        ax.plot(steps["step"], steps["loss"], alpha=0.25)
        ax.plot(
            steps["step"], record.smoothed_loss(window), label=name, color=ax.lines[-1].get_color()
        )
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(f"training loss (moving average over {window} steps)")
    ax.legend(fontsize=8)
    return ax


def provenance_table(runs: Mapping[str, Any]) -> pd.DataFrame:
    """The key provenance fields of each run's ``log["provenance"]``, one column a run.

    ``runs`` maps names to :class:`~sbert_tutor.training.recipe.TrainRun` objects or to their
    ``log`` dicts.
    """
    rows = {}
    for name, run in runs.items():
        log = run.log if hasattr(run, "log") else run
        prov = log["provenance"]
        git = prov.get("git", {})
        hw = prov.get("hardware", {})
        model = prov.get("model") or {}
        rows[name] = {
            "git commit": str(git.get("sha", ""))[:12] + (" (dirty)" if git.get("dirty") else ""),
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
