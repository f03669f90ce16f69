r"""The GPU figures of chapter 13, from recorded runs (the book itself is built on a CPU).

A GPU run of ``bash benchmarks/gpu_run.sh`` writes ``benchmarks/results/encode_gpu_<gpu>.json``
(``benchmarks/encode.py --preset gpu``) and ``train_step_gpu_<loss>_<gpu>.json``
(``benchmarks/train_step.py --device cuda``), each with its provenance (git commit, GPU,
packages, data hashes, command). :func:`gpu_run_report` turns whatever is recorded into tables,
figures and a note on how they were made; when nothing is recorded it says that the GPU figures
are unmeasured and gives the command that measures them.

What the chapter shows from a run, in the chapter's notation (a batch :math:`B` of inputs with
:math:`\ell_i` tokens, padded to width :math:`W`):

* **padding waste**, :math:`1 - \sum_i \ell_i / (|B|\, W)` over all batches, with and without
  width bucketing (:func:`padding_waste` computes it at build time from token counts alone);
* **the per-shape cost**: the *first* pass in a fresh process against the warm median, per
  compute dtype, with bucketing and cuDNN attention on and off;
* **mixed precision**: warm sentences/s in fp32, fp16 and bf16 and the largest embedding
  difference from fp32;
* **host-bound vs forward-only**: end-to-end sentences/s over the forward-only bound (the same
  batches already on the GPU).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.batching import bucket_width

#: What records the GPU figures, run in the project root on a machine with an NVIDIA GPU.
GPU_RUN_COMMAND = "bash benchmarks/gpu_run.sh"
RESULTS_FOLDER = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def token_counts(encoder: Any, sentences: Sequence[str]) -> np.ndarray:
    """Token count of each sentence as ``encoder`` tokenises it (special tokens included, cut to
    its ``max_seq_length``)."""
    ids, _ = encoder.token_ids(list(sentences))
    return np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))


def padding_waste(
    token_lengths: Sequence[int] | np.ndarray,
    batch_size: int,
    buckets: Sequence[int | None] = (None, 32),
    sort: bool = True,
) -> pd.DataFrame:
    r"""Share of padded token positions, :math:`1 - \sum_i \ell_i / \sum_B |B|\,W_B`, per
    bucketing (``None``: pad to the longest row; ``32``: round widths up to a multiple of 32),
    for batches cut in input order and, with ``sort``, after sorting by length (smart batching).

    Columns: ``order``, ``bucket``, ``real tokens``, ``padded positions``, ``padding share``,
    ``distinct widths`` (how many batch shapes the model sees).
    """
    lengths = np.asarray(token_lengths, dtype=np.int64)
    if lengths.size == 0 or batch_size < 1:
        raise ValueError("padding_waste needs token lengths and a batch size >= 1")
    orders = {"input order": lengths}
    if sort:
        orders["sorted by length"] = np.sort(lengths, kind="stable")[::-1]
    rows = []
    for order, seq in orders.items():
        for bucket in buckets:
            widths = [
                bucket_width(int(seq[s : s + batch_size].max()), bucket)
                for s in range(0, len(seq), batch_size)
            ]
            sizes = [len(seq[s : s + batch_size]) for s in range(0, len(seq), batch_size)]
            positions = int(sum(w * b for w, b in zip(widths, sizes, strict=True)))
            rows.append(
                {
                    "order": order,
                    "bucket": "longest row" if bucket is None else f"multiple of {bucket}",
                    "real tokens": int(lengths.sum()),
                    "padded positions": positions,
                    "padding share": 1.0 - float(lengths.sum()) / positions,
                    "distinct widths": len(set(widths)),
                }
            )
    return pd.DataFrame(rows)


def recorded_gpu_runs(folder: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The recorded GPU results in ``folder`` (default ``benchmarks/results``): file stem ->
    parsed JSON, for ``encode_gpu_*.json`` and ``train_step_gpu_*.json``; empty when none."""
    base = Path(folder) if folder is not None else RESULTS_FOLDER
    found: dict[str, dict[str, Any]] = {}
    for pattern in ("encode_gpu_*.json", "train_step_gpu_*.json"):
        for path in sorted(base.glob(pattern)):
            found[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    return found


def how_recorded(record: Mapping[str, Any]) -> pd.Series:
    """Provenance of one recorded run: git commit, GPU, packages, timestamp, command."""
    prov = record.get("provenance", {})
    git, hw, pk = prov.get("git", {}), prov.get("hardware", {}), prov.get("packages", {})
    return pd.Series(
        {
            "git commit": str(git.get("sha", ""))[:12] + (" (dirty)" if git.get("dirty") else ""),
            "GPU": record.get("gpu") or hw.get("gpu") or hw.get("device"),
            "packages": ", ".join(
                f"{k} {pk[k]}"
                for k in ("torch", "transformers", "sentence-transformers")
                if k in pk
            ),
            "timestamp": prov.get("timestamp"),
            "command": " ".join(prov.get("command", [])),
        },
        name=record.get("benchmark"),
    )


def encode_table(record: Mapping[str, Any]) -> pd.DataFrame:
    """One row per (set, batch size, dtype): first pass and warm sentences/s (ours and
    sentence-transformers'), the forward-only bound, end-to-end / forward-only, padding share
    and the largest difference from fp32."""
    firsts = {(r["set"], r["batch_size"], r["dtype"]): r for r in record.get("first_pass", [])}
    rows = []
    for r in record.get("results", []):
        first = firsts.get((r["set"], r["batch_size"], r["dtype"]), {})
        rows.append(
            {
                "set": r["set"],
                "batch size": r["batch_size"],
                "dtype": r["dtype"],
                "first pass": first.get("ours_sps"),
                "first pass, sentence-transformers": first.get("st_sps"),
                "warm": r.get("warm_sps"),
                "warm, sentence-transformers": r.get("st_warm_sps"),
                "forward only": r.get("forward_only_sps"),
                "end-to-end / forward-only": r.get("end_to_end_vs_forward_only"),
                "padding share": 1.0 - r["real_tokens"] / r["padded_tokens"]
                if r.get("padded_tokens")
                else None,
                "max |x - fp32|": r.get("max_abs_diff_vs_fp32"),
            }
        )
    return pd.DataFrame(rows).set_index(["set", "batch size", "dtype"])


def bucketing_table(record: Mapping[str, Any]) -> pd.DataFrame | None:
    """First bf16 pass (sentences/s) by bucketing and cuDNN attention, or ``None`` if the run
    did not diagnose."""
    diagnosis = record.get("diagnosis") or []
    if not diagnosis:
        return None
    table = pd.DataFrame(diagnosis)
    diagnosis_buckets = [r.get("bucket") for r in diagnosis]
    table["bucket"] = [
        "off" if b is None or pd.isna(b) else f"multiple of {int(b)}" for b in diagnosis_buckets
    ]
    return table.pivot_table(
        index=["set", "batch_size", "bucket"], columns="cudnn", values="sentences_per_s"
    )


def train_table(record: Mapping[str, Any]) -> pd.DataFrame:
    """One row per (model, batch size, amp): seconds, steps/s, the precision used, STSb."""
    rows = []
    for r in record.get("runs", []):
        ours = r["ours"]
        precision = ours.get("precision") or {}
        rows.append(
            {
                "model": r["model"],
                "batch size": r["batch_size"],
                "amp": r["amp"],
                "ran in": precision.get("amp"),
                "seconds": ours["seconds"],
                "steps/s": ours["steps_per_s"],
                "STSb test Spearman": ours.get("stsb_test_spearman"),
            }
        )
    return pd.DataFrame(rows).set_index(["model", "batch size", "amp"])


def criteria_table(records: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Issue 15's checks from every recorded run: value, bar, pass."""
    rows = [
        {"run": name, **check}
        for name, record in records.items()
        for check in record.get("criteria", [])
    ]
    return pd.DataFrame(rows)


@dataclass
class GPURunReport:
    """What chapter 13 shows of the recorded GPU runs (or that there are none)."""

    runs: dict[str, dict[str, Any]]
    note: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return bool(self.runs)

    def show(self) -> None:
        """Print the note and display every table (in a notebook)."""
        from IPython.display import display

        print(self.note)
        for name, table in self.tables.items():
            print(f"\n{name}:")
            display(table.round(4))

    def plot(self):
        """Warm and first-pass sentences/s per dtype, and end-to-end vs forward-only, for each
        recorded encode run; ``None`` when none is recorded."""
        encodes = {k: v for k, v in self.runs.items() if k.startswith("encode_gpu")}
        if not encodes:
            return None
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(len(encodes), 2, figsize=(11, 3.6 * len(encodes)), squeeze=False)
        for row, record in enumerate(encodes.values()):
            table = encode_table(record).reset_index()
            table["config"] = (
                table["set"] + ", b" + table["batch size"].astype(str) + ", " + table["dtype"]
            )
            table.plot.barh(x="config", y=["first pass", "warm", "forward only"], ax=axes[row][0])
            axes[row][0].set_xlabel("sentences/s")
            axes[row][0].set_title(f"{record.get('gpu')}: first pass, warm, forward-only")
            table.plot.barh(x="config", y="end-to-end / forward-only", ax=axes[row][1])
            axes[row][1].axvline(0.6, color="grey", linestyle="--")
            axes[row][1].set_title("end-to-end / forward-only (bar: 0.6)")
            stamp = how_recorded(record)
            fig.text(
                0.01,
                1 - (row + 1) / len(encodes) + 0.005,
                f"recorded: {stamp['git commit']}, {stamp['timestamp']}",
                fontsize=7,
            )
        fig.tight_layout()
        return fig


def gpu_run_report(folder: str | Path | None = None) -> GPURunReport:
    """Tables and a provenance note from the recorded GPU runs, or a note saying they are
    unmeasured and how to measure them."""
    runs = recorded_gpu_runs(folder)
    if not runs:
        return GPURunReport(
            runs={},
            note=(
                "No GPU run is recorded: every GPU figure of this section is unmeasured. On a "
                f"machine with an NVIDIA GPU, `{GPU_RUN_COMMAND}` in the project root measures "
                "them (encode: first pass, warm median, forward-only bound and "
                "sentence-transformers in fp32/fp16/bf16; one STSb epoch per training "
                "precision) and writes benchmarks/results/encode_gpu_<gpu>.json and "
                "train_step_gpu_cosine_<gpu>.json, which this section then shows."
            ),
        )
    tables: dict[str, pd.DataFrame] = {}
    notes = []
    for name, record in runs.items():
        how = how_recorded(record)
        notes.append(
            f"{name}: {how['GPU']}, commit {how['git commit']}, {how['timestamp']}; "
            f"{how['packages']}; command: {how['command']}"
        )
        if name.startswith("encode_gpu"):
            tables[f"{name}: sentences/s"] = encode_table(record)
            bucketing = bucketing_table(record)
            if bucketing is not None:
                tables[f"{name}: first bf16 pass by bucketing and cuDNN attention"] = bucketing
        else:
            tables[f"{name}: one epoch per precision"] = train_table(record)
    checks = criteria_table(runs)
    if not checks.empty:
        tables["issue 15's checks"] = checks
    return GPURunReport(runs=runs, note="Recorded GPU runs:\n" + "\n".join(notes), tables=tables)
