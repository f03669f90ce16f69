r"""Retrieval metrics, computed exactly as ``trec_eval`` computes them.

The book evaluates every retriever with the measures below. They are written in plain Python so
each one can be read next to its formula, and they follow ``trec_eval`` (the reference
implementation behind ``pytrec_eval`` and ``ir_measures``) convention by convention, so a number
printed here can be compared with a number in a paper. The test-suite checks every measure
against ``trec_eval`` (through ``ir_measures``/``pytrec_eval``) to :math:`10^{-9}`.

Notation
--------
For one query :math:`q`, the system returns a ranking :math:`d_1, d_2, \dots, d_n`. The
relevance judgements (*qrels*) give some documents an integer grade :math:`g(d)`; a document
that is not judged has grade 0. A document is *relevant* when :math:`g(d) \ge \tau`, the
relevance threshold (``relevance_threshold``, 1 by default). :math:`\mathrm{rel}_i \in \{0,1\}`
says whether :math:`d_i` is relevant and :math:`R = |\{d : g(d) \ge \tau\}|` is the number of
relevant documents *in the qrels* (retrieved or not). A cutoff :math:`k` keeps the first
:math:`\min(k, n)` documents.

.. math::

   \mathrm{P@}k &= \frac{1}{k} \sum_{i=1}^{\min(k,n)} \mathrm{rel}_i
   \qquad
   \mathrm{Recall@}k = \frac{1}{R} \sum_{i=1}^{\min(k,n)} \mathrm{rel}_i \\
   \mathrm{Accuracy@}k &= \max_{i \le \min(k,n)} \mathrm{rel}_i \\
   \mathrm{RR@}k &= \frac{1}{\min\{i \le \min(k,n) : \mathrm{rel}_i = 1\}}
   \\ &\qquad (0 \text{ if no relevant document is in the top } k) \\
   \mathrm{AP@}k &= \frac{1}{R} \sum_{i=1}^{\min(k,n)} \mathrm{rel}_i \, \mathrm{P@}i \\
   \mathrm{DCG@}k &= \sum_{i=1}^{\min(k,n)} \frac{\max(g(d_i), 0)}{\log_2(i+1)} \\
   \mathrm{nDCG@}k &= \frac{\mathrm{DCG@}k}{\mathrm{IDCG@}k}

where :math:`\mathrm{IDCG@}k` is the DCG of the best possible ranking: the judged grades sorted
in decreasing order (see *IDCG* below). ``accuracy@k`` is the *hit rate*, called ``success`` in
``trec_eval`` and ``Success@k`` in ``ir_measures``; ``mrr@k`` is the mean of RR@k; ``map@k`` is
``trec_eval``'s ``map_cut_k`` (``AP@k`` in ``ir_measures``) and ``map`` is the uncut AP.

Conventions (all those of ``trec_eval``)
----------------------------------------
**Ranking and ties.** A run gives each retrieved document a score. ``trec_eval`` ignores any rank
column and sorts by score, *descending*, breaking equal scores by document id, also
*descending* (``strcmp`` order: ``"d9"`` before ``"d10"`` before ``"d1"``). :func:`rank_documents`
does the same; Python's string order equals ``strcmp`` on UTF-8 bytes, so this holds for
non-ASCII ids too. A consequence worth a sentence in the book: a system that gives many
documents the same score is ranked by an accident of its id scheme, and tools disagree on it:
``ir_measures`` (0.4) computes ``RR@k`` with its ``msmarco`` provider, which breaks ties by id
*ascending*, so on tied runs its ``RR@10`` can differ from ``trec_eval``'s (and from ours).

**Unjudged documents** (retrieved but absent from the qrels) are non-relevant, grade 0.

**Ids.** Ids are compared as given: ``1`` and ``"1"`` are two ids, as in a Python dict (a run
with ``int`` query ids scored against qrels with ``str`` ones shares no query, and
:func:`evaluate_run` says so). :func:`run_from_topk` refuses a repeated query id or document id
(which would merge two queries, or keep the lower of a document's scores), naming the id and its
positions; since it keys the run by ``str(id)``, it also refuses two ids that become one string
(``1`` and ``"1"``). The qrels readers of :mod:`sbert_tutor.data.msmarco` refuse a pair judged
twice, naming the file and both lines.

**Relevance threshold.** The binary measures (precision, recall, accuracy, RR, AP) count a
document as relevant when its grade is :math:`\ge \tau` (``trec_eval -l``; ``rel=`` in
``ir_measures``). nDCG ignores :math:`\tau` and uses the raw grades as gains, *linearly*
(gain = grade, not :math:`2^g - 1`) with a :math:`\log_2(i+1)` discount, exactly like
``trec_eval``'s ``ndcg_cut``. Negative grades (some collections use -1 or -2 for spam) count as
gain 0, as in ``trec_eval``. With binary qrels nDCG is the usual binary nDCG.

**k larger than the ranking.** Precision divides by :math:`k`, not by the number of documents
returned (``trec_eval``'s ``P_k``): a system returning 3 documents, all relevant, has
P@10 = 0.3. The other measures simply see the shorter list.

**Queries with no relevant document.** ``trec_eval`` evaluates every query present in both the
run and the qrels, and a query whose judged documents are all non-relevant scores 0 on every
measure (recall, AP and nDCG have a zero denominator, which ``trec_eval`` turns into 0). Such a
query measures nothing about the system and only drags the mean down, so :func:`evaluate_run`
*leaves it out*: the mean is over queries with at least one relevant document
(:math:`R \ge 1` at the given threshold). To reproduce this with ``trec_eval``/``ir_measures``,
drop those queries from the qrels before evaluating (the test-suite does exactly that).

**Queries missing from the run.** A query with relevant documents that the run does not mention
(or for which it retrieved nothing) scores 0 on every measure and *is* averaged, as with
``trec_eval -c``; ``ir_measures`` does the same by default. Plain ``trec_eval`` (without ``-c``)
would silently skip it and report a better number. Queries in the run but not in the qrels are
ignored.

**IDCG.** ``trec_eval`` builds the ideal ranking from the judged grades: with
:math:`g_{(1)} \ge g_{(2)} \ge \dots` the positive grades of the query's judged documents,
:math:`\mathrm{IDCG@}k = \sum_{i=1}^{\min(k, R^+)} g_{(i)} / \log_2(i+1)`, where :math:`R^+` is the
number of documents with a positive grade. A query with a single relevant passage (most MS MARCO
queries) reaches nDCG@10 = 1 by ranking it first. The *Distance Dilemma* paper instead assumes
that every query has at least :math:`k` (10) relevant passages, i.e. the ideal ranking has a
relevant passage at every one of the :math:`k` positions:
:math:`\mathrm{IDCG}^{\mathrm{all}}@k = \sum_{i=1}^{k} 1/\log_2(i+1)` for binary qrels
(:math:`\approx 4.544` for :math:`k = 10`). For a query that does have at least :math:`k`
relevant passages (the paper's premise for its own queries) the two ideals are equal; for one that
has fewer they are not: with one known relevant passage (most MS MARCO dev queries) the best
achievable nDCG@10 drops to :math:`1/4.544 \approx 0.22`, not comparable with ``trec_eval``'s 1.
:func:`ndcg_at_k` offers both: ``idcg="trec"`` (default) and ``idcg="all_relevant"``. For graded
qrels, ``"all_relevant"`` keeps the sorted judged grades and fills the empty ideal positions up to
:math:`k` with gain 1 (a "relevant" document), so it equals ``"trec"`` whenever the query has at
least :math:`k` positive grades. :func:`evaluate_run` always reports the ``trec_eval`` version.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

__all__ = [
    "METRIC_NAMES",
    "MissingQueriesWarning",
    "Qrels",
    "Run",
    "average_precision",
    "dcg_at_k",
    "evaluate_run",
    "evaluate_run_per_query",
    "idcg_at_k",
    "ndcg_at_k",
    "num_relevant",
    "precision_at_k",
    "rank_discount",
    "rank_documents",
    "recall_at_k",
    "reciprocal_rank_at_k",
    "relevance_flags",
    "run_from_topk",
]

Run = Mapping[str, Mapping[str, float]]
"""``query id -> {document id: score}``; higher scores rank first."""
Qrels = Mapping[str, Mapping[str, int]]
"""``query id -> {document id: grade}``; unjudged documents have grade 0."""
Judgements = Mapping[str, int] | Collection[str]
"""One query's judgements: ``{document id: grade}``, or a collection of relevant ids (grade 1)."""

METRIC_NAMES: tuple[str, ...] = ("precision", "accuracy", "recall", "mrr", "ndcg", "map")
"""The per-cutoff measures :func:`evaluate_run` reports, as ``f"{name}@{k}"``."""


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _grades(judgements: Judgements, qid: Any = None) -> Mapping[str, int]:
    """A ``{docid: grade}`` view of one query's judgements (a plain collection means grade 1,
    as sentence-transformers' ``{qid: {docid, ...}}`` qrels; a list may not repeat an id)."""
    if isinstance(judgements, Mapping):
        return judgements
    of = "" if qid is None else f" of query {qid!r}"
    if isinstance(judgements, str) or not isinstance(judgements, Iterable):
        raise TypeError(
            f"the judgements{of} must be a {{docid: grade}} mapping or a collection of relevant "
            f"docids (grade 1), not {type(judgements).__name__}"
        )
    items = list(judgements)
    if not isinstance(judgements, (set, frozenset)):
        _check_unique_ids(items, f"the relevant docids{of}")
    return dict.fromkeys(items, 1)


def _check_unique_ids(ids: Sequence[Any], what: str, as_strings: bool = False) -> None:
    """Refuse a repeated id in ``ids``, naming it and both positions.

    Ids are compared as given (``1`` and ``"1"`` are different ids; ``1`` and ``1.0`` are one, as
    Python compares them). With ``as_strings`` (a run or qrels keyed by ``str(id)``, as
    :func:`run_from_topk` builds), two ids with the same string form (``1`` and ``"1"``) are
    refused too, since they would become one key.
    """
    first: dict[Any, int] = {}
    for i, x in enumerate(ids):
        try:
            j = first.setdefault(x, i)
        except TypeError:
            raise TypeError(
                f"{what}[{i}] = {x!r} is a {type(x).__name__}, which cannot be an id (use str or int)"
            ) from None
        if j != i:
            raise ValueError(
                f"{what} repeats the id {x!r} at positions {j} and {i}: each one needs its own id, "
                "or the later one silently replaces the earlier one and every metric after it is "
                "wrong. Remove the duplicate (or give it a distinct id)."
            )
    if as_strings:
        seen: dict[str, int] = {}
        for i, x in enumerate(ids):
            j = seen.setdefault(str(x), i)
            if j != i:
                raise ValueError(
                    f"{what}[{j}] = {ids[j]!r} and {what}[{i}] = {x!r} are different ids but the "
                    f"same once written as a string ({str(x)!r}), which is how the run keys them: "
                    "make the ids distinct as strings (e.g. convert all of them with str() first)."
                )


def _check_k(k: int | None, allow_none: bool = True) -> None:
    if k is None:
        if not allow_none:
            raise ValueError("k is required")
        return
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer (or None for no cutoff), got {k!r}")


def _top(ranked_docids: Sequence[str], k: int | None) -> Sequence[str]:
    _check_k(k)
    if isinstance(ranked_docids, str):
        raise TypeError("ranked_docids must be a sequence of document ids, not a single str")
    top = ranked_docids if k is None else ranked_docids[:k]
    if len(set(top)) != len(top):
        raise ValueError("ranked_docids contains the same document id more than once")
    return top


def relevance_flags(top: Sequence[str], grades: Mapping[str, int], threshold: int) -> list[bool]:
    r""":math:`\mathrm{rel}_i` for each ranked document :math:`d_i` of ``top``: whether its grade
    :math:`g(d_i)` (0 when unjudged) is at least ``threshold``.

    Example:
        >>> relevance_flags(["a", "b", "c"], {"a": 2, "c": 1}, threshold=2)
        [True, False, False]
    """
    return [grades.get(d, 0) >= threshold for d in top]


def num_relevant(grades: Mapping[str, int], threshold: int) -> int:
    r""":math:`R`, the query's judged documents with grade :math:`g \ge` ``threshold``.

    Example:
        >>> num_relevant({"a": 2, "b": 0, "c": 1}, threshold=1)
        2
    """
    return sum(1 for g in grades.values() if g >= threshold)


def rank_documents(doc_scores: Mapping[str, float]) -> list[str]:
    """Document ids sorted as ``trec_eval`` sorts them.

    Score descending; equal scores by document id descending (string order, i.e. ``strcmp``).

    >>> rank_documents({"d1": 0.5, "d2": 0.9, "d3": 0.5})
    ['d2', 'd3', 'd1']
    """
    for d, s in doc_scores.items():
        if isinstance(s, float) and math.isnan(s):
            raise ValueError(f"score of document {d!r} is NaN; NaN scores cannot be ranked")
    return sorted(doc_scores, key=lambda d: (doc_scores[d], d), reverse=True)


# --------------------------------------------------------------------------------------------
# per-query measures
# --------------------------------------------------------------------------------------------


def precision_at_k(
    ranked_docids: Sequence[str], relevant: Judgements, k: int, relevance_threshold: int = 1
) -> float:
    r"""Precision at cutoff k: :math:`\frac{1}{k}\sum_{i=1}^{\min(k,n)} \mathrm{rel}_i`.

    Divides by ``k`` even when fewer than ``k`` documents were returned (``trec_eval``'s
    ``P_k``).

    >>> precision_at_k(["a", "b", "c"], {"a": 1, "c": 2}, k=2)
    0.5
    >>> precision_at_k(["a"], {"a": 1}, k=10)  # short ranking: still divided by 10
    0.1
    """
    _check_k(k, allow_none=False)
    top = _top(ranked_docids, k)
    return sum(relevance_flags(top, _grades(relevant), relevance_threshold)) / k


def recall_at_k(
    ranked_docids: Sequence[str], relevant: Judgements, k: int | None, relevance_threshold: int = 1
) -> float:
    r"""Recall at cutoff k: :math:`\frac{1}{R}\sum_{i=1}^{\min(k,n)} \mathrm{rel}_i`, 0 if :math:`R = 0`.

    :math:`R` counts every relevant document in the judgements, retrieved or not.

    >>> recall_at_k(["a", "b", "c"], {"a": 1, "c": 1, "z": 1}, k=2)
    0.3333333333333333
    """
    grades = _grades(relevant)
    n_rel = num_relevant(grades, relevance_threshold)
    if n_rel == 0:
        _top(ranked_docids, k)
        return 0.0
    return sum(relevance_flags(_top(ranked_docids, k), grades, relevance_threshold)) / n_rel


def accuracy_at_k(
    ranked_docids: Sequence[str], relevant: Judgements, k: int | None, relevance_threshold: int = 1
) -> float:
    r"""Accuracy (hit rate, ``trec_eval``'s ``success``) at k: 1 if a relevant document is in the top k.

    :math:`\mathrm{Accuracy@}k = \max_{i \le \min(k,n)} \mathrm{rel}_i`.

    >>> accuracy_at_k(["a", "b", "c"], {"c": 1}, k=2), accuracy_at_k(["a", "b", "c"], {"c": 1}, k=3)
    (0.0, 1.0)
    """
    return float(
        any(relevance_flags(_top(ranked_docids, k), _grades(relevant), relevance_threshold))
    )


def reciprocal_rank_at_k(
    ranked_docids: Sequence[str],
    relevant: Judgements,
    k: int | None = None,
    relevance_threshold: int = 1,
) -> float:
    r"""Reciprocal rank of the first relevant document within the top k (0 if there is none).

    :math:`\mathrm{RR@}k = 1 / \min\{i \le \min(k,n) : \mathrm{rel}_i = 1\}`; ``k=None`` is
    ``trec_eval``'s uncut ``recip_rank``. The mean over queries is MRR@k.

    >>> reciprocal_rank_at_k(["a", "b", "c"], {"b": 1, "c": 1}), reciprocal_rank_at_k(["a", "b"], {"b": 1}, k=1)
    (0.5, 0.0)
    """
    for i, is_rel in enumerate(
        relevance_flags(_top(ranked_docids, k), _grades(relevant), relevance_threshold)
    ):
        if is_rel:
            return 1.0 / (i + 1)
    return 0.0


def average_precision(
    ranked_docids: Sequence[str],
    relevant: Judgements,
    k: int | None = None,
    relevance_threshold: int = 1,
) -> float:
    r"""Average precision, cut at k (``trec_eval``'s ``map_cut_k``; ``k=None``: ``map``).

    :math:`\mathrm{AP@}k = \frac{1}{R}\sum_{i=1}^{\min(k,n)} \mathrm{rel}_i\,\mathrm{P@}i`. The
    denominator is :math:`R`, all relevant documents in the judgements, not
    :math:`\min(k, R)`: a query with 20 relevant documents cannot reach AP@10 = 1.

    >>> average_precision(["a", "b", "c"], {"a": 1, "c": 1})  # (1/1 + 2/3) / 2
    0.8333333333333333
    """
    grades = _grades(relevant)
    top = _top(ranked_docids, k)
    n_rel = num_relevant(grades, relevance_threshold)
    if n_rel == 0:
        return 0.0
    hits = 0
    total = 0.0
    for i, is_rel in enumerate(relevance_flags(top, grades, relevance_threshold)):
        if is_rel:
            hits += 1
            total += hits / (i + 1)
    return total / n_rel


def rank_discount(i: int) -> float:
    """DCG's discount :math:`1/\\log_2(i+1)` for the 1-based rank ``i`` (1 at rank 1).

    Example:
        >>> rank_discount(1), rank_discount(3)
        (1.0, 0.5)
    """
    return 1.0 / math.log2(i + 1)


def dcg_at_k(ranked_docids: Sequence[str], relevant: Judgements, k: int | None = None) -> float:
    r"""Discounted cumulative gain: :math:`\sum_{i=1}^{\min(k,n)} \max(g(d_i),0)/\log_2(i+1)`.

    >>> round(dcg_at_k(["a", "b"], {"a": 1, "b": 3}), 6)  # 1/log2(2) + 3/log2(3)
    2.892789
    """
    grades = _grades(relevant)
    return sum(
        max(grades.get(d, 0), 0) * rank_discount(i + 1)
        for i, d in enumerate(_top(ranked_docids, k))
    )


def idcg_at_k(
    relevant: Judgements, k: int | None = None, idcg: Literal["trec", "all_relevant"] = "trec"
) -> float:
    r"""Ideal DCG at k.

    ``"trec"``: the DCG of the judged positive grades sorted in decreasing order (``trec_eval``).
    ``"all_relevant"``: the same list padded with gain-1 documents up to ``k`` positions, as if
    every query had at least ``k`` relevant documents (the *Distance Dilemma* convention; for
    binary qrels :math:`\sum_{i=1}^{k} 1/\log_2(i+1)`). ``"all_relevant"`` needs a finite ``k``.

    >>> round(idcg_at_k({"a": 1}, k=10), 6), round(idcg_at_k({"a": 1}, k=10, idcg="all_relevant"), 6)
    (1.0, 4.543559)
    """
    _check_k(k)
    gains = sorted((g for g in _grades(relevant).values() if g > 0), reverse=True)
    if k is not None:
        gains = gains[:k]
    if idcg == "all_relevant":
        if k is None:
            raise ValueError('idcg="all_relevant" needs a cutoff k')
        gains = gains + [1] * (k - len(gains))
    elif idcg != "trec":
        raise ValueError(f'idcg must be "trec" or "all_relevant", got {idcg!r}')
    return sum(g * rank_discount(i + 1) for i, g in enumerate(gains))


def ndcg_at_k(
    ranked_docids: Sequence[str],
    relevant: Judgements,
    k: int | None = 10,
    idcg: Literal["trec", "all_relevant"] = "trec",
) -> float:
    r"""Normalised DCG at k: :math:`\mathrm{DCG@}k / \mathrm{IDCG@}k` (0 when IDCG is 0).

    Gains are the raw grades (linear, negative grades count 0), so binary qrels give the usual
    binary nDCG; ``idcg`` picks the ideal ranking (see :func:`idcg_at_k` and the module notes).
    ``k=None`` is ``trec_eval``'s uncut ``ndcg``.

    >>> ndcg_at_k(["x", "a"], {"a": 1}, k=10)  # (1/log2 3) / 1
    0.6309297535714575
    >>> round(ndcg_at_k(["x", "a"], {"a": 1}, k=10, idcg="all_relevant"), 6)  # (1/log2 3) / 4.5436
    0.138862
    """
    ideal = idcg_at_k(relevant, k, idcg)
    if ideal == 0.0:
        _top(ranked_docids, k)
        return 0.0
    return dcg_at_k(ranked_docids, relevant, k) / ideal


# --------------------------------------------------------------------------------------------
# run-level evaluation
# --------------------------------------------------------------------------------------------


def _check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    ks = tuple(ks)
    if not ks:
        raise ValueError("ks must contain at least one cutoff")
    for k in ks:
        _check_k(k, allow_none=False)
    return tuple(sorted(set(int(k) for k in ks)))


def _query_metrics(
    ranking: Sequence[str], grades: Mapping[str, int], ks: tuple[int, ...], threshold: int
) -> dict[str, float]:
    """All measures of one query: the measure functions above, at every cutoff."""
    out: dict[str, float] = {}
    for k in ks:
        out[f"precision@{k}"] = precision_at_k(ranking, grades, k, threshold)
        out[f"accuracy@{k}"] = accuracy_at_k(ranking, grades, k, threshold)
        out[f"recall@{k}"] = recall_at_k(ranking, grades, k, threshold)
        out[f"mrr@{k}"] = reciprocal_rank_at_k(ranking, grades, k, threshold)
        out[f"ndcg@{k}"] = ndcg_at_k(ranking, grades, k)
        out[f"map@{k}"] = average_precision(ranking, grades, k, threshold)
    out["map"] = average_precision(ranking, grades, None, threshold)
    return out


class MissingQueriesWarning(UserWarning):
    """Some judged queries are not in the run: they score 0 (``trec_eval -c``)."""


def _show_ids(ids: Iterable[Any], n: int = 3) -> str:
    """A few ids with their types, e.g. ``[1, 2, 3] (int)``, for messages about id mismatches."""
    items = list(ids)
    shown = ", ".join(repr(x) for x in items[:n]) + (", ..." if len(items) > n else "")
    types = "/".join(sorted({type(x).__name__ for x in items}))
    return f"[{shown}] ({types})"


def _check_overlap(run: Run, qrels: Qrels, evaluated: list[Any]) -> None:
    """Refuse a run that cannot be scored; warn when it leaves judged queries out.

    An empty run, or one that shares no query id with the judged queries, would average to
    zeros that look like a (terrible) result: both are errors naming the ids on each side.
    """
    retrieved = [q for q, docs in run.items() if docs]
    if not retrieved:
        raise ValueError(
            f"the run is empty ({len(run)} queries, no retrieved documents): there is nothing "
            "to score. Check that the search returned results before evaluating."
        )
    missing = [q for q in evaluated if q not in run or not run[q]]
    if len(missing) == len(evaluated):
        hint = ""
        if {str(q) for q in retrieved} & {str(q) for q in evaluated}:
            hint = (
                " The ids match once written as strings: convert both sides with str() "
                "(run_from_topk does this for runs)."
            )
        raise ValueError(
            f"the run and the qrels share no judged query: run query ids {_show_ids(retrieved)}, "
            f"judged qrels query ids {_show_ids(evaluated)}.{hint} Make the run's query ids the "
            "qrels' ids (same values, same type)."
        )
    if missing:
        warnings.warn(
            f"{len(missing)} of {len(evaluated)} judged queries are not in the run (e.g. "
            f"{_show_ids(missing)}); they count 0 on every measure (trec_eval -c). Retrieve for "
            "every judged query, or drop the others from the qrels to score a subset.",
            MissingQueriesWarning,
            stacklevel=_caller_level(),
        )


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first caller outside this module."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1
    return level - 1


def _metric_keys(ks: tuple[int, ...]) -> list[str]:
    return [f"{name}@{k}" for name in METRIC_NAMES for k in ks] + ["map"]


def evaluate_run_per_query(
    run: Run, qrels: Qrels, ks: Iterable[int] = (1, 5, 10), relevance_threshold: int = 1
) -> dict[str, dict[str, float]]:
    """Every measure for every evaluated query: ``{qid: {"ndcg@10": ..., ...}}``.

    The evaluated queries are those of the qrels with at least one relevant document (grade
    ``>= relevance_threshold``), in qrels order; a query missing from the run gets 0 everywhere
    (with a :class:`MissingQueriesWarning` that counts them). See :func:`evaluate_run` for the keys
    and the errors.
    """
    ks = _check_ks(ks)
    keys = _metric_keys(ks)
    graded = {q: _grades(g, q) for q, g in qrels.items()}
    evaluated = [q for q, g in graded.items() if num_relevant(g, relevance_threshold) > 0]
    if evaluated:
        _check_overlap(run, qrels, evaluated)
    per_query: dict[str, dict[str, float]] = {}
    for qid in evaluated:
        grades = graded[qid]
        doc_scores = run.get(qid)
        if not doc_scores:
            per_query[qid] = dict.fromkeys(keys, 0.0)
            continue
        ranking = rank_documents(doc_scores)
        per_query[qid] = _query_metrics(ranking, grades, ks, relevance_threshold)
    return per_query


def evaluate_run(
    run: Run, qrels: Qrels, ks: Iterable[int] = (1, 5, 10), relevance_threshold: int = 1
) -> dict[str, float]:
    """Mean of every measure over the queries, ``trec_eval`` conventions (see the module notes).

    Args:
        run: ``qid -> {docid: score}``; ranked by score descending, ties by docid descending.
        qrels: ``qid -> {docid: grade}``; unjudged documents are non-relevant. A query's
            judgements may also be a set of relevant docids, grade 1 each (sentence-transformers'
            ``InformationRetrievalEvaluator`` form ``{qid: {docid, ...}}``; ``trec_eval`` reads
            such qrels with grade 1 and ``ir_measures`` agrees), or a list with no repeated id.
        ks: the cutoffs.
        relevance_threshold: lowest grade counted as relevant by the binary measures (nDCG uses
            the raw grades).

    Returns:
        ``{"precision@k", "accuracy@k", "recall@k", "mrr@k", "ndcg@k", "map@k"}`` for every ``k``
        (in that order, ``k`` increasing) and ``"map"`` (uncut), each the mean over the queries
        of the qrels that have at least one relevant document. Queries missing from the run
        count 0 (``trec_eval -c``) and a :class:`MissingQueriesWarning` says how many there are;
        queries not in the qrels are ignored.

    Raises:
        ValueError: no query of the qrels has a relevant document; the run is empty; or the run
            shares no query id with the judged queries (e.g. ``int`` ids on one side and ``str``
            on the other): the message shows a few ids of each side, with their types.

    >>> run = {"q1": {"a": 0.9, "b": 0.8}, "q2": {"c": 0.1}}
    >>> qrels = {"q1": {"b": 1}, "q2": {"c": 2}, "q3": {"z": 0}}  # q3: no relevant doc, skipped
    >>> evaluate_run(run, qrels, ks=[1])["mrr@1"], evaluate_run(run, qrels, ks=[2])["mrr@2"]
    (0.5, 0.75)
    """
    ks = _check_ks(ks)
    per_query = evaluate_run_per_query(run, qrels, ks, relevance_threshold)
    if not per_query:
        raise ValueError(
            f"no query in the qrels has a document with grade >= {relevance_threshold}; "
            "there is nothing to average (check the qrels and relevance_threshold)"
        )
    n = len(per_query)
    return {key: math.fsum(m[key] for m in per_query.values()) / n for key in _metric_keys(ks)}


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor, possibly on the GPU
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def run_from_topk(
    query_ids: Sequence[Any], doc_ids: Sequence[Any], scores: Any, indices: Any
) -> dict[str, dict[str, float]]:
    """Turn top-k arrays (as returned by :func:`sbert_tutor.search.exact.semantic_search`) into a run.

    Args:
        query_ids: one id per row of ``scores``/``indices``.
        doc_ids: the corpus ids; ``indices`` point into this sequence.
        scores: ``[n_queries, k]`` array or tensor of scores (higher is better).
        indices: ``[n_queries, k]`` corpus positions; negative entries (``-1``, FAISS's "no
            result") are skipped.

    Returns:
        ``{str(qid): {str(docid): float(score)}}``. Ids are converted to ``str`` because
        ``trec_eval`` breaks score ties by comparing ids as strings.

    Raises:
        ValueError: a query id or a document id is repeated (compared as given: ``1`` twice),
            or two ids differ but are the same string (``1`` and ``"1"``, one key of the run);
            a row of ``indices`` names one document twice; shapes or indices that do not fit.
            The message names the id and its positions. Repeats would otherwise merge two
            queries into one, or keep a document's lower score, and corrupt every metric.
    """
    scores = _to_numpy(scores)
    indices = _to_numpy(indices)
    if scores.shape != indices.shape or scores.ndim != 2:
        raise ValueError(
            f"scores and indices must be 2-D arrays of the same shape, got {scores.shape} and "
            f"{indices.shape}"
        )
    if len(query_ids) != scores.shape[0]:
        raise ValueError(f"{len(query_ids)} query ids for {scores.shape[0]} rows of scores")
    _check_unique_ids(query_ids, "query_ids", as_strings=True)
    _check_unique_ids(doc_ids, "doc_ids", as_strings=True)
    n_docs = len(doc_ids)
    if indices.size and indices.max() >= n_docs:
        raise ValueError(f"an index ({indices.max()}) is out of range for {n_docs} doc_ids")
    run: dict[str, dict[str, float]] = {}
    for qid, row_scores, row_idx in zip(query_ids, scores.tolist(), indices.tolist(), strict=True):
        docs = run.setdefault(str(qid), {})
        for s, i in zip(row_scores, row_idx, strict=True):
            if i < 0:
                continue
            doc = str(doc_ids[i])
            if doc in docs:
                raise ValueError(
                    f"indices of query {qid!r} hold corpus position {i} (doc id {doc_ids[i]!r}) "
                    "twice; a top-k row lists each document once (check how it was built)"
                )
            docs[doc] = float(s)
    return run
