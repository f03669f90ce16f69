r"""Chapter 12a, training a retriever: the recorded baselines and memory runs the chapter shows.

The chapter's derivations and checks run on the library itself (``cached_mnrl``,
:func:`~sbert_tutor.hard_negatives.mine_hard_negatives`, :func:`~sbert_tutor.losses.margin_mse`,
:func:`~sbert_tutor.fusion.rrf`); this module only reads and draws what was recorded:

* :func:`baseline_tables` and :func:`baselines_sentence`: the BM25 / dense / hybrid baselines
  and BM25's agreement with Anserini (``results/bm25_baselines_cpu.json``, written by
  ``benchmarks/bm25_baselines.py``), with whatever rows the record has;
* :func:`memory_rows` and :func:`plot_memory`: the step memory of ``mnrl`` against
  ``cached_mnrl`` (``results/cached_mnrl_memory_*.json``, ``benchmarks/cached_mnrl_memory.py``),
  one row per recorded file, batch size and variant, CPU and GPU records alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.recorded import hardware_text

#: The recorded baselines (``benchmarks/bm25_baselines.py``).
BASELINES_RECORD = "bm25_baselines_cpu"
#: The recorded memory runs: CPU (resident set) and GPU (allocated memory) files.
MEMORY_RECORDS = ("cached_mnrl_memory_cpu_*.json", "cached_mnrl_memory_gpu_*.json")
MEMORY_COMMAND = "python benchmarks/cached_mnrl_memory.py --batch-size 256 --json <file>"
#: How the retrieval runs are named in the record, and in the chapter's table.
METHOD_NAMES = {"bm25": "BM25", "dense": "dense", "hybrid_rrf": "hybrid (RRF)"}
#: The measures of the baselines table, in order.
MEASURES = ("mrr@10", "ndcg@10", "recall@100")
#: Keys a memory record may give a variant's step memory under, most specific first: the CPU
#: script's resident-set growth, then a GPU run's peak allocation above the loaded model.
_STEP_MEMORY_KEYS = (
    "peak_minus_before_bytes",
    "peak_allocated_minus_before_bytes",
    "peak_allocated_bytes",
)


def baseline_tables(record: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two tables of a baselines record: BM25's agreement with Anserini's top-:math:`k`
    (one row per depth: mean overlap, queries whose top-:math:`k` is identical, queries) and the
    retrieval measures, one row per (data set, method) that the record has."""
    agreement = record.get("anserini_agreement", {})
    overlap = pd.DataFrame(
        [
            {
                "depth": key.split("@", 1)[1],
                "mean overlap": value["mean"],
                "queries identical": value["queries_identical"],
                "queries": value["queries"],
            }
            for key, value in agreement.items()
            if key.startswith("overlap@") and isinstance(value, Mapping)
        ]
    )
    if len(overlap):
        overlap = overlap.set_index("depth")
    rows = []
    for data, methods in record.get("retrieval", {}).items():
        for method, scores in methods.items():
            if not isinstance(scores, Mapping):
                continue  # the query count
            rows.append(
                {
                    "data": data,
                    "queries": methods.get("queries"),
                    "method": METHOD_NAMES.get(method, method),
                    **{m: scores.get(m) for m in MEASURES},
                }
            )
    measures = pd.DataFrame(rows)
    if len(measures):
        measures = measures.set_index(["data", "method"])
    return overlap, measures


def baselines_sentence(record: Mapping[str, Any]) -> str:
    """What the baselines record shows, in words: the agreement with Anserini, which methods
    were run, and, where a dense run is recorded, whether it beats BM25 on each data set."""
    overlap, measures = baseline_tables(record)
    parts = []
    if "20" in overlap.index:
        row = overlap.loc["20"]
        parts.append(
            f"our BM25 shares {row['mean overlap']:.1%} of Anserini's top 20 passages on "
            f"average, and returns exactly Anserini's top 20 for "
            f"{int(row['queries identical']):,} of {int(row['queries']):,} queries"
        )
    methods = (
        list(dict.fromkeys(measures.index.get_level_values("method"))) if len(measures) else []
    )
    if not methods:
        parts.append("no retrieval run is recorded")
    elif methods == ["BM25"]:
        parts.append(
            "only BM25 is recorded so far: the dense and hybrid rows appear once a run with "
            "the dense model is recorded"
        )
    else:
        for data in dict.fromkeys(measures.index.get_level_values("data")):
            table = measures.loc[data]
            if "BM25" not in table.index:
                continue
            best = table["ndcg@10"].idxmax()
            others = ", ".join(
                f"{m} {table.loc[m, 'ndcg@10']:.3f}" for m in table.index if m != best
            )
            parts.append(
                f"on {data} the best nDCG@10 is {best}'s, {table.loc[best, 'ndcg@10']:.3f} "
                f"({others})"
            )
    return "; ".join(parts) + "."


def _runs(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The runs of a memory record: a list under ``runs`` (one per batch size), or the record
    itself (one batch size, as ``benchmarks/cached_mnrl_memory.py`` writes it)."""
    runs = record.get("runs")
    return list(runs) if isinstance(runs, list) else [record]


def memory_rows(records: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per recorded file, batch size and variant: the memory one training step needed
    above the loaded model (MiB), its seconds and loss, and the hardware.

    ``records`` is file stem -> parsed JSON (:func:`~sbert_tutor.book.recorded.recorded_matching`
    of :data:`MEMORY_RECORDS`). A record may hold one batch size (``batch_size`` and
    ``results``) or several (a list ``runs`` of such entries); a variant that failed (an
    ``error``, e.g. out of memory) is kept with its error and no number.
    """
    rows = []
    for stem, record in records.items():
        hardware = hardware_text(
            record.get("provenance", {}).get("hardware", {}), record.get("gpu")
        )
        for run in _runs(record):
            for variant, result in run.get("results", {}).items():
                key = next((k for k in _STEP_MEMORY_KEYS if k in result), None)
                rows.append(
                    {
                        "record": stem,
                        "device": "GPU" if "_gpu_" in stem else "CPU",
                        "batch size": int(result.get("batch_size", run.get("batch_size", 0))),
                        "mini-batch": run.get("mini_batch_size") if variant != "mnrl" else None,
                        "variant": variant,
                        "step memory (MiB)": result[key] / 2**20 if key else None,
                        "step seconds": result.get("step_seconds"),
                        "loss": result.get("loss"),
                        "error": str(result["error"]).strip().splitlines()[-1][:120]
                        if "error" in result
                        else None,
                        "hardware": hardware,
                    }
                )
    columns = ["record", "device", "batch size", "mini-batch", "variant", "step memory (MiB)"]
    columns += ["step seconds", "loss", "error", "hardware"]
    table = pd.DataFrame(rows, columns=columns)
    if table["error"].isna().all():
        table = table.drop(columns="error")
    table["mini-batch"] = table["mini-batch"].astype("Int64")
    order = table["variant"].map({"mnrl": 0}).fillna(1)  # plain MNRL first, then GradCache
    table = table.assign(_order=order).sort_values(
        ["record", "batch size", "_order"], kind="stable"
    )
    return table.drop(columns="_order").reset_index(drop=True)


def plot_memory(rows: pd.DataFrame, ax=None):
    """Step memory against batch size, one line per (record, variant): bars when every record
    has a single batch size, lines with markers when some have several."""
    ax = new_axes(ax, figsize=(7, 3.8))
    measured = rows.dropna(subset=["step memory (MiB)"])
    several = (
        measured.groupby("record")["batch size"].nunique().max() > 1 if len(measured) else False
    )
    if several:
        for (record, variant), group in measured.groupby(["record", "variant"], sort=False):
            ax.plot(
                group["batch size"], group["step memory (MiB)"], marker="o",
                label=f"{variant} ({record})",
            )  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size (pairs)")
    else:
        labels = [
            f"{r['variant']}\n{r['device']}, batch {r['batch size']}"
            for _, r in measured.iterrows()
        ]
        colors = ["tab:red" if v == "mnrl" else "tab:blue" for v in measured["variant"]]
        bars = ax.bar(range(len(measured)), measured["step memory (MiB)"], color=colors)
        ax.bar_label(bars, fmt="%.0f MiB")
        ax.set_xticks(range(len(measured)), labels)
    ax.set_ylabel("memory of one step (MiB)\nabove the loaded model")
    ax.set_title("One training step: MNRL against cached MNRL (GradCache)")
    if several:
        ax.legend(fontsize=8)
    return ax


def memory_sentence(rows: pd.DataFrame) -> str:
    """The memory rows in words: per record and batch size where both variants were measured,
    each variant's step memory, the ratio and the ratio of their step times."""
    parts = []
    for (record, batch), group in rows.groupby(["record", "batch size"], sort=False):
        by = group.dropna(subset=["step memory (MiB)"]).set_index("variant")
        if not {"mnrl", "cached_mnrl"} <= set(by.index):
            failed = ", ".join(group.loc[group["step memory (MiB)"].isna(), "variant"])
            parts.append(f"{record} at batch {batch}: no number for {failed or 'a variant'}")
            continue
        plain, cached = by.loc["mnrl"], by.loc["cached_mnrl"]
        device = "GPU" if plain["device"] == "GPU" else "CPU"
        parts.append(
            f"on the {device} at a batch of {batch:,} pairs, one MNRL step needed "
            f"{plain['step memory (MiB)']:,.0f} MiB above the loaded model and one cached-MNRL "
            f"step, in mini-batches of {int(cached['mini-batch'])} texts, "
            f"{cached['step memory (MiB)']:,.0f} MiB, "
            f"{plain['step memory (MiB)'] / cached['step memory (MiB)']:.1f} times less; "
            f"the cached step took {cached['step seconds'] / plain['step seconds']:.1f} times "
            "as long"
        )
    return "; ".join(parts) if parts else "no memory run is recorded"
