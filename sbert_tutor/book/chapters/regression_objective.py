"""Chapter 7, the regression objective: how the gold scores are scaled to the cosine's range
(:func:`target_scaling_table`), and what one run's training steps did: its learning-rate
schedule and gradient norms (:func:`plot_schedule_and_clipping`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbert_tutor.book import published
from sbert_tutor.book.deviations import ADAMW, Aspect, run_aspects, sbert_run_setup
from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.sizes import (
    BERT,
    QUICK_RUN,
    SBERT_RUN,
    T4_RUN,
    T4_START,
    RunSizes,
    register_sizes,
)
from sbert_tutor.book.weak_start import MINILM
from sbert_tutor.training import TrainingRecord

__all__ = [
    "RegressionSizes",
    "SIZES",
    "TARGET_SCALINGS",
    "paper_aspects",
    "plot_schedule_and_clipping",
    "target_scaling_table",
]


@dataclass(frozen=True, kw_only=True)
class RegressionSizes(RunSizes):
    """Chapter 7 (regression): the model of the label-scale table and its STSb train pairs."""

    model: str
    scale_pairs: int | None


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, RegressionSizes] = register_sizes(
    "07_regression_objective",
    {
        "quick": RegressionSizes(
            model=MINILM,
            scale_pairs=500,
            steps=60,
            epochs=1,
            batch_size=16,
            examples=2000,
            **QUICK_RUN,
        ),
        "t4": RegressionSizes(
            model=T4_START,
            scale_pairs=None,
            steps=None,
            epochs=1,
            batch_size=16,
            examples=None,
            **T4_RUN,
        ),
        "paper": RegressionSizes(
            model=BERT,
            scale_pairs=None,
            steps=None,
            epochs=4,
            examples=None,
            seeds=tuple(range(10)),
            **SBERT_RUN,
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """What the paper profile is compared on with SBERT's STSb setup (Reimers & Gurevych, 2019),
    read from :data:`~sbert_tutor.book.published.SBERT_SETUP` now (see
    :mod:`sbert_tutor.book.deviations`)."""
    sb, src = published.SBERT_SETUP, published.SBERT_SETUP_SOURCE
    return [
        *run_aspects(src, {"optimizer": ADAMW}, epochs=sb["STSb epochs"], **sbert_run_setup()),
        Aspect("seeds", sb["STSb seeds"], src, lambda s: len(s.seeds)),
    ]


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


def plot_schedule_and_clipping(record: TrainingRecord, max_grad_norm: float | None = 1.0, ax=None):
    """One run's learning rate per optimizer step (left axis) and its gradient norm before
    clipping (right axis), with the clipping threshold ``max_grad_norm`` dotted: every step
    above the line was clipped. Returns the left axes."""
    steps = record.steps_frame()
    ax = new_axes(ax)
    ax.plot(steps["step"], steps["lr"], color="C0")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("learning rate", color="C0")
    right = ax.twinx()
    right.plot(steps["step"], steps["grad_norm"], color="C1", lw=1)
    if max_grad_norm is not None:
        right.axhline(max_grad_norm, color="grey", ls=":", lw=1)
    right.set_ylabel("gradient norm before clipping", color="C1")
    right.set_ylim(bottom=0)
    return ax
