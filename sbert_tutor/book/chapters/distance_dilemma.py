r"""Chapter 12, the *distance dilemma*: Siamese vs. Triplet SBERT for retrieval (Rygaard,
Bramsløw, Jensen and Bagger, n.d., "Distance Dilemma: Siamese vs. Triplet SBERT Networks for
Information Retrieval", Technical University of Denmark).

Four bi-encoders are fine-tuned from the same start model on the same MS MARCO queries and
compared on a disjoint set of queries:

==========================  =========================  ==========================================
setup                       objective                  loss (chapter 12 notation)
==========================  =========================  ==========================================
Siamese / cosine            ``ce_score`` (cosine)      :math:`(y - \operatorname{ReLU}(\cos(q, d)))^2`
Siamese / euclidean         ``ce_score`` (euclidean)   :math:`(1 - y - \lVert q - d \rVert)^2`
Triplet / cosine            ``triplet`` (cosine)       :math:`\max(\delta_c(q, p) - \delta_c(q, n) + \varepsilon, 0)`
Triplet / euclidean         ``triplet`` (euclidean)    :math:`\max(\lVert q - p\rVert - \lVert q - n \rVert + \varepsilon, 0)`
==========================  =========================  ==========================================

with :math:`\delta_c = 1 - \cos` (SBERT's cosine distance, in :math:`[0, 2]`) and :math:`y` the
teacher's relevance probability of the pair. The Euclidean margin is SBERT's,
:math:`\varepsilon = 1`; the cosine one, 0.5, equals it on the unit sphere (:data:`SETUPS`). The
study's own setups, :data:`STUDY_MARGIN_SETUPS`, use its margins, :math:`\varepsilon = 5` (and 1
for the cosine distance), and its cosine distance :math:`\delta_c^{+} = 1 -
\operatorname{ReLU}(\cos) \in [0, 1]` (``distance="cosine_relu"``).

The experiment runs on the chapter's page: the query split of the dev subset with BM25 hard
negatives, the teacher (all-MiniLM-L6-v2's cosine :math:`c`, calibrated into :math:`y = \sigma(a
c + b)` by :func:`platt_scale`, in place of the study's cross-encoder), the training sets, the
loop of ``fit`` calls over the setups, the evaluation and the paired bootstrap. This module holds
the setups, the sizes per profile, the deviations from the study (:func:`paper_aspects`), the
calibration and the figures: :func:`plot_teacher_scores`, :func:`plot_training_curves`,
:func:`plot_results`, :func:`plot_triplet_pca`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book import published
from sbert_tutor.book.deviations import HUB_NAMES, POOLINGS, WARMUPS, Aspect, epochs_of
from sbert_tutor.book.figures import new_axes, new_panels, plot_loss_curves
from sbert_tutor.book.sizes import (
    DISTILBERT,
    QUICK_LR,
    QUICK_START,
    T4_LR,
    T4_START,
    ChapterSizes,
    register_sizes,
)
from sbert_tutor.book.weak_start import start_label
from sbert_tutor.training import TrainingRecord

__all__ = [
    "DistanceDilemmaSizes",
    "MEASURES",
    "SETUPS",
    "SIZES",
    "STUDY_MARGIN_SETUPS",
    "TEACHER",
    "paper_aspects",
    "platt_scale",
    "plot_results",
    "plot_teacher_scores",
    "plot_training_curves",
    "plot_triplet_pca",
]


@dataclass(frozen=True, kw_only=True)
class DistanceDilemmaSizes(ChapterSizes):
    """Chapter 12 (the distance dilemma): test queries (the first ones of the dev subset; the
    rest train), random extra test passages beyond their judged and BM25 candidates, BM25
    negatives per training query, the start model (a hub name or a start such as
    :class:`~sbert_tutor.book.weak_start.WeakStart`; mean pooling, as the study's), optimizer
    steps, epochs, batch size, learning rate and warm-up, triplets in the PCA picture, and
    whether the study's own margins are trained too (three more runs: only in the paper
    profile)."""

    test_queries: int
    other_passages: int | None
    negatives_per_query: int | None
    model: Any
    steps: int | None
    epochs: int
    batch_size: int
    lr: float = 2e-5
    warmup_ratio: float = 0.1
    pca_triplets: int
    study_margins: bool


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them). ``quick`` starts from the
#: one-layer weak start of chapters 6-11 with their learning rate: a model with room to learn
#: from the teacher (the full all-MiniLM-L6-v2, already trained on MS MARCO, could only be
#: nudged) and a fifth of the full model's cost a step.
SIZES: dict[str, DistanceDilemmaSizes] = register_sizes(
    "12_distance_dilemma",
    {
        "quick": DistanceDilemmaSizes(
            test_queries=100,
            other_passages=0,
            negatives_per_query=2,
            model=QUICK_START,
            steps=32,
            epochs=1,
            batch_size=16,
            lr=QUICK_LR,
            pca_triplets=40,
            study_margins=False,
        ),
        "t4": DistanceDilemmaSizes(
            test_queries=200,
            other_passages=0,
            negatives_per_query=4,
            model=T4_START,
            steps=None,
            epochs=1,
            batch_size=16,
            lr=T4_LR,
            pca_triplets=100,
            study_margins=False,
        ),
        "paper": DistanceDilemmaSizes(
            test_queries=200,
            other_passages=None,
            negatives_per_query=None,
            model=DISTILBERT,
            steps=None,
            epochs=3,
            batch_size=64,
            warmup_ratio=0.0,
            pca_triplets=100,
            study_margins=True,
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """What the paper profile is compared on with the Distance Dilemma study's setup, read from
    :data:`~sbert_tutor.book.published.DISTANCE_DILEMMA` now (see
    :mod:`sbert_tutor.book.deviations`)."""
    dd, src = published.DISTANCE_DILEMMA, published.DISTANCE_DILEMMA_SOURCE
    return [
        Aspect("start model", HUB_NAMES[dd["start model"]], src, lambda s: start_label(s.model)),
        Aspect("pooling", POOLINGS[dd["pooling"]], src, lambda s: "mean"),
        Aspect("batch size", dd["batch size"], src, lambda s: s.batch_size),
        Aspect("epochs", dd["epochs"], src, epochs_of),
        Aspect(
            "learning rate",
            dd["learning rate"],
            src,
            lambda s: s.lr,
            "the study states none (only that it decreases linearly); SBERT's 2e-5",
        ),
        Aspect("warm-up ratio", WARMUPS[dd["warm-up"]], src, lambda s: s.warmup_ratio),
        Aspect(
            "triplet margin",
            dd["triplet margin"],
            src,
            lambda s: 5.0 if s.study_margins else "SBERT's (1 Euclidean, 0.5 cosine) only",
        ),
        Aspect("test queries", dd["test queries"], src, lambda s: s.test_queries),
        Aspect(
            "training queries",
            dd["training queries"],
            src,
            lambda s: f"the dev subset's other queries (540 - {s.test_queries})",
            "the study's 125,000-query subset of MS MARCO (with its cross-encoder scores) is not "
            "published and its selection is not described; the chapter trains on the queries of "
            "the dev subset (540 judged, with BM25 candidates) that its test split leaves",
        ),
        Aspect(
            "test corpus (passages)",
            f"{dd['corpus passages (millions)']} million",
            src,
            lambda s: (
                "the test queries' judged and BM25 passages"
                + (" + all of corpus_mini (16,799)" if s.other_passages is None else "")
            ),
            "the split, the BM25 negatives and the teacher scores are built from the dev subset "
            "over corpus_mini; chapter 5's paper profile retrieves from the 8.8M collection, for "
            "one model, where this chapter evaluates seven",
        ),
        Aspect(
            "hard negatives and their scores",
            f"cross-encoder scores ({dd['CE-score transform']}); negatives at least "
            f"{dd['hard-negative CE-score gap (logits)']} logits below the positive",
            src,
            lambda s: "BM25 negatives; all-MiniLM-L6-v2's cosines, Platt-scaled on the judgements",
            "the study's cross-encoder scores come with its unpublished subset; the chapter scores "
            "its pairs with a bi-encoder teacher and maps cosines to probabilities on the judged "
            "labels (Platt scaling)",
        ),
    ]


#: name -> (objective, options). Margins: SBERT's :math:`\varepsilon = 1` for the Euclidean
#: triplet; :math:`\varepsilon = 0.5` for the cosine distance :math:`\delta_c = 1 - \cos`. On unit
#: vectors :math:`\lVert q - d \rVert = \sqrt{2 \delta_c}`, so a pair at :math:`\delta_c = 0.5`
#: (cosine 0.5) sits at Euclidean distance 1: both margins are the same share of that distance.
SETUPS: dict[str, tuple[str, dict[str, Any]]] = {
    "Siamese / cosine": ("ce_score", {"similarity": "cosine"}),
    "Siamese / euclidean": ("ce_score", {"similarity": "euclidean"}),
    "Triplet / cosine": ("triplet", {"distance": "cosine", "margin": 0.5}),
    "Triplet / euclidean": ("triplet", {"distance": "euclidean", "margin": 1.0}),
}


#: The study's own triplet setups (Rygaard et al., sections 2.3.2 and 4.1): :math:`\varepsilon = 5`
#: for both distances, and :math:`\varepsilon = 1` for the cosine distance, which it tried again.
#: Its cosine distance is thresholded at 0 by a ReLU (the note under its eq. 1, which covers its
#: eq. 4): :math:`\delta_c^{+} = 1 - \operatorname{ReLU}(\cos)`, ``"cosine_relu"``.
STUDY_MARGIN_SETUPS: dict[str, tuple[str, dict[str, Any]]] = {
    "Triplet / cosine, ε = 5 (study)": ("triplet", {"distance": "cosine_relu", "margin": 5.0}),
    "Triplet / euclidean, ε = 5 (study)": ("triplet", {"distance": "euclidean", "margin": 5.0}),
    "Triplet / cosine, ε = 1 (study)": ("triplet", {"distance": "cosine_relu", "margin": 1.0}),
}


#: The measures Rygaard et al. report, in their order.
MEASURES = ("precision", "accuracy", "mrr", "ndcg")


TEACHER = "sentence-transformers/all-MiniLM-L6-v2"


def plot_teacher_scores(pairs: pd.DataFrame, ax=None, bins: int = 30):
    """Histograms of the teacher cosine for positive and BM25-negative training pairs (``pairs``:
    one row a pair, with its ``label`` (1 or 0) and its ``teacher_cosine``)."""
    ax = new_axes(ax, figsize=(6, 3.5))
    for label, name in ((1, "positive"), (0, "BM25 negative")):
        values = pairs.loc[pairs["label"] == label, "teacher_cosine"]
        ax.hist(values, bins=bins, alpha=0.6, label=name, density=True)
    ax.set_xlabel("teacher cosine c")
    ax.set_ylabel("density")
    ax.set_title("Teacher scores of the training pairs")
    ax.legend()
    return ax


def plot_training_curves(records: Mapping[str, TrainingRecord], axes=None, window: int = 5):
    """Loss curves of the runs (setup -> its record), one panel per architecture, read from the
    setup's name (a squared error and a hinge have other scales)."""
    axes = new_panels(axes, 2, (11, 3.8))
    for ax, arch in zip(axes, ("Siamese", "Triplet"), strict=True):
        group = {k: v for k, v in records.items() if k.startswith(arch)}
        if group:
            plot_loss_curves(group, ax=ax, window=window)
        ax.set_title(f"{arch} objectives")
    return axes


def plot_results(table: pd.DataFrame, measures: Sequence[str] = MEASURES, axes=None):
    """Each measure against k, one line per setup (start model dashed)."""
    axes = new_panels(axes, len(measures), (3.6 * len(measures), 3.4))
    for ax, measure in zip(axes, measures, strict=True):
        sub = table[table["measure"] == measure]
        for setup, rows in sub.groupby("setup", sort=False):
            dashed = rows["architecture"].iloc[0] == "start model"
            ax.plot(rows["k"], rows["value"], marker="o", ls="--" if dashed else "-", label=setup)
        ax.set_title(measure)
        ax.set_xlabel("k")
        ax.set_xticks(sorted(sub["k"].unique()))
    axes[0].legend(fontsize=7)
    return axes


def plot_triplet_pca(points: pd.DataFrame, n_lines: int = 15, axes=None):
    """One panel per model: queries, positives and negatives in PCA space (as in Rygaard et al.'s
    Fig. 2B).

    Thin lines join each of the first ``n_lines`` queries to its positive (green) and its
    negative (red).
    """
    models = list(dict.fromkeys(points["model"]))
    if axes is None:
        cols = min(3, len(models))
        rows = math.ceil(len(models) / cols)
        axes = new_panels(None, cols, (4.2 * cols, 3.8 * rows), rows=rows)
    style = {
        "query": ("o", "tab:blue"),
        "positive": ("^", "tab:green"),
        "negative": ("x", "tab:red"),
    }
    for ax, model in zip(axes, models, strict=False):
        sub = points[points["model"] == model]
        wide = sub.pivot(index="triplet", columns="role", values=["pc1", "pc2"])
        for i in wide.index[:n_lines]:
            for role, colour in (("positive", "tab:green"), ("negative", "tab:red")):
                ax.plot(
                    [wide.loc[i, ("pc1", "query")], wide.loc[i, ("pc1", role)]],
                    [wide.loc[i, ("pc2", "query")], wide.loc[i, ("pc2", role)]],
                    color=colour,
                    lw=0.6,
                    alpha=0.5,
                )
        for role, (marker, colour) in style.items():
            r = sub[sub["role"] == role]
            ax.scatter(r["pc1"], r["pc2"], marker=marker, color=colour, s=16, label=role)
        ax.set_title(model, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in list(axes)[len(models) :]:
        ax.axis("off")
    axes[0].legend(fontsize=8, loc="best")
    return axes


def platt_scale(
    scores: Sequence[float], labels: Sequence[int], iterations: int = 100
) -> tuple[float, float]:
    r"""Fit :math:`P(\text{relevant} \mid s) = \sigma(a s + b)` by Platt's method (Platt, 1999).

    Minimises the cross-entropy against Platt's smoothed targets
    :math:`t_+ = \frac{N_+ + 1}{N_+ + 2}`, :math:`t_- = \frac{1}{N_- + 2}` (which keeps
    :math:`a` finite on separable data) by Newton's method on :math:`(a, b)`.

    Returns:
        ``(a, b)`` as floats.

    Raises:
        ValueError: lengths differ, non-finite scores, or a class is missing.

    Reference:
        Platt (1999), "Probabilistic Outputs for Support Vector Machines and Comparisons to
        Regularized Likelihood Methods".
    """
    c = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if c.shape != y.shape or c.ndim != 1:
        raise ValueError(f"scores {c.shape} and labels {y.shape} must be equal-length vectors")
    if not np.isfinite(c).all():
        raise ValueError("scores contain NaN or infinity")
    n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
    if n_pos + n_neg != len(y):
        raise ValueError("labels must be 0 or 1")
    if not n_pos or not n_neg:
        raise ValueError(f"need both classes to calibrate, got {n_pos} positive, {n_neg} negative")
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    x = np.stack([c, np.ones_like(c)], axis=1)
    w = np.array([0.0, math.log((n_pos + 1) / (n_neg + 1))])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - t)
        hess = (x * (p * (1 - p))[:, None]).T @ x + 1e-12 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-12:
            break
    return float(w[0]), float(w[1])
