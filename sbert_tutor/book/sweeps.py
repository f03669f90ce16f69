r"""Losses on frozen embeddings, swept over their knobs (chapters 7 to 10).

No encoder is trained here: each function reads embeddings of real pairs, triplets or groups
(:mod:`~sbert_tutor.book.fixed_embeddings`) and shows what a loss asks of them.

* chapter 7: :func:`target_scaling_table` -- the regression loss under each label scaling;
* chapter 8: :func:`triplet_margin_sweep` -- how many triplets a margin keeps active;
* chapter 9: :func:`scale_sweep`, :func:`candidate_table`, :func:`batch_size_sweep`,
  :func:`hard_negative_table`, :func:`cosine_summary` -- MNRL's scale, candidates, batch size and
  hard negatives;
* chapter 10: :func:`supmpn_mnrl_agreement`, :func:`denominator_breakdown` -- SupMPN with one
  positive is MNRL; where its denominator's mass comes from.

Conventions: embeddings are ``torch`` tensors ``[N, d]`` (grouped ones ``[N, K, d]``); ``scale``
:math:`s = 1/\tau`; accuracies are percentages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor

from sbert_tutor.book.fixed_embeddings import FixedBatch, mnrl_candidates
from sbert_tutor.losses import (
    TRIPLET_DISTANCES,
    cosine_matrix,
    multiple_negatives_ranking,
    pairwise_distance,
    supmpn,
)
from sbert_tutor.results import Result


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class MarginSweep(Result):
    r""":func:`triplet_margin_sweep`: one row per (distance, margin).

    Attributes:
        separation: per distance, :math:`\delta(a_i, n_i) - \delta(a_i, p_i)` of every triplet.
        triplets: how many triplets were swept.
    """

    separation: dict[str, np.ndarray]
    triplets: int


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class CandidateTable(Result):
    """:func:`candidate_table`: the anchor's candidates shown, with the anchor's text and the
    number of candidates in the batch."""

    anchor: str
    candidates: int


#: label scalings of chapter 7: name -> the interval the gold range (0..5 on STSb) is mapped onto.
TARGET_SCALINGS: dict[str, tuple[float, float]] = {
    "y / 5 (SBERT)": (0.0, 1.0),
    "(y - 2.5) / 2.5": (-1.0, 1.0),
    "y unscaled": (0.0, 5.0),
}


def target_scaling_table(
    cosines: np.ndarray,
    scores: np.ndarray,
    score_range: tuple[float, float] = (0.0, 5.0),
    scalings: Mapping[str, tuple[float, float]] | None = None,
) -> pd.DataFrame:
    r"""What the regression loss asks of fixed cosines under different label scalings.

    Each scaling maps the gold range linearly onto an interval :math:`[a, b]`:
    :math:`t = a + (b - a)(y - y_{\min}) / (y_{\max} - y_{\min})`. Per scaling:

    * ``loss now``: :math:`\frac1N \sum_i (c_i - t_i)^2` at the given cosines;
    * ``loss floor``: the smallest loss any model can reach, as a cosine lives in
      :math:`[-1, 1]`: :math:`\frac1N \sum_i (\operatorname{clip}(t_i, -1, 1) - t_i)^2`;
    * ``unreachable targets``: the share of pairs with :math:`|t_i| > 1`;
    * ``pairs pulled together``: the share with :math:`c_i < t_i`, whose gradient raises the cosine.

    Args:
        cosines: :math:`c_i`, e.g. from :func:`~sbert_tutor.book.fixed_embeddings.pair_cosines`.
        scores: the gold scores :math:`y_i`, on ``score_range``.
        scalings: ``{name: (a, b)}``; default :data:`TARGET_SCALINGS`.
    """
    c = np.asarray(cosines, dtype=np.float64)
    y = np.asarray(scores, dtype=np.float64)
    lo, hi = float(score_range[0]), float(score_range[1])
    unit = (y - lo) / (hi - lo)
    rows = []
    for name, (a, b) in (scalings or TARGET_SCALINGS).items():
        t = a + (b - a) * unit
        rows.append(
            {
                "scaling": name,
                "target interval": f"[{a:g}, {b:g}]",
                "loss now": float(np.mean((c - t) ** 2)),
                "loss floor": float(np.mean((np.clip(t, -1.0, 1.0) - t) ** 2)),
                "unreachable targets": float(np.mean(np.abs(t) > 1.0)),
                "pairs pulled together": float(np.mean(c < t)),
            }
        )
    return pd.DataFrame(rows).set_index("scaling")


def triplet_margin_sweep(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margins: Sequence[float],
    distances: Sequence[str] = TRIPLET_DISTANCES,
) -> MarginSweep:
    r"""For fixed embeddings, the triplet hinge as a function of the margin :math:`\varepsilon`.

    Per distance :math:`\delta` and margin, with :math:`h_i = \max(\delta(a_i, p_i) -
    \delta(a_i, n_i) + \varepsilon, 0)`:

    * ``active``: the share of triplets with :math:`h_i > 0` (those that still get a gradient);
    * ``mean loss``: :math:`\frac1N \sum_i h_i`, the value of
      :func:`~sbert_tutor.losses.triplet`.

    The :class:`MarginSweep` also holds ``separation``: per distance,
    :math:`\delta(a_i, n_i) - \delta(a_i, p_i)` for every triplet (a margin larger than all of
    them keeps every triplet active).
    """
    rows = []
    separation: dict[str, np.ndarray] = {}
    with torch.no_grad():
        for distance in distances:
            gap = pairwise_distance(anchor, positive, distance) - pairwise_distance(
                anchor, negative, distance
            )
            separation[distance] = (-gap).numpy()
            for margin in margins:
                hinge = F.relu(gap + float(margin))
                rows.append(
                    {
                        "distance": distance,
                        "margin": float(margin),
                        "active": float((hinge > 0).double().mean()),
                        "mean loss": float(hinge.double().mean()),
                    }
                )
    return MarginSweep(
        table=pd.DataFrame(rows), separation=separation, triplets=int(anchor.shape[0])
    )


def _ranking_stats(anchors: Tensor, candidates: Tensor, scale: float) -> dict[str, float]:
    logits = scale * cosine_matrix(anchors, candidates)
    log_probs = torch.log_softmax(logits, dim=1)
    n = anchors.shape[0]
    own = torch.diagonal(log_probs[:, :n])
    return {
        "loss": float(-own.mean()),
        "p(positive)": float(own.exp().mean()),
        "top-1 accuracy %": 100.0 * float((logits.argmax(dim=1) == torch.arange(n)).float().mean()),
    }


def scale_sweep(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor | None = None,
    scales: Sequence[float] = (1, 2, 5, 10, 20, 50, 100),
) -> pd.DataFrame:
    r"""MNRL on fixed embeddings as a function of the scale :math:`s = 1/\tau`.

    Columns: ``scale``, ``temperature``, ``loss`` (the library's MNRL), ``chance`` (:math:`\log K`,
    the loss of uniform probabilities over :math:`K` candidates), ``p(positive)`` (the mean softmax
    probability of the own positive) and ``top-1 accuracy %`` (does not depend on the scale).
    """
    candidates = mnrl_candidates(positives, negatives)
    rows = []
    for s in scales:
        stats = _ranking_stats(anchors, candidates, float(s))
        rows.append(
            {
                "scale": float(s),
                "temperature": 1.0 / float(s),
                "loss": float(multiple_negatives_ranking(anchors, positives, negatives, float(s))),
                "chance log K": math.log(candidates.shape[0]),
                "p(positive)": stats["p(positive)"],
                "top-1 accuracy %": stats["top-1 accuracy %"],
            }
        )
    return pd.DataFrame(rows)


def _shorten(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def candidate_table(
    batch: FixedBatch, row: int = 0, scales: Sequence[float] = (1, 20, 100), top: int = 6
) -> CandidateTable:
    r"""For one anchor, its candidates with cosine and softmax probability at each scale.

    Candidates are the batch's positives, then its hard negatives (if any). Rows: the ``top``
    candidates by cosine plus the own positive and own hard negatives, sorted by cosine. The column ``gradient weight``
    is :math:`P_{ij} - \delta_{ij}` at the middle scale (negative: pulled, positive: pushed).
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
    cos = cosine_matrix(batch.anchors[row : row + 1], candidates)[0]
    table = pd.DataFrame({"candidate": [_shorten(t) for t in texts], "kind": kinds, "cosine": cos})
    middle = float(scales[len(scales) // 2])
    for s in scales:
        table[f"p (s={s:g})"] = torch.softmax(float(s) * cos, dim=0).numpy()
    table["gradient weight"] = table[f"p (s={middle:g})"] - (table.index == row)
    own = table.index[table["kind"].str.startswith("own")]
    keep = set(table["cosine"].nlargest(top).index) | set(own)
    out = table.loc[sorted(keep, key=lambda j: -table.at[j, "cosine"])]
    return CandidateTable(table=out, anchor=str(frame.iloc[row, 0]), candidates=len(table))


def batch_size_sweep(
    anchors: Tensor,
    positives: Tensor,
    batch_sizes: Sequence[int] = (2, 4, 8, 16, 32, 64, 128, 256),
    scale: float = 20.0,
    negatives: Tensor | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    r"""Split ``M`` fixed pairs into batches of ``N`` and average MNRL over the batches.

    Columns: ``batch size N``, ``batches``, ``loss``, ``chance log K`` (:math:`K = N` or
    :math:`N(1+Q)` candidates), ``top-1 accuracy %`` (the own positive ranks first among the
    batch's candidates) and ``log K - loss`` (the InfoNCE lower bound on mutual information, in
    nats; it can never exceed :math:`\log K`).
    """
    m = anchors.shape[0]
    order = torch.from_numpy(np.random.default_rng(seed).permutation(m))
    rows = []
    for n in batch_sizes:
        if n < 2 or n > m:
            raise ValueError(f"batch sizes must lie in 2..{m} (the pairs given), got {n}")
        losses, accs, k = [], [], 0
        for start in range(0, m - n + 1, n):
            idx = order[start : start + n]
            neg = None if negatives is None else negatives[idx]
            candidates = mnrl_candidates(positives[idx], neg)
            k = candidates.shape[0]
            stats = _ranking_stats(anchors[idx], candidates, scale)
            losses.append(stats["loss"])
            accs.append(stats["top-1 accuracy %"])
        loss = float(np.mean(losses))
        rows.append(
            {
                "batch size N": int(n),
                "batches": len(losses),
                "loss": loss,
                "chance log K": math.log(k),
                "top-1 accuracy %": float(np.mean(accs)),
                "log K - loss": math.log(k) - loss,
            }
        )
    return pd.DataFrame(rows)


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
        stats = _ranking_stats(batch.anchors, candidates, scale)
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
    all_pos = cosine_matrix(batch.anchors, batch.positives)
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
    e_pos = torch.exp(cosine_matrix(anchors, positives.reshape(-1, d)).view(n, n, p) / temperature)
    e_neg = torch.exp(cosine_matrix(anchors, negatives.reshape(-1, d)).view(n, n, q) / temperature)
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
