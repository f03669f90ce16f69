"""Chapter 7, the regression objective: one run's learning-rate schedule and gradient norms
(:func:`plot_schedule_and_clipping`), the sizes and the paper's setup (the rest is on the page)."""

from __future__ import annotations

from dataclasses import dataclass

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

__all__ = ["RegressionSizes", "SIZES", "paper_aspects", "plot_schedule_and_clipping"]


@dataclass(frozen=True, kw_only=True)
class RegressionSizes(RunSizes):
    """Chapter 7 (regression): the model of the label-scale table and its STSb train pairs
    (``None``: all)."""

    model: str
    scale_pairs: int | None = None


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, RegressionSizes] = register_sizes(
    "07_regression_objective",
    {
        "quick": RegressionSizes(
            model=MINILM, scale_pairs=500, steps=60, batch_size=16, examples=2000, **QUICK_RUN
        ),
        "t4": RegressionSizes(model=T4_START, steps=None, batch_size=16, **T4_RUN),
        "paper": RegressionSizes(
            model=BERT, steps=None, epochs=4, seeds=tuple(range(10)), **SBERT_RUN
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """The paper profile vs SBERT's STSb setup, :data:`~sbert_tutor.book.published.SBERT_SETUP`."""
    sb, src = published.SBERT_SETUP, published.SBERT_SETUP_SOURCE
    return [
        *run_aspects(src, {"optimizer": ADAMW}, epochs=sb["STSb epochs"], **sbert_run_setup()),
        Aspect("seeds", sb["STSb seeds"], src, lambda s: len(s.seeds)),
    ]


def plot_schedule_and_clipping(record: TrainingRecord, max_grad_norm: float = 1.0, ax=None):
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
    right.axhline(max_grad_norm, color="grey", ls=":", lw=1)
    right.set_ylabel("gradient norm before clipping", color="C1")
    right.set_ylim(bottom=0)
    return ax
