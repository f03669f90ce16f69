"""Chapter 4, retrieval metrics: its sizes, the nDCG conventions side by side
(:func:`ndcg_conventions`, which chapter 12 reads too) and the measures as k grows
(:func:`plot_metrics_vs_k`). The worked example's rank-by-rank breakdown is on the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.sizes import ChapterSizes, register_sizes
from sbert_tutor.metrics import Qrels, Run, ndcg_at_k, rank_documents

__all__ = ["RetrievalMetricsSizes", "SIZES", "ndcg_conventions", "plot_metrics_vs_k"]


@dataclass(frozen=True, kw_only=True)
class RetrievalMetricsSizes(ChapterSizes):
    """Chapter 4 (retrieval metrics vs k): dev-subset queries (with their BM25 top-20s), TREC DL19
    queries (with their judged passages) and random other ``corpus_mini`` passages."""

    dev_queries: int | None
    dl19_queries: int | None
    random_passages: int | None


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, RetrievalMetricsSizes] = register_sizes(
    "04_retrieval_metrics",
    {
        "quick": RetrievalMetricsSizes(dev_queries=100, dl19_queries=10, random_passages=0),
        "t4": RetrievalMetricsSizes(dev_queries=None, dl19_queries=None, random_passages=None),
        "paper": RetrievalMetricsSizes(dev_queries=None, dl19_queries=None, random_passages=None),
    },
)


def plot_metrics_vs_k(table: pd.DataFrame, metrics: Sequence[str] | None = None, ax=None):
    """Each retrieval measure as a function of the cutoff k (book chapter 4).

    ``table``: one row a measure, one column a cutoff, as returned by
    :func:`sbert_tutor.evaluation.retrieval.evaluate_retrieval`. The k axis is logarithmic.
    """
    ax = new_axes(ax)
    ks = np.asarray(table.columns, dtype=float)
    dashed = {"accuracy", "map"}  # they coincide with recall / mrr when each query has R = 1
    for name in metrics or list(table.index):
        ax.plot(
            ks,
            table.loc[name].to_numpy(dtype=float),
            ls="--" if name in dashed else "-",
            marker="." if len(ks) < 30 else None,
            label=name,
        )
    ax.set_xscale("log")
    ax.set_xlabel("cutoff k")
    ax.set_ylabel("value (fraction)")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, ncol=2)
    return ax


def ndcg_conventions(
    run: Run, qrels: Qrels, k: int = 10, relevance_threshold: int = 1
) -> pd.DataFrame:
    r"""Mean nDCG@k under the two ideal rankings, for the run and for a perfect ranking.

    Rows: ``"trec"`` (IDCG from the judged grades, ``trec_eval``) and ``"all_relevant"`` (IDCG
    as if every query had at least ``k`` relevant passages, the *Distance Dilemma* convention;
    :func:`sbert_tutor.metrics.idcg_at_k`). Columns: ``"this run"`` and ``"perfect ranking"``
    (the judged passages sorted by grade): the best any system can score. Mean over the queries
    with a relevant passage (grade ``>= relevance_threshold``), as :func:`~sbert_tutor.metrics.evaluate_run`.
    """
    queries = [
        q for q, docs in qrels.items() if any(g >= relevance_threshold for g in docs.values())
    ]
    if not queries:
        raise ValueError(f"no query has a passage with grade >= {relevance_threshold}")
    out = {}
    for idcg in ("trec", "all_relevant"):
        ours = [ndcg_at_k(rank_documents(run.get(q, {})), qrels[q], k, idcg) for q in queries]
        best = [
            ndcg_at_k(rank_documents({d: float(g) for d, g in qrels[q].items()}), qrels[q], k, idcg)
            for q in queries
        ]
        out[idcg] = {
            "this run": math.fsum(ours) / len(ours),
            "perfect ranking": math.fsum(best) / len(best),
        }
    table = pd.DataFrame.from_dict(out, orient="index")
    table.index.name = f"IDCG@{k}"
    return table
