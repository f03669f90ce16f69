r"""Diagrams of the book: architectures and loss layouts, drawn with matplotlib.

Each function draws one diagram and returns its :class:`~matplotlib.figure.Figure`. Nothing is
random, so a diagram is the same on every build. The layout is in inches (one data unit is one
inch of the figure). A figure is at most 7 inches wide (700 px at matplotlib's 100 dpi), which
the book's narrowest text column (624 px) shows at 90%, and its text is at least 9 points.

Boxes are :class:`~matplotlib.patches.FancyBboxPatch` with ``gid="box"``, arrows
:class:`~matplotlib.patches.FancyArrowPatch` with ``gid="arrow"`` and the cells of the two
matrix diagrams :class:`~matplotlib.patches.Rectangle` with ``gid`` set to the cell's role, so a
test can count what was drawn.

==================================  ============================================================
chapter                             diagram
==================================  ============================================================
2 cost of cross-encoders            :func:`cross_vs_bi_encoder`
5 MS MARCO                          :func:`retrieve_then_rerank`
6 classification objective          :func:`sbert_training_vs_inference`
8 triplet objective                 :func:`triplet_network`
9 multiple negatives ranking        :func:`in_batch_logit_matrix`
10 SupMPN                           :func:`supmpn_denominator`
==================================  ============================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FONT = 10
"""Font size (points) of the text in boxes; titles are one point larger."""

MAX_WIDTH = 7.0
"""The widest a diagram may be, in inches: the book's text column."""

COLORS = {
    "input": "#f2f2f2",
    "encoder": "#cfe2f3",
    "pooling": "#d9ead3",
    "vector": "#fff2cc",
    "head": "#fce5cd",
    "score": "#ead1dc",
    "offline": "#eeeeee",
}

# Roles of the cells of the two matrix diagrams, with their colours and legend labels.
LOGIT_ROLES = {
    "target": ("#6aa84f", "target (own positive)"),
    "in-batch negative": ("#cfe2f3", "in-batch negative"),
    "own hard negative": ("#cc4125", "own hard negative"),
    "hard negative": ("#f4cccc", "other hard negative"),
}
SUPMPN_ROLES = {
    "numerator": ("#6aa84f", "numerator: the positive $p_{ik}$"),
    "left out": ("#ffffff", "left out: the anchor's other positives"),
    "in-batch negative": ("#cfe2f3", "other anchors' positives"),
    "own hard negative": ("#cc4125", "the anchor's own hard negatives"),
    "hard negative": ("#f4cccc", "other anchors' hard negatives"),
}


def _canvas(width: float, height: float) -> tuple[Figure, Axes]:
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


def _box(ax: Axes, x: float, y: float, w: float, h: float, text: str, kind: str) -> tuple:
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


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], **style) -> None:
    """An arrow from ``start`` to ``end`` (data coordinates)."""
    from matplotlib.patches import FancyArrowPatch

    options = {"arrowstyle": "-|>", "mutation_scale": 10, "color": "#444444", "linewidth": 1.0}
    options.update(style)
    ax.add_patch(FancyArrowPatch(start, end, shrinkA=1, shrinkB=1, gid="arrow", **options))


def _title(ax: Axes, x: float, y: float, text: str) -> None:
    ax.text(x, y, text, ha="center", va="center", fontsize=FONT + 1, fontweight="bold")


def _shared(
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


def cross_vs_bi_encoder() -> Figure:
    r"""A cross-encoder (one transformer pass per pair) beside a bi-encoder (one per sentence).

    Left: ``[CLS] A [SEP] B [SEP]`` goes through the transformer once and a linear head gives one
    score. Right: A and B go through the same transformer separately, are pooled to :math:`u`
    and :math:`v`, and compared by :math:`\cos(u, v)` (book chapter 2).
    """
    fig, ax = _canvas(7.0, 4.3)
    _title(ax, 1.75, 4.05, "Cross-encoder")
    _title(ax, 5.25, 4.05, "Bi-encoder (SBERT)")
    ax.plot([3.5, 3.5], [0.1, 4.2], color="#999999", lw=0.6)

    pair = _box(ax, 1.75, 0.4, 3.1, 0.5, "[CLS] A [SEP] B [SEP]", "input")
    bert = _box(ax, 1.75, 1.45, 3.1, 0.8, "transformer\n(A and B attend to each other)", "encoder")
    head = _box(ax, 1.75, 2.5, 2.0, 0.5, "linear head", "head")
    score = _box(ax, 1.75, 3.35, 2.0, 0.5, "score(A, B)", "score")
    _arrow(ax, pair["top"], bert["bottom"])
    _arrow(ax, bert["top"], head["bottom"])
    _arrow(ax, head["top"], score["bottom"])

    ends = {}
    for x, name, vec in ((4.3, "A", "u"), (6.2, "B", "v")):
        sentence = _box(ax, x, 0.4, 1.3, 0.5, f"sentence {name}", "input")
        encoder = _box(ax, x, 1.3, 1.3, 0.5, "transformer", "encoder")
        pooling = _box(ax, x, 2.05, 1.3, 0.45, "mean pooling", "pooling")
        vector = _box(ax, x, 2.75, 0.6, 0.45, f"${vec}$", "vector")
        _arrow(ax, sentence["top"], encoder["bottom"])
        _arrow(ax, encoder["top"], pooling["bottom"])
        _arrow(ax, pooling["top"], vector["bottom"])
        ends[name] = (encoder, vector)
    _shared(ax, ends["A"][0]["right"], ends["B"][0]["left"])
    cosine = _box(ax, 5.25, 3.5, 1.4, 0.5, r"$\cos(u, v)$", "score")
    _arrow(ax, ends["A"][1]["top"], cosine["left"])
    _arrow(ax, ends["B"][1]["top"], cosine["right"])
    return fig


def sbert_training_vs_inference() -> Figure:
    r"""SBERT trained with the softmax classifier on :math:`(u, v, |u-v|)`, used with the cosine.

    Left (training, book chapter 6): both sentences through the same encoder and pooling, the
    concatenation :math:`[u; v; |u-v|]`, the classifier :math:`\operatorname{softmax}(W_t x + b)`
    and the three NLI classes. Right (inference): the same encoder, and :math:`\cos(u, v)`; the
    classifier is gone.
    """
    fig, ax = _canvas(7.0, 5.0)
    _title(ax, 2.1, 4.75, "Training: classification objective")
    _title(ax, 5.75, 4.75, "Inference")
    ax.plot([4.4, 4.4], [0.1, 4.9], color="#999999", lw=0.6)

    def siamese(centres: tuple[float, float], width: float, label: bool) -> tuple[dict, dict]:
        vectors = []
        encoders = []
        for x, name, vec in ((centres[0], "1", "u"), (centres[1], "2", "v")):
            sentence = _box(ax, x, 0.4, width, 0.5, f"sentence {name}", "input")
            encoder = _box(ax, x, 1.35, width, 0.7, "transformer\n+ pooling", "encoder")
            vector = _box(ax, x, 2.25, 0.6, 0.45, f"${vec}$", "vector")
            _arrow(ax, sentence["top"], encoder["bottom"])
            _arrow(ax, encoder["top"], vector["bottom"])
            vectors.append(vector)
            encoders.append(encoder)
        _shared(ax, encoders[0]["right"], encoders[1]["left"], label)
        return vectors[0], vectors[1]

    u, v = siamese((0.9, 3.3), 1.5, True)
    features = _box(ax, 2.1, 3.05, 2.4, 0.5, r"$(u,\ v,\ |u-v|)$", "vector")
    _arrow(ax, u["top"], (1.3, features["bottom"][1]))
    _arrow(ax, v["top"], (2.9, features["bottom"][1]))
    head = _box(ax, 2.1, 3.75, 2.4, 0.5, r"softmax$(W_t\,x + b)$", "head")
    _arrow(ax, features["top"], head["bottom"])
    ax.text(
        2.1,
        4.3,
        "entailment / neutral / contradiction",
        ha="center",
        va="center",
        fontsize=FONT,
    )
    _arrow(ax, head["top"], (2.1, 4.17))

    u, v = siamese((5.1, 6.4), 1.0, False)
    cosine = _box(ax, 5.75, 3.3, 1.3, 0.5, r"$\cos(u, v)$", "score")
    _arrow(ax, u["top"], cosine["left"])
    _arrow(ax, v["top"], cosine["right"])
    ax.text(
        5.75,
        4.05,
        "no classifier:\n$W_t$ is discarded",
        ha="center",
        va="center",
        fontsize=FONT,
        style="italic",
    )
    return fig


def triplet_network() -> Figure:
    r"""The triplet network: anchor, positive and negative through one encoder, two distances and
    the hinge :math:`\max(\Vert s_a - s_p \Vert - \Vert s_a - s_n \Vert + \varepsilon, 0)`
    (book chapter 8).
    """
    fig, ax = _canvas(6.4, 4.6)
    encoders = {}
    vectors = {}
    for x, role, name in ((1.0, "a", "anchor"), (3.2, "p", "positive"), (5.4, "n", "negative")):
        sentence = _box(ax, x, 0.4, 1.6, 0.5, f"{name} ${role}$", "input")
        encoder = _box(ax, x, 1.35, 1.6, 0.7, "transformer\n+ pooling", "encoder")
        vector = _box(ax, x, 2.25, 0.7, 0.45, f"$s_{role}$", "vector")
        _arrow(ax, sentence["top"], encoder["bottom"])
        _arrow(ax, encoder["top"], vector["bottom"])
        encoders[role], vectors[role] = encoder, vector
    _shared(ax, encoders["a"]["right"], encoders["p"]["left"])
    _shared(ax, encoders["p"]["right"], encoders["n"]["left"])
    positive = _box(ax, 2.1, 3.1, 1.9, 0.5, r"$\Vert s_a - s_p \Vert$", "score")
    negative = _box(ax, 4.3, 3.1, 1.9, 0.5, r"$\Vert s_a - s_n \Vert$", "score")
    y = positive["bottom"][1]
    _arrow(ax, vectors["a"]["top"], (1.6, y))
    _arrow(ax, vectors["p"]["top"], (2.6, y))
    _arrow(ax, vectors["a"]["top"], (3.8, y))
    _arrow(ax, vectors["n"]["top"], (4.8, y))
    loss = _box(
        ax,
        3.2,
        4.1,
        5.0,
        0.55,
        r"$\max\left(\Vert s_a - s_p \Vert - \Vert s_a - s_n \Vert + \varepsilon,\ 0\right)$",
        "head",
    )
    _arrow(ax, positive["top"], (2.1, loss["bottom"][1]))
    _arrow(ax, negative["top"], (4.3, loss["bottom"][1]))
    return fig


def logit_matrix_roles(n: int, hard_negatives: bool = True) -> np.ndarray:
    r"""The role of each logit :math:`z_{ij}` of MNRL's :math:`N \times N` (or :math:`N \times 2N`
    with hard negatives) matrix, rows the anchors :math:`a_i`, columns the candidates
    :math:`p_1..p_N` then :math:`n_1..n_N` (book chapter 9).

    ``"target"`` on the diagonal (the row's positive), ``"in-batch negative"`` elsewhere among
    the positives, ``"own hard negative"`` for :math:`n_i` in row :math:`i` and
    ``"hard negative"`` for the other anchors' hard negatives.
    """
    if n < 1:
        raise ValueError(f"the batch needs at least one pair, got n={n}")
    positives = np.full((n, n), "in-batch negative", dtype=object)
    np.fill_diagonal(positives, "target")
    if not hard_negatives:
        return positives
    negatives = np.full((n, n), "hard negative", dtype=object)
    np.fill_diagonal(negatives, "own hard negative")
    return np.concatenate([positives, negatives], axis=1)


def _legend(ax: Axes, roles: dict, x: float, y: float, used: set[str], step: float = 0.3) -> None:
    """One coloured square and a label per role used, from ``(x, y)`` downwards."""
    from matplotlib.patches import Rectangle

    for role, (color, label) in roles.items():
        if role not in used:
            continue
        ax.add_patch(
            Rectangle((x, y - 0.1), 0.2, 0.2, facecolor=color, edgecolor="#444444", lw=0.6)
        )
        ax.text(x + 0.3, y, label, ha="left", va="center", fontsize=FONT)
        y -= step


def _row_labels(ax: Axes, labels: list[str], x0: float, top: float, size: float) -> None:
    """One label per row of a cell grid, right-aligned just left of it, row 0 at the top."""
    for i, label in enumerate(labels):
        ax.text(x0 - 0.08, top - (i + 0.5) * size, label, ha="right", va="center", fontsize=FONT)


def _cells(
    ax: Axes, roles: np.ndarray, x0: float, y0: float, size: float, palette: dict, labels=None
) -> None:
    """One square per entry of ``roles``, row 0 at the top, coloured by role."""
    from matplotlib.patches import Rectangle

    rows, cols = roles.shape
    for i in range(rows):
        for j in range(cols):
            role = roles[i, j]
            x, y = x0 + j * size, y0 + (rows - 1 - i) * size
            ax.add_patch(
                Rectangle(
                    (x, y),
                    size,
                    size,
                    facecolor=palette[role][0],
                    edgecolor="#444444",
                    lw=0.6,
                    hatch="///" if role == "left out" else None,
                    gid=role,
                )
            )
            if labels is not None:
                ax.text(
                    x + size / 2,
                    y + size / 2,
                    labels(i, j),
                    ha="center",
                    va="center",
                    fontsize=FONT - 1,
                    color="white"
                    if role in ("target", "own hard negative", "numerator")
                    else "black",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1}
                    if role == "left out"
                    else None,
                )


def in_batch_logit_matrix(n: int = 4, hard_negatives: bool = True) -> Figure:
    r"""MNRL's logit matrix :math:`z_{ij} = s \cos(a_i, c_j)` for a batch of ``n`` pairs: one row
    per anchor, a softmax along each row, its target on the diagonal, and (with
    ``hard_negatives``) the :math:`N` hard-negative columns every anchor also sees (book
    chapter 9).
    """
    roles = logit_matrix_roles(n, hard_negatives)
    cols = roles.shape[1]
    size = min(0.5, 3.6 / cols)
    x0, y0 = 0.5, 0.75
    legend_x = x0 + cols * size + 0.35
    fig, ax = _canvas(min(MAX_WIDTH, legend_x + 2.3), y0 + n * size + 0.9)
    _cells(ax, roles, x0, y0, size, LOGIT_ROLES, labels=lambda i, j: f"$z_{{{i + 1}{j + 1}}}$")
    top = y0 + n * size
    _row_labels(ax, [f"$a_{i + 1}$" for i in range(n)], x0, top, size)
    for j in range(cols):
        name = f"p_{j + 1}" if j < n else f"n_{j - n + 1}"
        ax.text(
            x0 + (j + 0.5) * size, top + 0.08, f"${name}$", ha="center", va="bottom", fontsize=FONT
        )
    ax.text(x0 + n * size / 2, top + 0.5, "positives", ha="center", va="center", fontsize=FONT)
    if hard_negatives:
        ax.text(
            x0 + 1.5 * n * size,
            top + 0.5,
            "hard negatives",
            ha="center",
            va="center",
            fontsize=FONT,
        )
        ax.plot([x0 + n * size] * 2, [y0 - 0.05, top + 0.6], color="black", lw=1.5)
    _arrow(ax, (x0, y0 - 0.22), (x0 + cols * size, y0 - 0.22))
    ax.text(
        x0 + cols * size / 2,
        y0 - 0.35,
        r"softmax along each row $i$; the loss is the mean of $-\log P_{ii}$",
        ha="center",
        va="top",
        fontsize=FONT - 1,
    )
    _legend(ax, LOGIT_ROLES, legend_x, top - 0.15, set(roles.ravel()))
    return fig


def supmpn_denominator_roles(
    n: int, p: int, q: int, anchor: int = 0, positive: int = 0
) -> np.ndarray:
    r"""The role of every candidate in SupMPN's denominator :math:`D_{ik}` (eq. 7, book chapter 10)
    for anchor :math:`i` = ``anchor`` and its positive :math:`k` = ``positive`` (0-based).

    Rows are the batch's groups :math:`j = 1..N`, columns :math:`p_{j1}..p_{jP}` then
    :math:`n_{j1}..n_{jQ}`. Roles: ``"numerator"`` (:math:`p_{ik}`, also in the denominator),
    ``"left out"`` (:math:`p_{im}, m \neq k`), ``"in-batch negative"`` (:math:`p_{jm}, j \neq
    i`), ``"own hard negative"`` (:math:`n_{iq}`) and ``"hard negative"`` (:math:`n_{jq}, j \neq
    i`). The denominator holds :math:`1 + (N-1)P + NQ` terms.
    """
    if min(n, p) < 1 or q < 0:
        raise ValueError(f"need n >= 1, p >= 1 and q >= 0, got n={n}, p={p}, q={q}")
    if not (0 <= anchor < n and 0 <= positive < p):
        raise ValueError(
            f"anchor must be in [0, {n}) and positive in [0, {p}), got {anchor} and {positive}"
        )
    roles = np.empty((n, p + q), dtype=object)
    roles[:, :p] = "in-batch negative"
    roles[:, p:] = "hard negative"
    roles[anchor, :p] = "left out"
    roles[anchor, positive] = "numerator"
    roles[anchor, p:] = "own hard negative"
    return roles


def supmpn_denominator(
    n: int = 3, p: int = 2, q: int = 2, anchor: int = 0, positive: int = 0
) -> Figure:
    r"""SupMPN's denominator :math:`D_{ik}` drawn as the batch's candidates, one row per group
    (anchor :math:`a_j` with its :math:`P` positives and :math:`Q` hard negatives), coloured by
    their role for anchor ``anchor`` and positive ``positive`` (book chapter 10).
    """
    roles = supmpn_denominator_roles(n, p, q, anchor, positive)
    size = 0.6
    cols = p + q
    x0, y0 = 1.0, 0.35
    top = y0 + n * size
    fig, ax = _canvas(7.0, top + 0.85)
    _cells(
        ax,
        roles,
        x0,
        y0,
        size,
        SUPMPN_ROLES,
        labels=lambda j, c: f"$p_{{{j + 1}{c + 1}}}$" if c < p else f"$n_{{{j + 1}{c - p + 1}}}$",
    )
    _row_labels(ax, [f"group of $a_{j + 1}$" for j in range(n)], x0, top, size)
    ax.text(x0 + p * size / 2, top + 0.1, "positives", ha="center", va="bottom", fontsize=FONT)
    if q:
        ax.text(
            x0 + (p + q / 2) * size,
            top + 0.1,
            "hard negatives",
            ha="center",
            va="bottom",
            fontsize=FONT,
        )
        ax.plot([x0 + p * size] * 2, [y0 - 0.05, top + 0.05], color="black", lw=1.5)
    i, k = anchor + 1, positive + 1
    terms = 1 + (n - 1) * p + n * q
    legend_x = x0 + cols * size + 0.45
    _title(
        ax,
        3.5,
        top + 0.6,
        f"The denominator $D_{{{i}{k}}}$ of anchor $a_{i}$ and its positive $p_{{{i}{k}}}$",
    )
    _legend(ax, SUPMPN_ROLES, legend_x, top - 0.1, set(roles.ravel()), step=0.27)
    ax.text(
        legend_x,
        y0 + 0.2,
        f"$N = {n},\\ P = {p},\\ Q = {q}$:\n$1 + (N-1)P + NQ = {terms}$ terms",
        ha="left",
        va="center",
        fontsize=FONT,
    )
    return fig


def retrieve_then_rerank(k: int = 100, top: int = 10) -> Figure:
    r"""Retrieve-then-rerank: a bi-encoder retrieves ``k`` candidates from the embedded corpus,
    a cross-encoder re-scores the ``k`` (query, passage) pairs and the best ``top`` are returned
    (book chapter 5).
    """
    fig, ax = _canvas(7.0, 3.9)
    ax.text(0.1, 3.6, "once, offline", ha="left", va="center", fontsize=FONT, style="italic")
    ax.text(0.1, 2.35, "per query", ha="left", va="center", fontsize=FONT, style="italic")
    corpus = _box(ax, 1.2, 3.05, 1.9, 0.7, "corpus\n(millions of passages)", "input")
    encoder = _box(ax, 3.5, 3.05, 1.9, 0.7, "bi-encoder:\nencode every passage", "encoder")
    index = _box(ax, 5.8, 3.05, 1.9, 0.7, "passage\nembeddings", "vector")
    _arrow(ax, corpus["right"], encoder["left"])
    _arrow(ax, encoder["right"], index["left"])
    ax.plot([0.1, 6.9], [2.55, 2.55], color="#999999", lw=0.6, ls=":")

    query = _box(ax, 1.2, 1.8, 1.9, 0.6, "query", "input")
    query_encoder = _box(ax, 3.5, 1.8, 1.9, 0.6, "bi-encoder:\nencode the query", "encoder")
    search = _box(ax, 5.8, 1.8, 1.9, 0.6, "nearest-neighbour\nsearch (cosine)", "score")
    _arrow(ax, query["right"], query_encoder["left"])
    _arrow(ax, query_encoder["right"], search["left"])
    _arrow(ax, index["bottom"], search["top"])

    candidates = _box(ax, 5.8, 0.55, 1.9, 0.6, f"top {k} candidates", "vector")
    rerank = _box(ax, 3.5, 0.55, 1.9, 0.6, f"cross-encoder:\nscore {k} pairs", "head")
    result = _box(ax, 1.2, 0.55, 1.9, 0.6, f"re-ranked top {top}", "score")
    _arrow(ax, search["bottom"], candidates["top"])
    _arrow(ax, candidates["left"], rerank["right"])
    _arrow(ax, rerank["left"], result["right"])
    return fig
