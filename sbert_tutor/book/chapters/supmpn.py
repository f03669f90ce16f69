"""Chapter 10, SupMPN (Dehghan & Amasyali, 2022): its sizes and deviations from the paper, and
the diagram of the denominator of eq. 7 (its cells' roles from :func:`supmpn_denominator_roles`).
The chapter's analyses run on its page."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

from sbert_tutor.book import published
from sbert_tutor.book.deviations import (
    HUB_NAMES,
    NLI_TRAIN,
    NOT_STATED,
    POOLINGS,
    UNSTATED_OPTIMIZER,
    UNSTATED_WARMUP,
    Aspect,
    run_aspects,
)
from sbert_tutor.book.drawing import FONT, canvas, cells, legend, row_labels, title
from sbert_tutor.book.sizes import BERT, PAPER_SEEDS, QUICK_RUN, T4_RUN, RunSizes, register_sizes
from sbert_tutor.book.weak_start import Start

__all__ = [
    "SIZES",
    "SUPMPN_ROLES",
    "SupMPNSizes",
    "paper_aspects",
    "supmpn_denominator",
    "supmpn_denominator_roles",
]


@dataclass(frozen=True, kw_only=True)
class SupMPNSizes(RunSizes):
    """Chapter 10 (SupMPN): ``positives`` (P) and ``negatives`` (Q) per anchor; ``batch_size``
    is also the fixed batch of the denominator analysis."""

    positives: int
    negatives: int


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, SupMPNSizes] = register_sizes(
    "10_supmpn",
    {
        "quick": SupMPNSizes(
            batch_size=16, steps=40, examples=640, positives=2, negatives=2, **QUICK_RUN
        ),
        "t4": SupMPNSizes(
            batch_size=32, steps=60, examples=None, positives=2, negatives=2, **T4_RUN
        ),
        "paper": SupMPNSizes(
            start=Start(BERT, "mean"),
            batch_size=256,
            steps=None,
            epochs=3,
            positives=5,
            negatives=5,
            lr=5e-5,
            seeds=PAPER_SEEDS,
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """The paper profile vs Dehghan & Amasyali's SupMPN setup
    (:data:`~sbert_tutor.book.published.SUPMPN_SETUP`)."""
    sm, src = published.SUPMPN_SETUP, published.SUPMPN.at("sections 5.1-5.3")
    simcse = f"{NOT_STATED} (SimCSE-sup's setup)"
    why = {
        "pooling": "sbert_tutor.encoders.pooling pools the last layer only; the average of the "
        "first and last layers needs every layer's hidden states, which the encoder does not keep",
        "learning rate": "the paper states none (it follows SimCSE-sup's setup); 5e-5 is "
        "the rate of SimCSE's supervised BERT-base runs",
        "warm-up ratio": UNSTATED_WARMUP,
        "optimizer": UNSTATED_OPTIMIZER,
    }
    paper = {
        "start model": HUB_NAMES[sm["start models"]],
        "pooling": POOLINGS[sm["pooling"]],
        "batch size": sm["batch size (base, large)"][0],
        "epochs": sm["epochs"],
        "learning rate": simcse,
        "warm-up ratio": simcse,
        "optimizer": simcse,
        "training examples": "all",
    }
    return [
        *run_aspects(src, why, **paper),
        Aspect(
            "positives P, negatives Q",
            sm["positives P, negatives Q per anchor"],
            src,
            lambda s: (s.positives, s.negatives),
        ),
        Aspect(
            "training data",
            f"{sm['training data']} inputs built from {sm['premises (SNLI + MNLI)']} "
            "SNLI + MNLI premises",
            src,
            lambda s: (
                f"one group per premise of {NLI_TRAIN} with an entailment "
                "(sbert_tutor.data.nli.supmpn_groups)"
            ),
            "the paper's inputs are not published; the library builds one group per premise by "
            "the rule of section 5.2 (own hypotheses first, padded with the anchor and other "
            "premises' hypotheses)",
        ),
    ]


SUPMPN_ROLES = {
    "numerator": ("#6aa84f", "numerator: the positive $p_{ik}$"),
    "left out": ("#ffffff", "left out: the anchor's other positives"),
    "in-batch negative": ("#cfe2f3", "other anchors' positives"),
    "own hard negative": ("#cc4125", "the anchor's own hard negatives"),
    "hard negative": ("#f4cccc", "other anchors' hard negatives"),
}


def supmpn_denominator_roles(
    n: int, p: int, q: int, anchor: int = 0, positive: int = 0
) -> np.ndarray:
    r"""The role of every candidate in SupMPN's denominator :math:`D_{ik}` (eq. 7, book chapter 10)
    for anchor :math:`i` = ``anchor`` and its positive :math:`k` = ``positive`` (0-based).

    Rows are the batch's groups :math:`j = 1..N`, columns :math:`p_{j1}..p_{jP}` then
    :math:`n_{j1}..n_{jQ}`. Roles: ``"numerator"`` (:math:`p_{ik}`, also in the denominator),
    ``"left out"`` (:math:`p_{im}, m \neq k`), ``"in-batch negative"`` (:math:`p_{jm}, j \neq
    i`), ``"own hard negative"`` (:math:`n_{iq}`) and ``"hard negative"`` (:math:`n_{jq}, j \neq
    i`). The denominator holds :math:`1 + (N-1)P + NQ` terms.
    """
    if min(n, p) < 1 or q < 0:
        raise ValueError(f"need n >= 1, p >= 1 and q >= 0, got n={n}, p={p}, q={q}")
    if not (0 <= anchor < n and 0 <= positive < p):
        raise ValueError(
            f"anchor must be in [0, {n}) and positive in [0, {p}), got {anchor} and {positive}"
        )
    roles = np.empty((n, p + q), dtype=object)
    roles[:, :p] = "in-batch negative"
    roles[:, p:] = "hard negative"
    roles[anchor, :p] = "left out"
    roles[anchor, positive] = "numerator"
    roles[anchor, p:] = "own hard negative"
    return roles


def supmpn_denominator(
    n: int = 3, p: int = 2, q: int = 2, anchor: int = 0, positive: int = 0
) -> Figure:
    r"""SupMPN's denominator :math:`D_{ik}` drawn as the batch's candidates, one row per group
    (anchor :math:`a_j` with its :math:`P` positives and :math:`Q` hard negatives), coloured by
    their role for anchor ``anchor`` and positive ``positive`` (book chapter 10)."""
    roles = supmpn_denominator_roles(n, p, q, anchor, positive)
    size, x0, y0 = 0.6, 1.0, 0.35
    top = y0 + n * size
    fig, ax = canvas(7.0, top + 0.85)

    def name(j: int, c: int) -> str:  # the candidate in row j, column c
        return f"$p_{{{j + 1}{c + 1}}}$" if c < p else f"$n_{{{j + 1}{c - p + 1}}}$"

    cells(ax, roles, x0, y0, size, SUPMPN_ROLES, labels=name)
    row_labels(ax, [f"group of $a_{j + 1}$" for j in range(n)], x0, top, size)
    header = {"ha": "center", "va": "bottom", "fontsize": FONT}
    ax.text(x0 + p * size / 2, top + 0.1, "positives", **header)
    if q:
        ax.text(x0 + (p + q / 2) * size, top + 0.1, "hard negatives", **header)
        ax.plot([x0 + p * size] * 2, [y0 - 0.05, top + 0.05], color="black", lw=1.5)
    i, k = anchor + 1, positive + 1
    heading = f"The denominator $D_{{{i}{k}}}$ of anchor $a_{i}$ and its positive $p_{{{i}{k}}}$"
    title(ax, 3.5, top + 0.6, heading)
    legend_x = x0 + (p + q) * size + 0.45
    legend(ax, SUPMPN_ROLES, legend_x, top - 0.1, set(roles.ravel()), step=0.27)
    terms = f"$N = {n},\\ P = {p},\\ Q = {q}$:\n$1 + (N-1)P + NQ = {1 + (n - 1) * p + n * q}$ terms"
    ax.text(legend_x, y0 + 0.2, terms, ha="left", va="center", fontsize=FONT)
    return fig
