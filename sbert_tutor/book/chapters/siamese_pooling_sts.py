"""The same weights, three poolings: STS correlation and anisotropy side by side (chapter 3).

The chapter's loop swaps only the pooling step of one encoder
(:meth:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder.with_pooling`) and reports STS
Spearman/Pearson and the anisotropy (:func:`sbert_tutor.book.analysis.anisotropy`) of each, on
the page; :func:`cosine_groups` collects
the cosines of gold-similar, gold-dissimilar and random pairs for a histogram.

:func:`pooling_beside_paper` sets that swap beside the SBERT paper's own pooling ablation (Table 6),
where each pooling was *trained*.

Figures: :func:`plot_pooling`, :func:`plot_cosine_histograms`, :func:`plot_sts_tasks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbert_tutor.book.analysis import random_pair_cosines
from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.published import SBERT_TABLE6_POOLING, SBERT_TABLE6_SOURCE
from sbert_tutor.book.sizes import ChapterSizes, register_sizes
from sbert_tutor.data import STSData
from sbert_tutor.encoders.protocol import Encoder
from sbert_tutor.evaluation.sts import predict_similarity

__all__ = [
    "PoolingSizes",
    "SIZES",
    "cosine_groups",
    "plot_cosine_histograms",
    "plot_pooling",
    "plot_sts_tasks",
    "pooling_beside_paper",
]


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
    ax = new_axes(ax)
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
    ax = new_axes(ax, figsize=(8, 4))
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


def cosine_groups(
    encoder: Encoder,
    data: STSData,
    n_random: int = 2000,
    high: float = 4.0,
    low: float = 1.0,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Cosines of gold-similar pairs (score >= ``high``), gold-dissimilar pairs (<= ``low``) and random pairs.

    If the space is anisotropic, even the random pairs sit far from 0.
    """
    predicted = predict_similarity(encoder, data)
    sentences = list(dict.fromkeys([*data.sentences1, *data.sentences2]))
    return {
        f"gold >= {high:g}": predicted[data.scores >= high],
        f"gold <= {low:g}": predicted[data.scores <= low],
        "random pairs": random_pair_cosines(encoder.encode(sentences), n_random, seed),
    }


def pooling_beside_paper(table: pd.DataFrame, model: str = "all-MiniLM-L6-v2") -> pd.DataFrame:
    """The chapter's pooling swap (its table: ``pooling``, ``spearman``) beside SBERT's Table 6
    pooling rows.

    The columns say what differs: this run swaps the pooling of one model trained with mean
    pooling and scores STSb test; the paper trains a model with each pooling and scores STSb dev.
    ``frame.attrs["source"]`` names the paper's table.
    """
    ours = table.set_index("pooling")["spearman"]
    paper = {mode: SBERT_TABLE6_POOLING.get(mode, (np.nan, np.nan)) for mode in ours.index}
    frame = pd.DataFrame(
        {
            f"this run: {model} (mean-trained), pooling swapped; STSb test": ours,
            "published: SBERT-NLI-base trained with it; STSb dev": {
                mode: nli for mode, (nli, _) in paper.items()
            },
            "published: SBERT-STSb-base trained with it; STSb dev": {
                mode: stsb for mode, (_, stsb) in paper.items()
            },
        }
    )
    frame.index.name = "pooling"
    frame.attrs["source"] = str(SBERT_TABLE6_SOURCE)
    return frame
