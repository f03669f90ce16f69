"""Diagram primitives (boxes, arrows, titles, shared encoders, legends, matrix cells) for the
chapters' diagrams, which live in their modules. Nothing is random, so a diagram is the same on
every build. One data unit is one inch; a figure is at most 7 inches wide (700 px at 100 dpi,
shown at 90% in the book's narrowest text column, 624 px), its text at least 9 points. Patches
carry a ``gid`` (``"box"``, ``"arrow"``, a cell's role) so that a test can count what was drawn.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = [
    "COLORS",
    "FONT",
    "MAX_WIDTH",
    "arrow",
    "box",
    "canvas",
    "cells",
    "legend",
    "row_labels",
    "shared_encoder",
    "title",
]

#: Font size (points) of the text in boxes; titles are one point larger.
FONT = 10
#: The widest a diagram may be, in inches: the book's text column.
MAX_WIDTH = 7.0
#: Fill colour of each kind of box.
COLORS = {
    "input": "#f2f2f2",
    "encoder": "#cfe2f3",
    "pooling": "#d9ead3",
    "vector": "#fff2cc",
    "head": "#fce5cd",
    "score": "#ead1dc",
    "offline": "#eeeeee",
}


def canvas(width: float, height: float) -> tuple[Figure, Axes]:
    """A figure of ``width`` x ``height`` inches whose data coordinates are inches."""
    import matplotlib.pyplot as plt

    if width > MAX_WIDTH:
        raise ValueError(f"a diagram is at most {MAX_WIDTH} inches wide, got {width}")
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def box(ax: Axes, x: float, y: float, w: float, h: float, text: str, kind: str) -> tuple:
    """A rounded box centred at ``(x, y)``; returns its (left, right, bottom, top) anchors."""
    from matplotlib.patches import FancyBboxPatch

    pad = 0.04
    patch = FancyBboxPatch(
        (x - w / 2 + pad, y - h / 2 + pad),
        w - 2 * pad,
        h - 2 * pad,
        boxstyle=f"round,pad={pad}",
        facecolor=COLORS[kind],
        edgecolor="#444444",
        linewidth=0.8,
        gid="box",
    )
    ax.add_patch(patch)
    ax.text(x, y, text, ha="center", va="center", fontsize=FONT)
    return {
        "left": (x - w / 2, y),
        "right": (x + w / 2, y),
        "bottom": (x, y - h / 2),
        "top": (x, y + h / 2),
    }


def arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], **style) -> None:
    """An arrow from ``start`` to ``end`` (data coordinates)."""
    from matplotlib.patches import FancyArrowPatch

    options = {"arrowstyle": "-|>", "mutation_scale": 10, "color": "#444444", "linewidth": 1.0}
    ax.add_patch(FancyArrowPatch(start, end, shrinkA=1, shrinkB=1, gid="arrow", **options | style))


def title(ax: Axes, x: float, y: float, text: str) -> None:
    ax.text(x, y, text, ha="center", va="center", fontsize=FONT + 1, fontweight="bold")


def shared_encoder(
    ax: Axes, left: tuple[float, float], right: tuple[float, float], label: bool = True
) -> None:
    """A dashed line between two encoders, labelled *shared weights*."""
    ax.plot([left[0], right[0]], [left[1], right[1]], ls="--", color="#444444", lw=0.8)
    if not label:
        return
    ax.text(
        (left[0] + right[0]) / 2,
        left[1] + 0.12,
        "shared\nweights",
        ha="center",
        va="bottom",
        fontsize=FONT - 1,
        style="italic",
    )


def legend(ax: Axes, roles: dict, x: float, y: float, used: set[str], step: float = 0.3) -> None:
    """One coloured square and a label per role used, from ``(x, y)`` downwards."""
    from matplotlib.patches import Rectangle

    for color, label in (v for r, v in roles.items() if r in used):
        ax.add_patch(
            Rectangle((x, y - 0.1), 0.2, 0.2, facecolor=color, edgecolor="#444444", lw=0.6)
        )
        ax.text(x + 0.3, y, label, ha="left", va="center", fontsize=FONT)
        y -= step


def row_labels(ax: Axes, labels: list[str], x0: float, top: float, size: float) -> None:
    """One label per row of a cell grid, right-aligned just left of it, row 0 at the top."""
    for i, label in enumerate(labels):
        ax.text(x0 - 0.08, top - (i + 0.5) * size, label, ha="right", va="center", fontsize=FONT)


def cells(
    ax: Axes, roles: np.ndarray, x0: float, y0: float, size: float, palette: dict, labels=None
) -> None:
    """One square per entry of ``roles``, row 0 at the top, coloured by role."""
    from matplotlib.patches import Rectangle

    rows = roles.shape[0]
    for (i, j), role in np.ndenumerate(roles):
        x, y = x0 + j * size, y0 + (rows - 1 - i) * size
        hatch = "///" if role == "left out" else None
        style = {"facecolor": palette[role][0], "edgecolor": "#444444", "lw": 0.6, "hatch": hatch}
        ax.add_patch(Rectangle((x, y), size, size, gid=role, **style))
        if labels is None:
            continue
        dark = role in ("target", "own hard negative", "numerator")
        ax.text(
            x + size / 2,
            y + size / 2,
            labels(i, j),
            ha="center",
            va="center",
            fontsize=FONT - 1,
            color="white" if dark else "black",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1} if hatch else None,
        )
