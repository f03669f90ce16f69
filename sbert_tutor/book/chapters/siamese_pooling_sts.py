"""Chapter 3, Siamese SBERT, pooling and STS: its sizes and its figures. The loop over the poolings
of one encoder, with STS, anisotropy and the SBERT paper's Table 6, is on the page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.sizes import ChapterSizes, register_sizes

__all__ = ["PoolingSizes", "SIZES", "plot_cosine_histograms", "plot_pooling", "plot_sts_tasks"]


@dataclass(frozen=True, kw_only=True)
class PoolingSizes(ChapterSizes):
    """Chapter 3 (Siamese pooling and STS): random sentence pairs behind the anisotropy estimate."""

    anisotropy_pairs: int


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, PoolingSizes] = register_sizes(
    "03_siamese_pooling_sts",
    {
        "quick": PoolingSizes(anisotropy_pairs=2000),
        "t4": PoolingSizes(anisotropy_pairs=20000),
        "paper": PoolingSizes(anisotropy_pairs=20000),
    },
)


def plot_pooling(table: pd.DataFrame, ax=None):
    """Spearman by pooling mode, anisotropy annotated on each bar (book chapter 3)."""
    ax = new_axes(ax, figsize=(5, 3.5))
    bars = ax.bar(table["pooling"], table["spearman"], color=["C0", "C1", "C2"][: len(table)])
    for bar, a in zip(bars, table["anisotropy"], strict=False):
        x = bar.get_x() + bar.get_width() / 2
        ax.text(x, bar.get_height() + 0.5, f"anisotropy {a:.2f}", ha="center", fontsize=8)
    ax.set_ylabel("Spearman x100")
    ax.set_ylim(0, max(100, float(table["spearman"].max()) + 10))
    return ax


def plot_cosine_histograms(groups: Mapping[str, np.ndarray], ax=None, bins: int = 40):
    """Overlaid histograms of cosine similarities, one per named group."""
    ax = new_axes(ax)
    for name, values in groups.items():
        label = f"{name} (mean {np.mean(values):.2f})"
        ax.hist(values, bins=bins, range=(-0.2, 1.0), alpha=0.5, density=True, label=label)
    ax.set_xlabel("cosine similarity")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    return ax


def plot_sts_tasks(table: pd.DataFrame, published: pd.DataFrame, ax=None):
    """Our per-task Spearman beside published rows (labelled)."""
    ax = new_axes(ax, figsize=(8, 4))
    ours = table[table["task"] != "avg"]
    x = np.arange(len(ours))
    rows = {"this run": ours["spearman"].to_numpy()}
    tasks = published.drop(columns="avg", errors="ignore")
    for name, row in tasks.iterrows():
        rows[f"{name} (published)"] = row.to_numpy(dtype=float)
    width = 0.8 / len(rows)
    for k, (name, values) in enumerate(rows.items()):
        ax.bar(x + k * width - 0.4 + width / 2, values, width, label=name)
    ax.set_xticks(x, ours["task"])
    ax.set_ylabel("Spearman x100")
    ax.legend(fontsize=8)
    return ax
