"""Chapter 8, the triplet objective: the gradient written out and checked against autograd
(:func:`triplet_gradients_by_hand`, :func:`triplet_gradient_check`), the margin sweep on fixed
NLI triplets (:func:`triplet_margin_sweep`, :func:`plot_margin_sweep`) and the triplet network
diagram (:func:`triplet_network`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor

from sbert_tutor.book import published
from sbert_tutor.book.deviations import ADAMW, NLI_TRAIN, Aspect, run_aspects, sbert_run_setup
from sbert_tutor.book.drawing import arrow, box, canvas, shared_encoder
from sbert_tutor.book.figures import new_panels
from sbert_tutor.book.gradients import GradientCheck
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
from sbert_tutor.losses import TRIPLET_MARGIN, pairwise_distance, triplet
from sbert_tutor.results import Result

__all__ = [
    "MarginSweep",
    "SIZES",
    "SWEEP_DISTANCES",
    "TripletSizes",
    "paper_aspects",
    "plot_margin_sweep",
    "triplet_gradient_check",
    "triplet_gradients_by_hand",
    "triplet_margin_sweep",
    "triplet_network",
]


@dataclass(frozen=True, kw_only=True)
class TripletSizes(RunSizes):
    """Chapter 8 (triplet): the model of the margin sweep, its NLI triplets, the STSb dev
    pairs the runs are scored on, and the margin of the runs (SBERT's: 1, Euclidean)."""

    model: str
    margin_triplets: int | None
    eval_pairs: int | None
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
            model=T4_START,
            margin_triplets=5000,
            steps=120,
            batch_size=32,
            examples=None,
            eval_pairs=None,
            **T4_RUN,
        ),
        "paper": TripletSizes(
            model=BERT,
            margin_triplets=5000,
            steps=None,
            epochs=1,
            examples=None,
            eval_pairs=None,
            seeds=PAPER_SEEDS,
            **SBERT_RUN,
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """What the paper profile is compared on with SBERT's triplet setup (Reimers & Gurevych,
    2019), read from :data:`~sbert_tutor.book.published.SBERT_SETUP` now (see
    :mod:`sbert_tutor.book.deviations`)."""
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


#: The distances the chapter compares: SBERT's Euclidean distance and the cosine distance.
SWEEP_DISTANCES: tuple[str, ...] = ("euclidean", "cosine")


def triplet_network() -> Figure:
    r"""The triplet network: anchor, positive and negative through one encoder, two distances and
    the hinge :math:`\max(\Vert s_a - s_p \Vert - \Vert s_a - s_n \Vert + \varepsilon, 0)`
    (book chapter 8).
    """
    fig, ax = canvas(6.4, 4.6)
    encoders = {}
    vectors = {}
    for x, role, name in ((1.0, "a", "anchor"), (3.2, "p", "positive"), (5.4, "n", "negative")):
        sentence = box(ax, x, 0.4, 1.6, 0.5, f"{name} ${role}$", "input")
        encoder = box(ax, x, 1.35, 1.6, 0.7, "transformer\n+ pooling", "encoder")
        vector = box(ax, x, 2.25, 0.7, 0.45, f"$s_{role}$", "vector")
        arrow(ax, sentence["top"], encoder["bottom"])
        arrow(ax, encoder["top"], vector["bottom"])
        encoders[role], vectors[role] = encoder, vector
    shared_encoder(ax, encoders["a"]["right"], encoders["p"]["left"])
    shared_encoder(ax, encoders["p"]["right"], encoders["n"]["left"])
    positive = box(ax, 2.1, 3.1, 1.9, 0.5, r"$\Vert s_a - s_p \Vert$", "score")
    negative = box(ax, 4.3, 3.1, 1.9, 0.5, r"$\Vert s_a - s_n \Vert$", "score")
    y = positive["bottom"][1]
    arrow(ax, vectors["a"]["top"], (1.6, y))
    arrow(ax, vectors["p"]["top"], (2.6, y))
    arrow(ax, vectors["a"]["top"], (3.8, y))
    arrow(ax, vectors["n"]["top"], (4.8, y))
    loss = box(
        ax,
        3.2,
        4.1,
        5.0,
        0.55,
        r"$\max\left(\Vert s_a - s_p \Vert - \Vert s_a - s_n \Vert + \varepsilon,\ 0\right)$",
        "head",
    )
    arrow(ax, positive["top"], (2.1, loss["bottom"][1]))
    arrow(ax, negative["top"], (4.3, loss["bottom"][1]))
    return fig


def plot_margin_sweep(sweep: pd.DataFrame, bound: float | None = 2.0, axes=None):
    """Two panels: share of active triplets and mean loss vs the margin, one line per distance.

    ``bound`` draws the largest separation unit-length embeddings allow (2 for both distances).
    """
    axes = new_panels(axes, 2, (10, 3.8))
    for distance, part in sweep.groupby("distance", sort=False):
        axes[0].plot(part["margin"], part["active"], marker="o", label=distance)
        axes[1].plot(part["margin"], part["mean loss"], marker="o", label=distance)
    axes[0].set_ylabel("share of triplets with a non-zero hinge")
    axes[1].set_ylabel("mean triplet loss")
    for ax in axes:
        ax.set_xlabel("margin ε")
        if bound is not None:
            ax.axvline(bound, color="grey", ls="--", lw=1)
        ax.legend(fontsize=8)
    axes[0].set_ylim(-0.02, 1.02)
    return axes


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class MarginSweep(Result):
    r""":func:`triplet_margin_sweep`: one row per (distance, margin).

    Attributes:
        separation: per distance, :math:`\delta(a_i, n_i) - \delta(a_i, p_i)` of every triplet.
        triplets: how many triplets were swept.
    """

    separation: dict[str, np.ndarray]
    triplets: int


def triplet_margin_sweep(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margins: Sequence[float],
    distances: Sequence[str] = SWEEP_DISTANCES,
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
            separation[distance] = (-gap).cpu().numpy()
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


def triplet_gradients_by_hand(
    anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = TRIPLET_MARGIN
) -> dict[str, Tensor]:
    r"""The gradients of SBERT's triplet loss with the Euclidean distance, written out (chapter 8).

    Per triplet, with the hinge active (:math:`\lVert s_a - s_p \rVert - \lVert s_a - s_n \rVert
    + \varepsilon > 0`) and divided by :math:`N` for the batch mean:
    :math:`\partial \mathcal{L} / \partial s_p = -(s_a - s_p) / \lVert s_a - s_p \rVert`,
    :math:`\partial \mathcal{L} / \partial s_n = (s_a - s_n) / \lVert s_a - s_n \rVert`, and
    :math:`\partial \mathcal{L} / \partial s_a` minus the sum of the two. An inactive triplet
    gets zero.

    Returns:
        ``{"active", "da", "dp", "dn"}``: the active mask ``[N]`` and the three ``[N, d]``
        gradients (no autograd involved).
    """
    batch = anchor.shape[0]
    to_p, to_n = anchor - positive, anchor - negative
    d_pos = to_p.norm(dim=1, keepdim=True)
    d_neg = to_n.norm(dim=1, keepdim=True)
    active = (d_pos - d_neg + margin > 0).to(anchor.dtype)  # the hinge's switch
    unit_p, unit_n = to_p / d_pos, to_n / d_neg  # unit directions from p and from n to a
    weight = active / batch
    return {
        "active": active.squeeze(1).bool(),
        "da": weight * (unit_p - unit_n),
        "dp": -weight * unit_p,
        "dn": weight * unit_n,
    }


def triplet_gradient_check(
    anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = TRIPLET_MARGIN
) -> GradientCheck:
    """Autograd through :func:`~sbert_tutor.losses.triplet` (Euclidean) vs
    :func:`triplet_gradients_by_hand`.

    Returns:
        A :class:`~sbert_tutor.book.gradients.GradientCheck` with one row per gradient
        (``dL/da``, ``dL/dp``, ``dL/dn``): shape, the largest entry, the largest difference, and
        the norm of each active triplet's gradient times :math:`N` (1 for ``dL/dp`` and
        ``dL/dn``: unit directions). ``by_hand`` holds the hand-computed tensors.
    """
    leaves = [x.detach().clone().requires_grad_() for x in (anchor, positive, negative)]
    triplet(*leaves, distance="euclidean", margin=margin).backward()
    with torch.no_grad():
        hand = triplet_gradients_by_hand(anchor, positive, negative, margin)
    batch, active = anchor.shape[0], hand["active"]
    rows = []
    for name, leaf in zip(("da", "dp", "dn"), leaves, strict=True):
        auto, mine = leaf.grad, hand[name]
        norms = (auto[active].norm(dim=1) * batch).tolist()
        rows.append(
            {
                "gradient": f"dL/{name[1]}",
                "shape": tuple(auto.shape),
                "max |autograd|": float(auto.abs().max()),
                "max |autograd - by hand|": float((auto - mine).abs().max()),
                "N x norm, active triplets": ", ".join(f"{x:.3f}" for x in norms),
            }
        )
    return GradientCheck(table=pd.DataFrame(rows).set_index("gradient"), by_hand=hand)
