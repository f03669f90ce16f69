"""Chapter 8, the triplet objective: the plot of the margin sweep on fixed NLI triplets, the triplet
network diagram, the sizes and the paper's setup (the gradient and the sweep are on the page)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure

from sbert_tutor.book import published
from sbert_tutor.book.deviations import ADAMW, NLI_TRAIN, Aspect, run_aspects, sbert_run_setup
from sbert_tutor.book.drawing import arrow, box, canvas, shared_encoder
from sbert_tutor.book.figures import new_panels
from sbert_tutor.book.sizes import (
    BERT,
    PAPER_SEEDS,
    QUICK_RUN,
    SBERT_RUN,
    T4_RUN,
    T4_START,
    RunSizes,
    register_sizes,
)
from sbert_tutor.book.weak_start import MINILM

__all__ = ["SIZES", "TripletSizes", "paper_aspects", "plot_margin_sweep", "triplet_network"]


@dataclass(frozen=True, kw_only=True)
class TripletSizes(RunSizes):
    """Chapter 8 (triplet): the model of the margin sweep, its NLI triplets, the STSb dev
    pairs the runs are scored on (``None``: all), and the runs' margin (SBERT's: 1, Euclidean)."""

    model: str
    margin_triplets: int
    eval_pairs: int | None = None
    margin: float = 1.0


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, TripletSizes] = register_sizes(
    "08_triplet_objective",
    {
        "quick": TripletSizes(
            model=MINILM,
            margin_triplets=500,
            steps=25,
            batch_size=16,
            examples=1000,
            eval_pairs=500,
            **QUICK_RUN,
        ),
        "t4": TripletSizes(
            model=T4_START, margin_triplets=5000, steps=120, batch_size=32, **T4_RUN
        ),
        "paper": TripletSizes(
            model=BERT, margin_triplets=5000, steps=None, seeds=PAPER_SEEDS, **SBERT_RUN
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """The paper profile vs SBERT's triplet setup
    (:data:`~sbert_tutor.book.published.SBERT_SETUP`)."""
    sb, src = published.SBERT_SETUP, published.SBERT_SETUP_SOURCE
    return [
        *run_aspects(src, {"optimizer": ADAMW}, epochs=sb["triplet epochs"], **sbert_run_setup()),
        Aspect("margin", sb["triplet margin"], src, lambda s: s.margin),
        Aspect(
            "distance",
            sb["triplet distance"],
            src,
            lambda s: "euclidean and cosine, one run each",
            "the chapter compares the two distances; its Euclidean run is the paper's setup",
        ),
        Aspect(
            "training data",
            sb["triplet training data"],
            src,
            lambda s: f"{NLI_TRAIN}: (premise, entailment, contradiction) triplets",
            "the chapter teaches the objective on the NLI data of chapters 6-7 and scores it on "
            "STSb; the library has no loader for the Wikipedia-sections triplets",
        ),
    ]


def triplet_network() -> Figure:
    r"""The triplet network: anchor, positive and negative through one encoder, two distances and
    the hinge :math:`\max(\Vert s_a - s_p \Vert - \Vert s_a - s_n \Vert + \varepsilon, 0)`
    (book chapter 8).
    """
    fig, ax = canvas(6.4, 4.6)
    encoders, vectors = {}, {}
    for x, role, name in ((1.0, "a", "anchor"), (3.2, "p", "positive"), (5.4, "n", "negative")):
        sentence = box(ax, x, 0.4, 1.6, 0.5, f"{name} ${role}$", "input")
        encoders[role] = box(ax, x, 1.35, 1.6, 0.7, "transformer\n+ pooling", "encoder")
        vectors[role] = box(ax, x, 2.25, 0.7, 0.45, f"$s_{role}$", "vector")
        arrow(ax, sentence["top"], encoders[role]["bottom"])
        arrow(ax, encoders[role]["top"], vectors[role]["bottom"])
    shared_encoder(ax, encoders["a"]["right"], encoders["p"]["left"])
    shared_encoder(ax, encoders["p"]["right"], encoders["n"]["left"])
    positive = box(ax, 2.1, 3.1, 1.9, 0.5, r"$\Vert s_a - s_p \Vert$", "score")
    negative = box(ax, 4.3, 3.1, 1.9, 0.5, r"$\Vert s_a - s_n \Vert$", "score")
    for role, x in (("a", 1.6), ("p", 2.6), ("a", 3.8), ("n", 4.8)):
        arrow(ax, vectors[role]["top"], (x, positive["bottom"][1]))
    hinge = r"$\max\left(\Vert s_a - s_p \Vert - \Vert s_a - s_n \Vert + \varepsilon,\ 0\right)$"
    loss = box(ax, 3.2, 4.1, 5.0, 0.55, hinge, "head")
    arrow(ax, positive["top"], (2.1, loss["bottom"][1]))
    arrow(ax, negative["top"], (4.3, loss["bottom"][1]))
    return fig


def plot_margin_sweep(sweep: pd.DataFrame, bound: float = 2.0, axes=None):
    """Two panels: share of active triplets and mean loss vs the margin, one line per distance;
    ``bound`` draws the largest separation unit-length embeddings allow (2 for both distances)."""
    axes = new_panels(axes, 2, (10, 3.8))
    for distance, part in sweep.groupby("distance", sort=False):
        axes[0].plot(part["margin"], part["active"], marker="o", label=distance)
        axes[1].plot(part["margin"], part["mean loss"], marker="o", label=distance)
    axes[0].set_ylabel("share of triplets with a non-zero hinge")
    axes[1].set_ylabel("mean triplet loss")
    for ax in axes:
        ax.set_xlabel("margin ε")
        ax.axvline(bound, color="grey", ls="--", lw=1)
        ax.legend(fontsize=8)
    axes[0].set_ylim(-0.02, 1.02)
    return axes
