"""Chapter 10, SupMPN (Dehghan & Amasyali, 2022): the denominator of eq. 7 broken down
(:func:`denominator_breakdown`, :func:`supmpn_denominator`), SupMPN against MNRL on one batch
(:func:`supmpn_mnrl_agreement`) and the NLI groups it trains on.

How SupMPN groups are filled from the NLI data at hand (chapter 10).

:func:`premise_label_counts` counts premises by their number of entailment and contradiction
hypotheses; :func:`group_sources` says where each slot of
:func:`~sbert_tutor.data.nli.supmpn_groups` comes from.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure
from torch import Tensor

from sbert_tutor.book import published
from sbert_tutor.book.deviations import (
    HUB_NAMES,
    NLI_TRAIN,
    NOT_STATED,
    POOLINGS,
    Aspect,
    run_aspects,
)
from sbert_tutor.book.drawing import FONT, canvas, cells, legend, row_labels, title
from sbert_tutor.book.sizes import BERT, PAPER_SEEDS, QUICK_RUN, T4_RUN, RunSizes, register_sizes
from sbert_tutor.book.weak_start import Start
from sbert_tutor.data import NLIData
from sbert_tutor.data.table import DataTable, as_frame
from sbert_tutor.losses import (
    multiple_negatives_ranking,
    supmpn,
    tensor_cosine_matrix,
)
from sbert_tutor.results import Result

__all__ = [
    "PremiseCounts",
    "SIZES",
    "SUPMPN_ROLES",
    "SupMPNSizes",
    "denominator_breakdown",
    "group_sources",
    "paper_aspects",
    "premise_label_counts",
    "supmpn_denominator",
    "supmpn_denominator_roles",
    "supmpn_mnrl_agreement",
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
            # the paper pools the average of the first and last layers; the library pools the
            # last layer only (see deviation_table)
            start=Start(BERT, "mean"),
            batch_size=256,
            steps=None,
            epochs=3,
            examples=None,
            positives=5,
            negatives=5,
            lr=5e-5,
            seeds=PAPER_SEEDS,
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """What the paper profile is compared on with Dehghan & Amasyali's SupMPN setup, read from
    :data:`~sbert_tutor.book.published.SUPMPN_SETUP` now (see :mod:`sbert_tutor.book.deviations`)."""
    sm, src = published.SUPMPN_SETUP, published.SUPMPN.at("sections 5.1-5.3")
    simcse = f"{NOT_STATED} (SimCSE-sup's setup)"
    return [
        *run_aspects(
            src,
            {
                "pooling": "sbert_tutor.encoders.pooling pools the last layer only; the average "
                "of the first and last layers needs every layer's hidden states, which the "
                "encoder does not keep",
                "learning rate": "the paper states none (it follows SimCSE-sup's setup); 5e-5 is "
                "the rate of SimCSE's supervised BERT-base runs",
                "warm-up ratio": "the paper states none; the trainer's default warm-up over 10% "
                "of the steps",
                "optimizer": "the paper states none; the trainer's AdamW",
            },
            **{
                "start model": HUB_NAMES[sm["start models"]],
                "pooling": POOLINGS[sm["pooling"]],
                "batch size": sm["batch size (base, large)"][0],
                "epochs": sm["epochs"],
                "learning rate": simcse,
                "warm-up ratio": simcse,
                "optimizer": simcse,
                "training examples": "all",
            },
        ),
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
    their role for anchor ``anchor`` and positive ``positive`` (book chapter 10).
    """
    roles = supmpn_denominator_roles(n, p, q, anchor, positive)
    size = 0.6
    cols = p + q
    x0, y0 = 1.0, 0.35
    top = y0 + n * size
    fig, ax = canvas(7.0, top + 0.85)
    cells(
        ax,
        roles,
        x0,
        y0,
        size,
        SUPMPN_ROLES,
        labels=lambda j, c: f"$p_{{{j + 1}{c + 1}}}$" if c < p else f"$n_{{{j + 1}{c - p + 1}}}$",
    )
    row_labels(ax, [f"group of $a_{j + 1}$" for j in range(n)], x0, top, size)
    ax.text(x0 + p * size / 2, top + 0.1, "positives", ha="center", va="bottom", fontsize=FONT)
    if q:
        ax.text(
            x0 + (p + q / 2) * size,
            top + 0.1,
            "hard negatives",
            ha="center",
            va="bottom",
            fontsize=FONT,
        )
        ax.plot([x0 + p * size] * 2, [y0 - 0.05, top + 0.05], color="black", lw=1.5)
    i, k = anchor + 1, positive + 1
    terms = 1 + (n - 1) * p + n * q
    legend_x = x0 + cols * size + 0.45
    title(
        ax,
        3.5,
        top + 0.6,
        f"The denominator $D_{{{i}{k}}}$ of anchor $a_{i}$ and its positive $p_{{{i}{k}}}$",
    )
    legend(ax, SUPMPN_ROLES, legend_x, top - 0.1, set(roles.ravel()), step=0.27)
    ax.text(
        legend_x,
        y0 + 0.2,
        f"$N = {n},\\ P = {p},\\ Q = {q}$:\n$1 + (N-1)P + NQ = {terms}$ terms",
        ha="left",
        va="center",
        fontsize=FONT,
    )
    return fig


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class PremiseCounts(Result):
    """:func:`premise_label_counts`, and how many distinct premises there are."""

    premises: int


def premise_label_counts(nli: NLIData) -> PremiseCounts:
    """Premises by how many entailment / contradiction hypotheses they have (0, 1, 2, 3+)."""
    labels = ("entailment", "contradiction")
    per_premise = {p: dict.fromkeys(labels, 0) for p in nli.premises}
    for p, y in zip(nli.premises, nli.labels, strict=True):
        if y in labels:
            per_premise[p][y] += 1
    bins = ["0", "1", "2", "3+"]
    table = (
        pd.DataFrame(
            {
                label: Counter(bins[min(c[label], 3)] for c in per_premise.values())
                for label in labels
            },
            index=bins,
        )
        .fillna(0)
        .astype(int)
    )
    table.index.name = "hypotheses of this label per premise"
    return PremiseCounts(table=table, premises=len(per_premise))


def group_sources(groups: DataTable | pd.DataFrame, nli: NLIData) -> pd.DataFrame:
    """Where each slot of SupMPN groups comes from, in % of the groups.

    Positive slots: an entailment hypothesis of the premise (first use), the premise itself
    (SupMPN padding, or rarely an entailment hypothesis identical to its premise), or an
    entailment hypothesis used again (padding). Negative slots: a contradiction
    hypothesis of the premise, or a hypothesis of another premise (padding).
    """
    groups = as_frame(groups)
    own: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for p, h, y in zip(nli.premises, nli.hypotheses, nli.labels, strict=True):
        own[p][y].add(h)
    cats = [
        "entailment of the premise",
        "the premise itself",
        "entailment used again (padding)",
        "contradiction of the premise",
        "hypothesis of another premise (padding)",
    ]
    pos_cols = [c for c in groups.columns if str(c).startswith("positive")]
    neg_cols = [c for c in groups.columns if str(c).startswith("negative")]
    counts = {c: dict.fromkeys(cats, 0) for c in pos_cols + neg_cols}
    anchors = groups["anchor"].tolist()
    used: list[set[str]] = [set() for _ in anchors]
    for c in pos_cols:
        for i, text in enumerate(groups[c].tolist()):
            if text == anchors[i]:
                cat = cats[1]
            elif text in used[i]:
                cat = cats[2]
            else:
                cat = cats[0]
            used[i].add(text)
            counts[c][cat] += 1
    for c in neg_cols:
        for i, text in enumerate(groups[c].tolist()):
            own_contradiction = text in own[anchors[i]]["contradiction"]
            counts[c][cats[3] if own_contradiction else cats[4]] += 1
    table = pd.DataFrame.from_dict(counts, orient="index")[cats].astype(float)
    table = 100.0 * table / max(len(groups), 1)
    table.index.name = "slot"
    return table.loc[:, (table > 0).any(axis=0)]


def supmpn_mnrl_agreement(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor,
    temperatures: Sequence[float] = (0.05, 0.1, 1.0),
) -> pd.DataFrame:
    r"""SupMPN with one positive (:math:`P = 1`) vs MNRL with :math:`s = 1/\tau`, same tensors.

    ``positives`` is ``[N, P, d]``; only its first positive is used. ``negatives`` ``[N, Q, d]``;
    rows are computed for :math:`Q = 0` and for all ``Q`` given.
    """
    one = positives[:, :1]
    rows = []
    for q in sorted({0, negatives.shape[1]}):
        neg = negatives[:, :q]
        for t in temperatures:
            a = float(supmpn(anchors, one, neg, temperature=float(t)))
            b = float(
                multiple_negatives_ranking(
                    anchors, positives[:, 0], neg if q else None, scale=1.0 / float(t)
                )
            )
            rows.append(
                {
                    "negatives Q": q,
                    "temperature": float(t),
                    "scale 1/t": 1.0 / float(t),
                    "supmpn (P=1)": a,
                    "multiple_negatives_ranking": b,
                    "|difference|": abs(a - b),
                }
            )
    return pd.DataFrame(rows)


def denominator_breakdown(
    anchors: Tensor, positives: Tensor, negatives: Tensor, temperature: float = 0.05
) -> pd.DataFrame:
    r"""Where the mass of SupMPN's denominator (eq. 7) comes from, averaged over anchors and
    positives.

    For anchor :math:`i` and its positive :math:`k` the denominator holds the positive itself,
    the other anchors' positives and every negative of the batch (the anchor's own and the
    others'); the anchor's *other* positives are left out. Rows: these terms, with how many there
    are and their mean share of the denominator in %.
    """
    n, p, d = positives.shape
    q = negatives.shape[1]
    e_pos = torch.exp(
        tensor_cosine_matrix(anchors, positives.reshape(-1, d)).view(n, n, p) / temperature
    )
    e_neg = torch.exp(
        tensor_cosine_matrix(anchors, negatives.reshape(-1, d)).view(n, n, q) / temperature
    )
    eye = torch.eye(n, dtype=torch.bool)
    own_pos = e_pos[eye]  # [N, P]: e(a_i, p_ik)
    other_pos = e_pos.masked_fill(eye.unsqueeze(-1), 0.0).sum(dim=(1, 2))  # [N]
    own_neg = e_neg[eye].sum(dim=1)  # [N]
    other_neg = e_neg.masked_fill(eye.unsqueeze(-1), 0.0).sum(dim=(1, 2))  # [N]
    total = own_pos + (other_pos + own_neg + other_neg).unsqueeze(1)  # [N, P]
    terms = {
        "the positive p_ik itself": (1, own_pos),
        "the anchor's other positives (left out)": (p - 1, torch.zeros_like(own_pos)),
        "other anchors' positives": ((n - 1) * p, other_pos.unsqueeze(1).expand(n, p)),
        "the anchor's own hard negatives": (q, own_neg.unsqueeze(1).expand(n, p)),
        "other anchors' hard negatives": ((n - 1) * q, other_neg.unsqueeze(1).expand(n, p)),
    }
    rows = {
        name: {"terms": count, "share of denominator %": 100.0 * float((mass / total).mean())}
        for name, (count, mass) in terms.items()
    }
    return pd.DataFrame(rows).T
