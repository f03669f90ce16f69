"""Plot primitives (:func:`new_axes`, :func:`new_panels`) and the figures several chapters share:
a similarity heatmap (chapter 1) and loss curves (chapters 6-11). Each plot function takes
computed results and returns the axes; a chapter's own figures live in its module.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from sbert_tutor.training import TrainingRecord

__all__ = ["new_axes", "new_panels", "plot_loss_curves", "plot_similarity_matrix"]


def new_axes(ax=None, figsize=(7, 4)):
    """``ax``, or the axes of a new figure."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def new_panels(axes, cols: int, figsize: tuple[float, float], rows: int = 1):
    """``axes``, or a flat array of ``rows * cols`` panels of a new figure."""
    import matplotlib.pyplot as plt

    if axes is None:
        axes = plt.subplots(rows, cols, figsize=figsize, squeeze=False)[1].ravel()
    return axes


def plot_similarity_matrix(matrix: np.ndarray, labels: list[str], ax=None):
    """A heatmap of pairwise cosine similarities with the sentences as labels."""
    ax = new_axes(ax, figsize=(6, 5))
    image = ax.imshow(matrix, vmin=-0.1, vmax=1.0, cmap="viridis")
    short = [s if len(s) <= 40 else s[:37] + "..." for s in labels]
    ax.set_xticks(range(len(labels)), short, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), short, fontsize=8)
    for i in range(len(labels)):
        for j in range(len(labels)):
            ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7, color="w")
    ax.figure.colorbar(image, ax=ax, label="cosine")
    return ax


def plot_loss_curves(records: Mapping[str, TrainingRecord], ax=None, window: int = 10):
    """Training loss (moving average over ``window`` steps) per named run."""
    ax = new_axes(ax)
    for name, record in records.items():
        steps = record.steps_frame()
        ax.plot(steps["step"], steps["loss"], alpha=0.25)
        ax.plot(
            steps["step"], record.smoothed_loss(window), label=name, color=ax.lines[-1].get_color()
        )
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(f"training loss (moving average over {window} steps)")
    ax.legend(fontsize=8)
    return ax
