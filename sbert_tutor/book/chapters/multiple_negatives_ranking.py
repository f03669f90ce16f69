"""Chapter 9, multiple negatives ranking (MNRL): the scale and batch-size sweeps the chapter runs
on the page read each batch with :func:`ranking_stats`; their plots; the candidates' softmax, hard
negatives, duplicate texts in random batches, the in-batch logit matrix diagram, and their figures.

Duplicate texts in a batch: false negatives for in-batch-negative losses (chapter 9).

:func:`shared_text_pairs` counts the examples of one batch that share a text;
:func:`duplicate_report` compares plain shuffled batches with
:class:`~sbert_tutor.training.samplers.NoDuplicatesBatchSampler`; :func:`text_repeats` says how
repetitive the training rows are to begin with.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor

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
from sbert_tutor.book.fixed_embeddings import FixedBatch, mnrl_candidates
from sbert_tutor.book.sizes import BERT, PAPER_SEEDS, QUICK_RUN, T4_RUN, RunSizes, register_sizes
from sbert_tutor.book.weak_start import Start
from sbert_tutor.losses import (
    multiple_negatives_ranking,
    tensor_cosine_matrix,
)
from sbert_tutor.results import Result
from sbert_tutor.training.samplers import NoDuplicatesBatchSampler

__all__ = [
    "CandidateTable",
    "LOGIT_ROLES",
    "MNRLSizes",
    "SIZES",
    "candidate_table",
    "cosine_summary",
    "duplicate_report",
    "hard_negative_table",
    "in_batch_logit_matrix",
    "logit_matrix_roles",
    "paper_aspects",
    "plot_batch_size_sweep",
    "plot_candidate_softmax",
    "plot_duplicates",
    "plot_scale_sweep",
    "ranking_stats",
    "random_batches",
    "shared_text_pairs",
    "text_repeats",
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
            epochs=1,
            batch_size=12,
            examples=None,
            lr=2e-5,
            warmup_ratio=0.1,
            seeds=PAPER_SEEDS,
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """What the paper profile is compared on with Taneja et al.'s MNRL setup, read from
    :data:`~sbert_tutor.book.published.TANEJA_SETUP` now (see :mod:`sbert_tutor.book.deviations`)."""
    tj, src = published.TANEJA_SETUP, published.TANEJA.at("section IV")
    kept = f"the {tj['entailment pairs kept']:,} entailment pairs of {NLI_TRAIN}"
    return [
        *run_aspects(
            src,
            {"optimizer": ADAMW},
            **{
                "start model": HUB_NAMES[tj["start model"]],
                "pooling": POOLINGS[tj["start model"]],
                "batch size": tj["batch size"],
                "epochs": tj["epochs"],
                "learning rate": tj["learning rate"],
                "warm-up ratio": WARMUPS[tj["warm-up"]],
                "optimizer": "Adam",
                "training examples": "all",
            },
        ),
        Aspect(
            "training data",
            kept,
            src,
            lambda s: kept if s.examples is None else f"{s.examples:,} entailment pairs",
        ),
    ]


def shared_text_pairs(rows: Sequence[Sequence[str]]) -> int:
    """Unordered pairs of examples (of one batch) that share at least one text (after strip).

    With in-batch negatives, each such pair puts a copy of a positive (or of the anchor, or a
    second valid positive of the same premise) among an anchor's negatives: a false negative.
    """
    holders: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        for text in {t.strip() for t in row}:
            holders.setdefault(text, []).append(i)
    pairs = {
        (ids[x], ids[y])
        for ids in holders.values()
        if len(ids) > 1
        for x in range(len(ids))
        for y in range(x + 1, len(ids))
    }
    return len(pairs)


def random_batches(n: int, batch_size: int, seed: int = 0) -> list[list[int]]:
    """A plain shuffled plan: ``permutation(n)`` cut into batches of ``batch_size``."""
    order = np.random.default_rng(seed).permutation(n).tolist()
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def duplicate_report(
    rows: Sequence[Sequence[str]],
    batch_sizes: Sequence[int] = (16, 32, 64, 128, 256),
    seed: int = 0,
    epochs: int = 3,
) -> pd.DataFrame:
    """How often batches hold one text in two examples: random batches vs no-duplicates batches.

    For every batch size, ``epochs`` epochs (seeds ``seed .. seed+epochs-1``) are planned by a
    plain shuffle and by :class:`~sbert_tutor.training.samplers.NoDuplicatesBatchSampler`.
    Columns: ``batch size``, ``sampler``, ``batches``, ``mean batch size``, ``batches with a
    shared text %``, ``shared pairs per batch`` (see :func:`shared_text_pairs`).
    """
    rows = [tuple(r) for r in rows]
    out = []
    for size in batch_sizes:
        for sampler in ("random", "NoDuplicatesBatchSampler"):
            counts, sizes = [], []
            for e in range(epochs):
                if sampler == "random":
                    plan = random_batches(len(rows), size, seed + e)
                else:
                    plan = NoDuplicatesBatchSampler(rows, size, seed + e).batches(0)
                for batch in plan:
                    counts.append(shared_text_pairs([rows[i] for i in batch]))
                    sizes.append(len(batch))
            counts_arr = np.asarray(counts)
            out.append(
                {
                    "batch size": int(size),
                    "sampler": sampler,
                    "batches": len(counts),
                    "mean batch size": float(np.mean(sizes)),
                    "batches with a shared text %": 100.0 * float((counts_arr > 0).mean()),
                    "shared pairs per batch": float(counts_arr.mean()),
                }
            )
    return pd.DataFrame(out)


def text_repeats(rows: Sequence[Sequence[str]]) -> pd.Series:
    """How repetitive the training rows are: examples, distinct texts, texts in >1 example."""
    per_text = Counter(t.strip() for row in rows for t in {s.strip() for s in row})
    return pd.Series(
        {
            "examples": len(rows),
            "distinct texts": len(per_text),
            "texts in more than one example": sum(1 for c in per_text.values() if c > 1),
            "most examples sharing one text": max(per_text.values()),
        },
        name="count",
    )


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
    :math:`p_1..p_N` then :math:`n_1..n_N` (book chapter 9).

    ``"target"`` on the diagonal (the row's positive), ``"in-batch negative"`` elsewhere among
    the positives, ``"own hard negative"`` for :math:`n_i` in row :math:`i` and
    ``"hard negative"`` for the other anchors' hard negatives.
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
    r"""MNRL's logit matrix :math:`z_{ij} = s \cos(a_i, c_j)` for a batch of ``n`` pairs: one row
    per anchor, a softmax along each row, its target on the diagonal, and (with
    ``hard_negatives``) the :math:`N` hard-negative columns every anchor also sees (book
    chapter 9).
    """
    roles = logit_matrix_roles(n, hard_negatives)
    cols = roles.shape[1]
    size = min(0.5, 3.6 / cols)
    x0, y0 = 0.5, 0.75
    legend_x = x0 + cols * size + 0.35
    fig, ax = canvas(min(MAX_WIDTH, legend_x + 2.3), y0 + n * size + 0.9)
    cells(ax, roles, x0, y0, size, LOGIT_ROLES, labels=lambda i, j: f"$z_{{{i + 1}{j + 1}}}$")
    top = y0 + n * size
    row_labels(ax, [f"$a_{i + 1}$" for i in range(n)], x0, top, size)
    for j in range(cols):
        name = f"p_{j + 1}" if j < n else f"n_{j - n + 1}"
        ax.text(
            x0 + (j + 0.5) * size, top + 0.08, f"${name}$", ha="center", va="bottom", fontsize=FONT
        )
    ax.text(x0 + n * size / 2, top + 0.5, "positives", ha="center", va="center", fontsize=FONT)
    if hard_negatives:
        ax.text(
            x0 + 1.5 * n * size,
            top + 0.5,
            "hard negatives",
            ha="center",
            va="center",
            fontsize=FONT,
        )
        ax.plot([x0 + n * size] * 2, [y0 - 0.05, top + 0.6], color="black", lw=1.5)
    arrow(ax, (x0, y0 - 0.22), (x0 + cols * size, y0 - 0.22))
    ax.text(
        x0 + cols * size / 2,
        y0 - 0.35,
        r"softmax along each row $i$; the loss is the mean of $-\log P_{ii}$",
        ha="center",
        va="top",
        fontsize=FONT - 1,
    )
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


def plot_candidate_softmax(table: pd.DataFrame, ax=None):
    """Softmax probability of each shown candidate at each scale (grouped bars)."""
    ax = new_axes(ax, figsize=(8, 4))
    cols = [c for c in table.columns if str(c).startswith("p (s=")]
    x = np.arange(len(table))
    width = 0.8 / len(cols)
    for i, c in enumerate(cols):
        ax.bar(x + i * width, table[c], width, label=c)
    labels = [
        f"{'* ' if k == 'own positive' else ''}{cos:.2f}"
        for k, cos in zip(table["kind"], table["cosine"], strict=True)
    ]
    ax.set_xticks(x + width * (len(cols) - 1) / 2, labels)
    ax.set_xlabel("candidates by cosine with the anchor (* = its own positive)")
    ax.set_ylabel("softmax probability")
    ax.legend(fontsize=8)
    return ax


def plot_batch_size_sweep(sweep: pd.DataFrame, axes=None):
    """Loss vs chance level (left) and in-batch top-1 accuracy (right) against the batch size."""
    axes = new_panels(axes, 2, (10, 3.8))
    left, right = axes
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


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class CandidateTable(Result):
    """:func:`candidate_table`: the anchor's candidates shown, with the anchor's text and the
    number of candidates in the batch."""

    anchor: str
    candidates: int


def ranking_stats(anchors: Tensor, candidates: Tensor, scale: float) -> dict[str, float]:
    r"""MNRL's reading of one batch: anchor :math:`i`'s own positive is candidate :math:`i`
    (the positives come first, then any hard negatives).

    Returns ``loss`` (:math:`-\frac1N \sum_i \log \pi_{ii}`, the library's MNRL),
    ``p(positive)`` (the mean :math:`\pi_{ii}`) and ``top-1 accuracy %`` (the own positive
    scores highest).
    """
    logits = scale * tensor_cosine_matrix(anchors, candidates)
    log_probs = torch.log_softmax(logits, dim=1)
    n = anchors.shape[0]
    own = torch.diagonal(log_probs[:, :n])
    return {
        "loss": float(-own.mean()),
        "p(positive)": float(own.exp().mean()),
        "top-1 accuracy %": 100.0 * float((logits.argmax(dim=1) == torch.arange(n)).float().mean()),
    }


def _shorten(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def candidate_table(
    batch: FixedBatch, row: int = 0, scales: Sequence[float] = (1, 20, 100), top: int = 6
) -> CandidateTable:
    r"""For one anchor, its candidates with cosine and softmax probability at each scale.

    Candidates are the batch's positives, then its hard negatives (if any). Rows: the ``top``
    candidates by cosine plus the own positive and own hard negatives, sorted by cosine. The column ``gradient weight``
    is :math:`P_{ij} - [i = j]` at the middle scale (negative: pulled, positive: pushed).
    """
    frame = batch.frame
    n = len(batch)
    neg_cols = [c for c in frame.columns if str(c).startswith("negative")]
    texts = list(frame.iloc[:, 1])
    kinds = ["own positive" if j == row else "other anchor's positive" for j in range(n)]
    negatives = batch.negatives
    if negatives is not None:  # MNRL flattens [N, Q, d] row by row: anchor j's Q are adjacent
        texts = texts + [frame[c].iloc[j] for j in range(n) for c in neg_cols]
        kinds = kinds + [
            "own hard negative" if j == row else "other anchor's hard negative"
            for j in range(n)
            for _ in neg_cols
        ]
    candidates = mnrl_candidates(batch.positives, negatives)
    cos = tensor_cosine_matrix(batch.anchors[row : row + 1], candidates)[0]
    table = pd.DataFrame({"candidate": [_shorten(t) for t in texts], "kind": kinds, "cosine": cos})
    middle = float(scales[len(scales) // 2])
    for s in scales:
        table[f"p (s={s:g})"] = torch.softmax(float(s) * cos, dim=0).cpu().numpy()
    table["gradient weight"] = table[f"p (s={middle:g})"] - (table.index == row)
    own = table.index[table["kind"].str.startswith("own")]
    keep = set(table["cosine"].nlargest(top).index) | set(own)
    out = table.loc[sorted(keep, key=lambda j: -table.at[j, "cosine"])]
    return CandidateTable(table=out, anchor=str(frame.iloc[row, 0]), candidates=len(table))


def hard_negative_table(batch: FixedBatch, scale: float = 20.0) -> pd.DataFrame:
    """MNRL on one fixed batch with and without its hard negatives as extra candidate columns.

    Columns: ``candidates K``, ``chance log K``, ``loss``, ``p(positive)``, ``top-1 accuracy %``.
    """
    rows = {}
    for name, neg in (
        ("in-batch negatives only", None),
        ("+ hard negatives", batch.negatives),
    ):
        candidates = mnrl_candidates(batch.positives, neg)
        stats = ranking_stats(batch.anchors, candidates, scale)
        rows[name] = {
            "candidates K": candidates.shape[0],
            "chance log K": math.log(candidates.shape[0]),
            "loss": float(multiple_negatives_ranking(batch.anchors, batch.positives, neg, scale)),
            "p(positive)": stats["p(positive)"],
            "top-1 accuracy %": stats["top-1 accuracy %"],
        }
    return pd.DataFrame(rows).T


def cosine_summary(batch: FixedBatch) -> pd.Series:
    """Mean cosine of the anchor with its positive, its hard negative(s) and the other anchors'
    positives, and how often its own hard negative is closer than its positive (in %)."""
    cos_pos = F.cosine_similarity(batch.anchors, batch.positives)
    all_pos = tensor_cosine_matrix(batch.anchors, batch.positives)
    n = len(batch)
    others = all_pos[~torch.eye(n, dtype=torch.bool)]
    out = {
        "cos(anchor, own positive)": float(cos_pos.mean()),
        "cos(anchor, other anchors' positives)": float(others.mean()),
    }
    negatives = batch.negatives
    if negatives is not None:
        cos_neg = F.cosine_similarity(batch.anchors.unsqueeze(1), negatives, dim=-1)
        out["cos(anchor, own hard negative)"] = float(cos_neg.mean())
        out["own hard negative closer than positive %"] = 100.0 * float(
            (cos_neg.max(dim=1).values > cos_pos).float().mean()
        )
    return pd.Series(out, name="mean over the batch")
