r"""Learning-rate schedules: linear warm-up, then linear decay to zero (SBERT's schedule).

With :math:`W` warm-up steps, :math:`T` steps in total and base rate :math:`\eta`, the rate used
by optimizer step :math:`s = 0, 1, \dots, T-1` is :math:`\eta\, m(s)` with

.. math::

    m(s) = \begin{cases}
        s / W & s < W \\
        \max\bigl(0,\ (T - s) / (T - W)\bigr) & s \ge W
    \end{cases}

(the convention of ``transformers.get_linear_schedule_with_warmup``: the very first step has
rate 0 when :math:`W > 0`). ``constant`` keeps :math:`m(s) = 1` after the warm-up.
SBERT warms up over 10% of the training steps: :math:`W = \lceil 0.1\, T \rceil`.
"""

from __future__ import annotations

import math

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

__all__ = ["WarmupSchedule", "lr_multiplier", "make_scheduler", "warmup_steps_for"]

SCHEDULES = ("linear", "constant")


def warmup_steps_for(total_steps: int, warmup_ratio: float) -> int:
    r""":math:`W = \lceil r\, T \rceil` warm-up steps for ratio :math:`r` of :math:`T` steps.

    Example:
        >>> warmup_steps_for(100, 0.1), warmup_steps_for(360, 0.1), warmup_steps_for(5, 0.0)
        (10, 36, 0)
    """
    if not 0.0 <= warmup_ratio <= 1.0:
        raise ValueError(f"warmup_ratio must be in [0, 1], got {warmup_ratio!r}")
    if total_steps < 0:
        raise ValueError(f"total_steps must be >= 0, got {total_steps!r}")
    return math.ceil(total_steps * warmup_ratio)


def lr_multiplier(
    step: int, warmup_steps: int, total_steps: int, schedule: str = "linear"
) -> float:
    """:math:`m(s)` of the module docstring: the factor applied to the base rate at ``step``.

    Example:
        >>> [lr_multiplier(s, 10, 100) for s in (0, 5, 10, 55, 100)]
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if step < warmup_steps:
        return step / warmup_steps
    if schedule == "constant":
        return 1.0
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


class WarmupSchedule:
    """:func:`lr_multiplier` as a picklable callable for ``torch.optim.lr_scheduler.LambdaLR``."""

    def __init__(self, warmup_steps: int, total_steps: int, schedule: str = "linear") -> None:
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
        if warmup_steps < 0 or total_steps < 1:
            raise ValueError(
                f"need warmup_steps >= 0 and total_steps >= 1, got {warmup_steps}, {total_steps}"
            )
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.schedule = schedule

    def __call__(self, step: int) -> float:
        return lr_multiplier(step, self.warmup_steps, self.total_steps, self.schedule)


def make_scheduler(
    optimizer: Optimizer, warmup_steps: int, total_steps: int, schedule: str = "linear"
) -> LambdaLR:
    """A ``LambdaLR`` following :func:`lr_multiplier`; call ``.step()`` after each optimizer step."""
    return LambdaLR(optimizer, WarmupSchedule(warmup_steps, total_steps, schedule))
