"""Chapter 3a, a training loop in plain PyTorch: the sizes of its run and the plot of what the
loop recorded (the loop, its loss, optimizer and schedule are written on the chapter's page)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.sizes import (
    BERT,
    QUICK_LR,
    QUICK_START,
    T4_LR,
    T4_START,
    ChapterSizes,
    register_sizes,
)
from sbert_tutor.book.weak_start import Start, WeakStart

__all__ = ["LoopSizes", "SIZES", "plot_loss_and_rate"]


@dataclass(frozen=True, kw_only=True)
class LoopSizes(ChapterSizes):
    """One run of the reader's loop on STSb train: ``epochs`` passes of ``batch_size`` pairs
    from ``start`` at peak rate ``lr`` (warm-up over ``warmup_ratio`` of the steps), the batch
    order drawn from ``seed``; then ``check_steps`` steps of it against the library's Trainer."""

    start: str | Start | WeakStart
    epochs: int
    batch_size: int
    lr: float
    warmup_ratio: float = 0.1
    seed: int = 0
    check_steps: int = 3


#: Per profile. quick: one pass over the 5,749 STSb train pairs from the weak one-layer start,
#: which has room to learn (:mod:`sbert_tutor.book.weak_start`); t4: from the pre-trained MiniLM,
#: never trained on sentence pairs; paper: SBERT-STSb's BERT-base with mean pooling, 4 epochs
#: (the setting of sentence-transformers' STSb example).
SIZES: dict[str, LoopSizes] = register_sizes(
    "03a_training_loop",
    {
        "quick": LoopSizes(start=QUICK_START, epochs=1, batch_size=16, lr=QUICK_LR),
        "t4": LoopSizes(start=T4_START, epochs=1, batch_size=16, lr=T4_LR),
        "paper": LoopSizes(start=Start(BERT, "mean"), epochs=4, batch_size=16, lr=2e-5),
    },
)


def plot_loss_and_rate(losses: Sequence[float], rates: Sequence[float], window: int = 20, ax=None):
    """The loop's loss per step (faint), its moving average over ``window`` steps, and the
    learning rate each step used (right axis, dashed)."""
    ax = new_axes(ax)
    steps = np.arange(len(losses))
    loss = np.asarray(losses, dtype=float)
    ax.plot(steps, loss, alpha=0.25, color="C0")
    smooth = np.convolve(loss, np.ones(window) / window, "valid") if len(loss) >= window else loss
    ax.plot(steps[len(steps) - len(smooth) :], smooth, color="C0", label="loss (moving average)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(f"training loss, moving average over {window} steps")
    rate = ax.twinx()
    rate.plot(steps, rates, color="C1", linestyle="--", label="learning rate")
    rate.set_ylabel("learning rate")
    rate.set_ylim(bottom=0)
    lines = ax.get_lines()[1:] + rate.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], fontsize=8, loc="upper right")
    return ax
