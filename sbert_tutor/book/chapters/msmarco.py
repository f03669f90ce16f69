"""Chapter 5, MS MARCO: its sizes, deviations (:func:`paper_aspects`) and figures, and progress
bars that stay short in an executed notebook (:func:`progress_every`, which chapter 15 uses too).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from sbert_tutor.book import published
from sbert_tutor.book.deviations import Aspect
from sbert_tutor.book.drawing import FONT, arrow, box, canvas
from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.sizes import ChapterSizes, register_sizes

__all__ = [
    "MSMarcoSizes",
    "SIZES",
    "paper_aspects",
    "plot_first_relevant_rank",
    "progress_every",
    "retrieve_then_rerank",
]


@dataclass(frozen=True, kw_only=True)
class MSMarcoSizes(ChapterSizes):
    """Chapter 5 (MS MARCO): the corpus (``mini`` = ``corpus_mini.tsv``, ``full`` = the 8.8M
    collection from the hub) and the two datasets evaluated on it."""

    corpus: str
    datasets: tuple[str, str]


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, MSMarcoSizes] = register_sizes(
    "05_msmarco",
    {
        "quick": MSMarcoSizes(corpus="mini", datasets=("msmarco-dev-subset", "trec-dl19")),
        # the 8.8M collection is hours of encoding on a T4: the 16,799-passage mini corpus
        "t4": MSMarcoSizes(corpus="mini", datasets=("msmarco-dev-subset", "trec-dl19")),
        "paper": MSMarcoSizes(corpus="full", datasets=("msmarco-dev", "trec-dl19")),
    },
)


def paper_aspects() -> list[Aspect]:
    """The paper profile against sentence-transformers' MS MARCO documentation."""
    src = published.Source(published.SBERT_DOCS_MSMARCO)
    return [
        Aspect("corpus", "full", src, lambda s: s.corpus),
        Aspect("queries", "msmarco-dev", src, lambda s: s.datasets[0]),
        Aspect(
            "TREC DL19 task",
            "re-ranking of candidate lists",
            src,
            lambda s: "retrieval from the corpus",
            "the documentation's DL19 column re-ranks given candidate lists (its label says so); "
            "the chapter retrieves from the corpus, a different task: the two are not set side "
            "by side as one number",
        ),
    ]


def retrieve_then_rerank(k: int = 100, top: int = 10) -> Figure:
    """Retrieve-then-rerank: a bi-encoder retrieves ``k`` candidates from the embedded corpus,
    a cross-encoder re-scores the ``k`` (query, passage) pairs and the best ``top`` are returned."""
    fig, ax = canvas(7.0, 3.9)
    ax.text(0.1, 3.6, "once, offline", ha="left", va="center", fontsize=FONT, style="italic")
    ax.text(0.1, 2.35, "per query", ha="left", va="center", fontsize=FONT, style="italic")
    corpus = box(ax, 1.2, 3.05, 1.9, 0.7, "corpus\n(millions of passages)", "input")
    encoder = box(ax, 3.5, 3.05, 1.9, 0.7, "bi-encoder:\nencode every passage", "encoder")
    index = box(ax, 5.8, 3.05, 1.9, 0.7, "passage\nembeddings", "vector")
    arrow(ax, corpus["right"], encoder["left"])
    arrow(ax, encoder["right"], index["left"])
    ax.plot([0.1, 6.9], [2.55, 2.55], color="#999999", lw=0.6, ls=":")

    query = box(ax, 1.2, 1.8, 1.9, 0.6, "query", "input")
    query_encoder = box(ax, 3.5, 1.8, 1.9, 0.6, "bi-encoder:\nencode the query", "encoder")
    search = box(ax, 5.8, 1.8, 1.9, 0.6, "nearest-neighbour\nsearch (cosine)", "score")
    arrow(ax, query["right"], query_encoder["left"])
    arrow(ax, query_encoder["right"], search["left"])
    arrow(ax, index["bottom"], search["top"])

    candidates = box(ax, 5.8, 0.55, 1.9, 0.6, f"top {k} candidates", "vector")
    rerank = box(ax, 3.5, 0.55, 1.9, 0.6, f"cross-encoder:\nscore {k} pairs", "head")
    result = box(ax, 1.2, 0.55, 1.9, 0.6, f"re-ranked top {top}", "score")
    arrow(ax, search["bottom"], candidates["top"])
    arrow(ax, candidates["left"], rerank["right"])
    arrow(ax, rerank["left"], result["right"])
    return fig


def plot_first_relevant_rank(ranks: pd.Series, top_k: int = 10, ax=None, label: str | None = None):
    """How many queries find their first relevant passage at rank 1, 2, ..., ``top_k`` or later.

    ``ranks``: one query a row, the rank (from 1) of its first relevant passage (NaN = not
    retrieved). The last bar counts queries with no relevant passage in the top ``top_k``.
    """
    ax = new_axes(ax, figsize=(7, 3.5))
    values = ranks.to_numpy(dtype=float)
    counts = [int(np.sum(values == r)) for r in range(1, top_k + 1)]
    counts.append(int(np.sum(np.isnan(values) | (values > top_k))))
    labels = [str(r) for r in range(1, top_k + 1)] + [f">{top_k}"]
    ax.bar(labels, counts, color=["C0"] * top_k + ["C3"], label=label)
    ax.set_xlabel("rank of the first relevant passage")
    ax.set_ylabel("queries")
    if label:
        ax.legend(fontsize=8)
    return ax


@contextmanager
def progress_every(seconds: float = 30.0) -> Iterator[None]:
    """Inside the block, every tqdm bar redraws at most once every ``seconds``.

    A notebook run outside a live front end (nbmake, a book build) keeps each redraw of a text
    bar as one more output: a five-minute encode of 263 batches leaves hundreds of them. Here
    the bar still shows how far the work has got, in a dozen lines. Bars that set their own
    ``mininterval`` / ``maxinterval`` keep them.
    """
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds!r}")
    from tqdm import std

    init = std.tqdm.__init__

    def throttled(self, *args, **kwargs):
        kwargs.setdefault("mininterval", seconds)
        kwargs.setdefault("maxinterval", max(seconds, 10.0))
        init(self, *args, **kwargs)

    std.tqdm.__init__ = throttled
    try:
        yield
    finally:
        std.tqdm.__init__ = init
