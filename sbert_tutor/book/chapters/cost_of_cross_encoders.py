"""Chapter 2, the cost of cross-encoders: its sizes and its diagram (:func:`cross_vs_bi_encoder`).
The rates are measured and extrapolated on the chapter's page, with the timer, the durations in
words and the figure of :mod:`sbert_tutor.book.cost`.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from sbert_tutor.book.drawing import arrow, box, canvas, shared_encoder, title
from sbert_tutor.book.sizes import ChapterSizes, register_sizes

__all__ = ["CostSizes", "SIZES", "cross_vs_bi_encoder"]


@dataclass(frozen=True, kw_only=True)
class CostSizes(ChapterSizes):
    """Chapter 2 (the cost of cross-encoders): STSb test pairs the cross-encoder scores,
    sentences the bi-encoder encodes, and the batch size of both."""

    pairs: int
    sentences: int
    batch_size: int


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, CostSizes] = register_sizes(
    "02_cost_of_cross_encoders",
    {
        "quick": CostSizes(pairs=192, sentences=512, batch_size=32),
        "t4": CostSizes(pairs=4096, sentences=10000, batch_size=128),
        "paper": CostSizes(pairs=4096, sentences=10000, batch_size=128),
    },
)


def cross_vs_bi_encoder() -> Figure:
    r"""A cross-encoder (one transformer pass per pair) beside a bi-encoder (one per sentence).

    Left: ``[CLS] A [SEP] B [SEP]`` goes through the transformer once and a linear head gives one
    score. Right: A and B go through the same transformer separately, are pooled to :math:`u`
    and :math:`v`, and compared by :math:`\cos(u, v)` (book chapter 2).
    """
    fig, ax = canvas(7.0, 4.3)
    title(ax, 1.75, 4.05, "Cross-encoder")
    title(ax, 5.25, 4.05, "Bi-encoder (SBERT)")
    ax.plot([3.5, 3.5], [0.1, 4.2], color="#999999", lw=0.6)

    pair = box(ax, 1.75, 0.4, 3.1, 0.5, "[CLS] A [SEP] B [SEP]", "input")
    bert = box(ax, 1.75, 1.45, 3.1, 0.8, "transformer\n(A and B attend to each other)", "encoder")
    head = box(ax, 1.75, 2.5, 2.0, 0.5, "linear head", "head")
    score = box(ax, 1.75, 3.35, 2.0, 0.5, "score(A, B)", "score")
    arrow(ax, pair["top"], bert["bottom"])
    arrow(ax, bert["top"], head["bottom"])
    arrow(ax, head["top"], score["bottom"])

    ends = {}
    for x, name, vec in ((4.3, "A", "u"), (6.2, "B", "v")):
        sentence = box(ax, x, 0.4, 1.3, 0.5, f"sentence {name}", "input")
        encoder = box(ax, x, 1.3, 1.3, 0.5, "transformer", "encoder")
        pooling = box(ax, x, 2.05, 1.3, 0.45, "mean pooling", "pooling")
        vector = box(ax, x, 2.75, 0.6, 0.45, f"${vec}$", "vector")
        arrow(ax, sentence["top"], encoder["bottom"])
        arrow(ax, encoder["top"], pooling["bottom"])
        arrow(ax, pooling["top"], vector["bottom"])
        ends[name] = (encoder, vector)
    shared_encoder(ax, ends["A"][0]["right"], ends["B"][0]["left"])
    cosine = box(ax, 5.25, 3.5, 1.4, 0.5, r"$\cos(u, v)$", "score")
    arrow(ax, ends["A"][1]["top"], cosine["left"])
    arrow(ax, ends["B"][1]["top"], cosine["right"])
    return fig
