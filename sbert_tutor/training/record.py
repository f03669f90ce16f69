"""The loss curve of a run: one entry per optimizer step, plus the evaluation points.

``steps``: ``{"step", "epoch", "loss", "lr", "grad_norm"}`` per step (``step`` counts optimizer
steps from 1; ``lr`` is the rate that step used; ``grad_norm`` the gradient norm *before*
clipping; ``epoch`` is fractional, e.g. 0.5 half-way through the first epoch).
``evals``: ``{"step", "epoch", <metric>: value, ...}`` per evaluation (step 0 = before training).
Chapters plot ``record.steps_frame()`` and ``record.evals_frame()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["TrainingRecord"]


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


@dataclass
class TrainingRecord:
    """Loss curve and evaluation points of one training run (JSON-ready via :meth:`to_dict`)."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    evals: list[dict[str, Any]] = field(default_factory=list)

    def log_step(
        self, step: int, epoch: float, loss: float, lr: float, grad_norm: float | None
    ) -> None:
        self.steps.append(
            {
                "step": int(step),
                "epoch": round(float(epoch), 6),
                "loss": _finite_or_none(loss),
                "lr": float(lr),
                "grad_norm": _finite_or_none(grad_norm),
            }
        )

    def log_eval(self, step: int, epoch: float, metrics: dict[str, float]) -> None:
        self.evals.append({"step": int(step), "epoch": round(float(epoch), 6), **metrics})

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """The steps and the evaluation points as lists of plain dicts (JSON-ready)."""
        return {"steps": [dict(s) for s in self.steps], "evals": [dict(e) for e in self.evals]}

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> TrainingRecord:
        return cls(list(payload.get("steps", [])), list(payload.get("evals", [])))

    def steps_frame(self) -> pd.DataFrame:
        """One row a step: step, epoch, loss, lr, grad_norm."""
        return pd.DataFrame(self.steps, columns=["step", "epoch", "loss", "lr", "grad_norm"])

    def evals_frame(self) -> pd.DataFrame:
        """One row an evaluation: step, epoch and the metrics."""
        return pd.DataFrame(self.evals)

    def final_loss(self, window: int = 10) -> float:
        """Mean loss of the last ``window`` logged steps (NaN when none was logged)."""
        losses = [step["loss"] for step in self.steps[-window:] if step["loss"] is not None]
        return float(np.mean(losses)) if losses else float("nan")

    def smoothed_loss(self, window: int = 20) -> pd.Series:
        """Running mean of the loss over ``window`` steps (what the progress bar shows)."""
        frame = self.steps_frame()
        return frame["loss"].rolling(window, min_periods=1).mean().rename("loss (running mean)")
