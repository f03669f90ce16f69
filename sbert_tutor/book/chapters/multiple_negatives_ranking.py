"""Chapter 9, multiple negatives ranking (MNRL): its sizes and deviations from Taneja et al.
(2023), the in-batch logit matrix diagram and the plots of the experiments the chapter runs on the
page (the scale and batch-size sweeps, the duplicates in random batches)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from sbert_tutor.book import published
from sbert_tutor.book.deviations import (
    ADAMW,
    HUB_NAMES,
    NLI_TRAIN,
    POOLINGS,
    WARMUPS,
    Aspect,
    run_aspects,
)
from sbert_tutor.book.drawing import FONT, MAX_WIDTH, arrow, canvas, cells, legend, row_labels
from sbert_tutor.book.figures import new_axes, new_panels
from sbert_tutor.book.sizes import BERT, PAPER_SEEDS, QUICK_RUN, T4_RUN, RunSizes, register_sizes
from sbert_tutor.book.weak_start import Start

__all__ = [
    "LOGIT_ROLES",
    "MNRLSizes",
    "SIZES",
    "in_batch_logit_matrix",
    "logit_matrix_roles",
    "paper_aspects",
    "plot_batch_size_sweep",
    "plot_duplicates",
    "plot_scale_sweep",
]


@dataclass(frozen=True, kw_only=True)
class MNRLSizes(RunSizes):
    """Chapter 9 (MNRL): pairs encoded once for the fixed-embedding analyses."""

    fixed_pairs: int


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, MNRLSizes] = register_sizes(
    "09_multiple_negatives_ranking",
    {
        "quick": MNRLSizes(fixed_pairs=1024, steps=40, batch_size=32, examples=1280, **QUICK_RUN),
        "t4": MNRLSizes(fixed_pairs=8192, steps=200, batch_size=64, examples=None, **T4_RUN),
        "paper": MNRLSizes(
            fixed_pairs=8192,
            start=Start(BERT, "mean"),
            steps=None,
            batch_size=12,
            lr=2e-5,
            seeds=PAPER_SEEDS,
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """The paper profile vs Taneja et al.'s MNRL setup
    (:data:`~sbert_tutor.book.published.TANEJA_SETUP`)."""
    tj, src = published.TANEJA_SETUP, published.TANEJA.at("section IV")
    kept = f"the {tj['entailment pairs kept']:,} entailment pairs of {NLI_TRAIN}"
    paper = {
        "start model": HUB_NAMES[tj["start model"]],
        "pooling": POOLINGS[tj["start model"]],
        "batch size": tj["batch size"],
        "epochs": tj["epochs"],
        "learning rate": tj["learning rate"],
        "warm-up ratio": WARMUPS[tj["warm-up"]],
        "optimizer": "Adam",
        "training examples": "all",
    }
    return [
        *run_aspects(src, {"optimizer": ADAMW}, **paper),
        Aspect(
            "training data",
            kept,
            src,
            lambda s: kept if s.examples is None else f"{s.examples:,} entailment pairs",
        ),
    ]


# Roles of the cells of the two matrix diagrams, with their colours and legend labels.
LOGIT_ROLES = {
    "target": ("#6aa84f", "target (own positive)"),
    "in-batch negative": ("#cfe2f3", "in-batch negative"),
    "own hard negative": ("#cc4125", "own hard negative"),
    "hard negative": ("#f4cccc", "other hard negative"),
}


def logit_matrix_roles(n: int, hard_negatives: bool = True) -> np.ndarray:
    r"""The role of each logit :math:`z_{ij}` of MNRL's :math:`N \times N` (or :math:`N \times 2N`
    with hard negatives) matrix, rows the anchors :math:`a_i`, columns the candidates
    :math:`p_1..p_N` then :math:`n_1..n_N` (book chapter 9), each a key of ``LOGIT_ROLES``.
    """
    if n < 1:
        raise ValueError(f"the batch needs at least one pair, got n={n}")
    positives = np.full((n, n), "in-batch negative", dtype=object)
    np.fill_diagonal(positives, "target")
    if not hard_negatives:
        return positives
    negatives = np.full((n, n), "hard negative", dtype=object)
    np.fill_diagonal(negatives, "own hard negative")
    return np.concatenate([positives, negatives], axis=1)


def in_batch_logit_matrix(n: int = 4, hard_negatives: bool = True) -> Figure:
    r"""MNRL's logit matrix :math:`z_{ij} = s \cos(a_i, c_j)` for a batch of ``n`` pairs (book
    chapter 9): one row per anchor, a softmax along each row, its target on the diagonal, and
    (with ``hard_negatives``) the :math:`N` hard-negative columns every anchor also sees."""
    roles = logit_matrix_roles(n, hard_negatives)
    cols = roles.shape[1]
    size = min(0.5, 3.6 / cols)
    x0, y0 = 0.5, 0.75
    legend_x = x0 + cols * size + 0.35
    fig, ax = canvas(min(MAX_WIDTH, legend_x + 2.3), y0 + n * size + 0.9)
    cells(ax, roles, x0, y0, size, LOGIT_ROLES, labels=lambda i, j: f"$z_{{{i + 1}{j + 1}}}$")
    top = y0 + n * size
    row_labels(ax, [f"$a_{i + 1}$" for i in range(n)], x0, top, size)
    centred = {"ha": "center", "va": "center", "fontsize": FONT}
    for j in range(cols):
        name = f"p_{j + 1}" if j < n else f"n_{j - n + 1}"
        ax.text(x0 + (j + 0.5) * size, top + 0.08, f"${name}$", **{**centred, "va": "bottom"})
    ax.text(x0 + n * size / 2, top + 0.5, "positives", **centred)
    if hard_negatives:
        ax.text(x0 + 1.5 * n * size, top + 0.5, "hard negatives", **centred)
        ax.plot([x0 + n * size] * 2, [y0 - 0.05, top + 0.6], color="black", lw=1.5)
    arrow(ax, (x0, y0 - 0.22), (x0 + cols * size, y0 - 0.22))
    note = r"softmax along each row $i$; the loss is the mean of $-\log P_{ii}$"
    ax.text(x0 + cols * size / 2, y0 - 0.35, note, ha="center", va="top", fontsize=FONT - 1)
    legend(ax, LOGIT_ROLES, legend_x, top - 0.15, set(roles.ravel()))
    return fig


def plot_scale_sweep(sweep: pd.DataFrame, ax=None):
    """Loss and chance level vs the scale (log x axis), with p(positive) on a second axis."""
    ax = new_axes(ax)
    ax.semilogx(sweep["scale"], sweep["loss"], "o-", label="MNRL loss")
    ax.semilogx(sweep["scale"], sweep["chance log K"], "--", color="grey", label="chance: log K")
    ax.set_xlabel("scale s = 1 / temperature")
    ax.set_ylabel("loss (nats)")
    right = ax.twinx()
    right.semilogx(sweep["scale"], sweep["p(positive)"], "s:", color="C1", label="p(positive)")
    right.set_ylabel("mean softmax probability of the positive")
    right.set_ylim(0, 1)
    lines = ax.get_lines() + right.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], fontsize=8, loc="center right")
    return ax


def plot_batch_size_sweep(sweep: pd.DataFrame, axes=None):
    """Loss vs chance level (left) and in-batch top-1 accuracy (right) against the batch size."""
    left, right = axes = new_panels(axes, 2, (10, 3.8))
    n = sweep["batch size N"]
    left.semilogx(n, sweep["loss"], "o-", label="MNRL loss (fixed embeddings)")
    left.semilogx(n, sweep["chance log K"], "--", color="grey", label="chance: log K")
    left.set_xlabel("batch size N")
    left.set_ylabel("loss (nats)")
    left.legend(fontsize=8)
    right.semilogx(n, sweep["top-1 accuracy %"], "s-", color="C1")
    right.set_xlabel("batch size N")
    right.set_ylabel("in-batch top-1 accuracy %")
    for a in axes:
        a.set_xticks(list(n), [str(v) for v in n])
    return axes


def plot_duplicates(report: pd.DataFrame, ax=None):
    """Share of batches holding a shared text, random vs no-duplicates batches."""
    ax = new_axes(ax, figsize=(6, 3.8))
    for sampler, part in report.groupby("sampler", sort=False):
        ax.plot(part["batch size"], part["batches with a shared text %"], "o-", label=sampler)
    ax.set_xscale("log", base=2)
    sizes = sorted(report["batch size"].unique())
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("batch size")
    ax.set_ylabel("batches with a text in two examples %")
    ax.set_ylim(-3, 103)
    ax.legend(fontsize=8)
    return ax
