r"""Chapter 12, the *distance dilemma*: Siamese vs. Triplet SBERT for retrieval (Rygaard,
Bramsløw, Jensen and Bagger, n.d., "Distance Dilemma: Siamese vs. Triplet SBERT Networks for
Information Retrieval", Technical University of Denmark).

Four bi-encoders, Siamese (``ce_score``: regression onto a teacher's relevance probability
:math:`y`) or triplet, each with cosine or Euclidean distance, are fine-tuned from one start
model on MS MARCO queries and compared on disjoint ones. The losses and the experiment (split,
teacher, training sets, the loop of ``fit`` calls, evaluation, paired bootstrap) are on the
chapter's page, with the teacher's calibration and the two nDCG ideals. This module holds the
setups (:data:`SETUPS`, :data:`STUDY_MARGIN_SETUPS`), the sizes per profile, the deviations from
the study (:func:`paper_aspects`) and the figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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

    test_queries: int = 200
    other_passages: int | None = 0
    negatives_per_query: int | None
    model: Any
    steps: int | None = None
    epochs: int = 1
    batch_size: int = 16
    lr: float = 2e-5
    warmup_ratio: float = 0.1
    pca_triplets: int = 100
    study_margins: bool = False


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them). ``quick`` starts from the
#: one-layer weak start of chapters 6-11 with their learning rate: a model with room to learn
#: from the teacher (the full all-MiniLM-L6-v2, already trained on MS MARCO, could only be
#: nudged) and a fifth of the full model's cost a step.
SIZES: dict[str, DistanceDilemmaSizes] = register_sizes(
    "12_distance_dilemma",
    {
        "quick": DistanceDilemmaSizes(
            test_queries=100,
            negatives_per_query=2,
            model=QUICK_START,
            steps=32,
            lr=QUICK_LR,
            pca_triplets=40,
        ),
        "t4": DistanceDilemmaSizes(negatives_per_query=4, model=T4_START, lr=T4_LR),
        "paper": DistanceDilemmaSizes(
            other_passages=None,
            negatives_per_query=None,
            model=DISTILBERT,
            epochs=3,
            batch_size=64,
            warmup_ratio=0.0,
            study_margins=True,
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """The paper profile against the study's setup, read from
    :data:`~sbert_tutor.book.published.DISTANCE_DILEMMA` now (:mod:`~sbert_tutor.book.deviations`)."""
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
    Fig. 2B), thin lines joining each of the first ``n_lines`` queries to its positive (green)
    and its negative (red)."""
    models = list(dict.fromkeys(points["model"]))
    if axes is None:
        cols = min(3, len(models))
        rows = math.ceil(len(models) / cols)
        axes = new_panels(None, cols, (4.2 * cols, 3.8 * rows), rows=rows)
    style = dict(query=("o", "tab:blue"), positive=("^", "tab:green"), negative=("x", "tab:red"))
    for ax, model in zip(axes, models, strict=False):
        sub = points[points["model"] == model]
        wide = sub.pivot(index="triplet", columns="role", values=["pc1", "pc2"])
        for i in wide.index[:n_lines]:
            ends = wide.loc[i].unstack()  # rows pc1, pc2; one column a role
            for role in ("positive", "negative"):
                ax.plot(*ends[["query", role]].to_numpy(), color=style[role][1], lw=0.6, alpha=0.5)
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
