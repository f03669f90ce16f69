"""Figures the chapters show. Each function takes computed results and returns the matplotlib axes."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

_SECONDS = {"1 s": 1, "1 min": 60, "1 h": 3600, "1 day": 86400, "1 year": 365 * 86400}


def _axes(ax=None, figsize=(7, 4)):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def plot_cost_curves(table: pd.DataFrame, claim: Mapping[str, float] | None = None, ax=None):
    """Seconds to find the most similar pair vs collection size, log-log (book chapter 2)."""
    ax = _axes(ax)
    ax.loglog(table["n"], table["cross_encoder_s"], "o-", label="cross-encoder (this machine)")
    ax.loglog(table["n"], table["bi_encoder_s"], "s-", label="bi-encoder / SBERT (this machine)")
    for text, seconds in _SECONDS.items():
        ax.axhline(seconds, color="grey", lw=0.5, ls=":")
        ax.text(table["n"].min(), seconds * 1.15, text, color="grey", fontsize=8)
    if claim:
        ax.loglog(
            [claim["n"]],
            [claim["cross_encoder_hours"] * 3600],
            "r*",
            ms=12,
            label="paper: BERT, 65 h (V100)",
        )
        ax.loglog(
            [claim["n"]], [claim["sbert_seconds"]], "g*", ms=12, label="paper: SBERT, 5 s (V100)"
        )
    ax.set_xlabel("number of sentences n")
    ax.set_ylabel("seconds to find the most similar pair")
    ax.legend(fontsize=8)
    return ax


def plot_pooling(table: pd.DataFrame, ax=None):
    """Spearman by pooling mode, anisotropy annotated on each bar (book chapter 3)."""
    ax = _axes(ax, figsize=(5, 3.5))
    bars = ax.bar(table["pooling"], table["spearman"], color=["C0", "C1", "C2"][: len(table)])
    for bar, a in zip(bars, table["anisotropy"], strict=False):
        ax.text(
            bar.get_x() + bar.get_width() / 2,
            bar.get_height() + 0.5,
            f"anisotropy {a:.2f}",
            ha="center",
            fontsize=8,
        )
    ax.set_ylabel("Spearman x100")
    ax.set_ylim(0, max(100, float(table["spearman"].max()) + 10))
    return ax


def plot_cosine_histograms(groups: Mapping[str, np.ndarray], ax=None, bins: int = 40):
    """Overlaid histograms of cosine similarities, one per named group."""
    ax = _axes(ax)
    for name, values in groups.items():
        ax.hist(
            values,
            bins=bins,
            range=(-0.2, 1.0),
            alpha=0.5,
            density=True,
            label=f"{name} (mean {np.mean(values):.2f})",
        )
    ax.set_xlabel("cosine similarity")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    return ax


def plot_sts_tasks(table: pd.DataFrame, published: pd.DataFrame | None = None, ax=None):
    """Our per-task Spearman beside published rows (labelled)."""
    ax = _axes(ax, figsize=(8, 4))
    ours = table[table["task"] != "avg"]
    x = np.arange(len(ours))
    rows = {"this run": ours["spearman"].to_numpy()}
    if published is not None:
        for name, row in published.iterrows():
            rows[f"{name} (published)"] = row[
                [c for c in published.columns if c != "avg"]
            ].to_numpy(dtype=float)
    width = 0.8 / len(rows)
    for k, (name, values) in enumerate(rows.items()):
        ax.bar(x + k * width - 0.4 + width / 2, values, width, label=name)
    ax.set_xticks(x, ours["task"])
    ax.set_ylabel("Spearman x100")
    ax.legend(fontsize=8)
    return ax


def plot_similarity_matrix(matrix: np.ndarray, labels: list[str], ax=None):
    """A heatmap of pairwise cosine similarities with the sentences as labels."""
    ax = _axes(ax, figsize=(6, 5))
    image = ax.imshow(matrix, vmin=-0.1, vmax=1.0, cmap="viridis")
    short = [s if len(s) <= 40 else s[:37] + "..." for s in labels]
    ax.set_xticks(range(len(labels)), short, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), short, fontsize=8)
    for i in range(len(labels)):
        for j in range(len(labels)):
            ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7, color="w")
    ax.figure.colorbar(image, ax=ax, label="cosine")
    return ax


def plot_metrics_vs_k(
    table: pd.DataFrame, metrics: list[str] | tuple[str, ...] | None = None, ax=None
):
    """Each retrieval measure as a function of the cutoff k (book chapter 4).

    ``table``: one row a measure, one column a cutoff, as returned by
    :func:`sbert_tutor.evaluation.retrieval.evaluate_retrieval`. The k axis is logarithmic.
    """
    ax = _axes(ax)
    ks = np.asarray(table.columns, dtype=float)
    dashed = {"accuracy", "map"}  # they coincide with recall / mrr when each query has R = 1
    for name in metrics or list(table.index):
        ax.plot(
            ks,
            table.loc[name].to_numpy(dtype=float),
            ls="--" if name in dashed else "-",
            marker="." if len(ks) < 30 else None,
            label=name,
        )
    ax.set_xscale("log")
    ax.set_xlabel("cutoff k")
    ax.set_ylabel("value (fraction)")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, ncol=2)
    return ax


def plot_first_relevant_rank(ranks: pd.Series, top_k: int = 10, ax=None, label: str | None = None):
    """How many queries find their first relevant passage at rank 1, 2, ..., ``top_k`` or later.

    ``ranks``: :func:`sbert_tutor.evaluation.retrieval.first_relevant_ranks` (NaN = not
    retrieved). The last bar counts queries with no relevant passage in the top ``top_k``.
    """
    ax = _axes(ax, figsize=(7, 3.5))
    values = ranks.to_numpy(dtype=float)
    counts = [int(np.sum(values == r)) for r in range(1, top_k + 1)]
    counts.append(int(np.sum(np.isnan(values) | (values > top_k))))
    labels = [str(r) for r in range(1, top_k + 1)] + [f">{top_k}"]
    ax.bar(labels, counts, color=["C0"] * top_k + ["C3"], label=label)
    ax.set_xlabel("rank of the first relevant passage")
    ax.set_ylabel("queries")
    if label:
        ax.legend(fontsize=8)
    return ax


def plot_throughput(table: pd.DataFrame, ax=None):
    """Sentences/s vs batch size, one line per variant (book: computational efficiency)."""
    ax = _axes(ax, figsize=(6, 4))
    for variant, rows in table.groupby("variant", sort=False):
        ax.plot(rows["batch_size"], rows["sentences_per_s"], "o-", label=variant)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("sentences / second")
    ax.legend(fontsize=8)
    return ax


def plot_throughput_by_length(table: pd.DataFrame, ax=None):
    """Sentences/s per input-length group."""
    ax = _axes(ax, figsize=(6, 3.5))
    ax.bar(table["tokens"], table["sentences_per_s"])
    ax.set_xlabel("tokens per input")
    ax.set_ylabel("sentences / second")
    return ax
