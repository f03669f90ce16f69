r"""Teaching aids for the retrieval chapters (4 and 5): every quantity of a measure, rank by rank.

* :func:`ranking_breakdown` -- P@i, AP@i, DCG@i, IDCG@i, nDCG@i of one ranked list (chapter 4);
* :func:`ndcg_conventions` -- nDCG@k under the ``trec_eval`` ideal and the one of Rygaard et al.
  ("Distance Dilemma", n.d.), for the run and a perfect ranking (chapter 4);
* :func:`first_relevant_ranks`, :func:`top_passages` -- where the first relevant passage lands,
  and what a query retrieved (chapter 5).

Every number comes from :mod:`sbert_tutor.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from sbert_tutor.metrics import (
    Qrels,
    Run,
    average_precision,
    dcg_at_k,
    idcg_at_k,
    ndcg_at_k,
    precision_at_k,
    rank_documents,
)


def ranking_breakdown(
    ranking: Sequence[str], judgements: Mapping[str, int], relevance_threshold: int = 1
) -> pd.DataFrame:
    r"""Every quantity of the measures, rank by rank, for one ranked list (chapter 4).

    Columns: ``docid``, ``grade`` :math:`g(d_i)`, ``rel`` :math:`\mathrm{rel}_i`,
    ``P@i``, ``rel*P@i`` (the terms of AP), ``AP@i``, ``discount`` :math:`1/\log_2(i+1)`, ``gain*discount``,
    ``DCG@i``, ``IDCG@i`` and ``nDCG@i``, each computed by :mod:`sbert_tutor.metrics`.
    """
    if isinstance(ranking, str):
        raise TypeError("ranking must be a sequence of document ids, not a single string")
    rows = []
    for i, doc in enumerate(ranking, start=1):
        grade = int(judgements.get(doc, 0))
        rel = int(grade >= relevance_threshold)
        p_i = precision_at_k(ranking, judgements, i, relevance_threshold)
        rows.append(
            {
                "rank": i,
                "docid": doc,
                "grade": grade,
                "rel": rel,
                "P@i": p_i,
                "rel*P@i": rel * p_i,
                "AP@i": average_precision(ranking, judgements, i, relevance_threshold),
                "discount": 1.0 / math.log2(i + 1),
                "gain*discount": max(grade, 0) / math.log2(i + 1),
                "DCG@i": dcg_at_k(ranking, judgements, i),
                "IDCG@i": idcg_at_k(judgements, i),
                "nDCG@i": ndcg_at_k(ranking, judgements, i),
            }
        )
    return pd.DataFrame(rows).set_index("rank")


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


def first_relevant_ranks(run: Run, qrels: Qrels, relevance_threshold: int = 1) -> pd.Series:
    """Rank (1-based) of the first relevant passage of every evaluated query; NaN if not retrieved.

    Its reciprocal, with NaN as 0, averages to the uncut MRR of the run.
    """
    ranks = {}
    for q, docs in qrels.items():
        if not any(g >= relevance_threshold for g in docs.values()):
            continue
        ranking = rank_documents(run.get(q, {}))
        ranks[q] = next(
            (i for i, d in enumerate(ranking, start=1) if docs.get(d, 0) >= relevance_threshold),
            math.nan,
        )
    series = pd.Series(ranks, dtype=float, name="first relevant rank")
    series.index.name = "qid"
    return series


def top_passages(
    run: Run,
    qid: str,
    corpus: Mapping[str, str] | None = None,
    qrels: Qrels | None = None,
    n: int = 5,
    width: int = 160,
) -> pd.DataFrame:
    """The ``n`` best passages of one query: rank, pid, score, judged grade, text (shortened)."""
    if qid not in run:
        raise KeyError(f"query {qid!r} is not in the run")
    ranking = rank_documents(run[qid])[:n]
    grades = (qrels or {}).get(qid, {})
    rows = []
    for i, pid in enumerate(ranking, start=1):
        text = corpus.get(pid) if isinstance(corpus, Mapping) else None
        if text is not None and len(text) > width:
            text = text[: width - 3] + "..."
        rows.append(
            {
                "rank": i,
                "pid": pid,
                "score": run[qid][pid],
                "grade": grades.get(pid, "unjudged"),
                "passage": text,
            }
        )
    return pd.DataFrame(rows).set_index("rank")
