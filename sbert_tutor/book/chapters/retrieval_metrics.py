"""Chapter 4, retrieval metrics: its sizes and the measures as k grows (:func:`plot_metrics_vs_k`).
The worked example's rank-by-rank breakdown is on the page.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.sizes import ChapterSizes, register_sizes

__all__ = ["RetrievalMetricsSizes", "SIZES", "plot_metrics_vs_k"]


@dataclass(frozen=True, kw_only=True)
class RetrievalMetricsSizes(ChapterSizes):
    """Chapter 4 (retrieval metrics vs k): dev-subset queries (with their BM25 top-20s), TREC DL19
    queries (with their judged passages) and random other ``corpus_mini`` passages."""

    dev_queries: int | None = None
    dl19_queries: int | None = None
    random_passages: int | None = None


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them): all of them but in quick.
SIZES: dict[str, RetrievalMetricsSizes] = register_sizes(
    "04_retrieval_metrics",
    {
        "quick": RetrievalMetricsSizes(dev_queries=100, dl19_queries=10, random_passages=0),
        "t4": RetrievalMetricsSizes(),
        "paper": RetrievalMetricsSizes(),
    },
)


def plot_metrics_vs_k(table: pd.DataFrame, ax=None):
    """Each retrieval measure as a function of the cutoff k (book chapter 4).

    ``table``: one row a measure, one column a cutoff, as returned by
    :func:`sbert_tutor.evaluation.retrieval.evaluate_retrieval`. The k axis is logarithmic.
    """
    ax = new_axes(ax)
    ks = np.asarray(table.columns, dtype=float)
    dashed = {"accuracy", "map"}  # they coincide with recall / mrr when each query has R = 1
    marker = "." if len(ks) < 30 else None
    for name in table.index:
        style = "--" if name in dashed else "-"
        ax.plot(ks, table.loc[name].to_numpy(dtype=float), ls=style, marker=marker, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("cutoff k")
    ax.set_ylabel("value (fraction)")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, ncol=2)
    return ax
