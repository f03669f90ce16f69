r"""Hybrid retrieval: reciprocal-rank fusion of several runs (e.g. BM25 and a dense model).

Each run ranks its documents by score (ties as ``trec_eval`` breaks them,
:func:`~sbert_tutor.metrics.rank_documents`); a document's fused score is

.. math::

    \operatorname{RRF}(d) = \sum_{r} \frac{1}{k + \operatorname{rank}_r(d)}

over the runs :math:`r` that retrieved it, with ranks from 1. Only ranks count, so runs whose
scores live on different scales (BM25's unbounded sums, cosines in [-1, 1]) combine without
calibration; :math:`k = 60` damps the weight of the very first ranks.

Reference:
    Cormack, Clarke and Büttcher (2009), "Reciprocal Rank Fusion outperforms Condorcet and
    individual Rank Learning Methods", SIGIR.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sbert_tutor.metrics import rank_documents

__all__ = ["rrf"]

#: The constant of Cormack et al. (2009).
_RRF_K = 60


def rrf(
    runs: Sequence[Mapping[str, Mapping[str, float]]], k: float = _RRF_K
) -> dict[str, dict[str, float]]:
    """Fuse runs ``{qid: {docid: score}}`` by reciprocal rank: a run :func:`sbert_tutor.evaluate_run`
    scores, with every query of any run.

    Example:
        >>> bm25 = {"q": {"a": 12.0, "b": 9.5}}
        >>> dense = {"q": {"b": 0.8, "c": 0.7}}
        >>> fused = rrf([bm25, dense], k=60)  # a: 1/61; b: 1/62 + 1/61; c: 1/62
        >>> sorted(fused["q"], key=fused["q"].get, reverse=True)
        ['b', 'a', 'c']
    """
    if not runs:
        raise ValueError("rrf needs at least one run")
    if not k >= 0:
        raise ValueError(f"k must be >= 0, got {k}")
    fused: dict[str, dict[str, float]] = {}
    for run in runs:
        for qid, docs in run.items():
            scores = fused.setdefault(str(qid), {})
            for rank, doc in enumerate(rank_documents(docs), start=1):
                scores[str(doc)] = scores.get(str(doc), 0.0) + 1.0 / (k + rank)
    return fused
