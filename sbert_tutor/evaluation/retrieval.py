r"""Retrieval evaluation: encode, search, score the rankings (book chapters 4 and 5).

The encoder maps each query :math:`q` to :math:`u_q` and each passage :math:`d` to :math:`v_d`;
the score is :math:`s(q, d) = \cos(u_q, v_d)` (or :math:`u_q \cdot v_d`, or
:math:`-\lVert u_q - v_d \rVert`). The system's ranking for :math:`q` is the corpus sorted by
:math:`s(q, \cdot)`, best first, cut after ``top_k`` passages. The rankings (the *run*) are then
scored against the judged grades :math:`g(q, d)` with :mod:`sbert_tutor.metrics`, which follows
``trec_eval`` convention by convention: P@k, Accuracy@k, Recall@k, MRR@k, nDCG@k (graded gains)
and MAP@k (``map_cut_k``).

Pipeline of :func:`evaluate_retrieval`
--------------------------------------
1. The queries that have at least one relevant passage (grade :math:`\ge` ``relevance_threshold``)
   are encoded once; the others measure nothing and are not evaluated.
2. The corpus is encoded ``corpus_chunk_size`` passages at a time (a tqdm bar counts passages)
   and handed to :func:`sbert_tutor.search.exact.semantic_search` as an *iterator* of embedding
   chunks, which keeps a running top-k. Only one chunk of embeddings, the running top-k and the
   list of passage ids are ever in memory, so the 8.8M-passage MS MARCO collection streams
   through (:class:`sbert_tutor.data.msmarco.StreamedCorpus`). A corpus that is searched more than
   once can be encoded once with :func:`encode_corpus` and passed as ``CorpusEmbeddings``.
3. :func:`sbert_tutor.metrics.run_from_topk` turns the top-k into a run and
   :func:`sbert_tutor.metrics.evaluate_run` averages every measure over the evaluated queries.

Conventions of :func:`evaluate_retrieval`
-----------------------------------------
* **top_k** (passages retrieved per query) defaults to :math:`\max(ks)` and may not be smaller:
  a measure at cutoff :math:`k` must see :math:`k` retrieved passages. A larger ``top_k`` changes
  no measure at :math:`k \le` ``top_k`` (it only costs time).
  sentence-transformers' ``InformationRetrievalEvaluator`` retrieves the largest of *all* its
  cutoffs (its default ``map_at_k=[100]`` makes that 100).
* **Queries evaluated**: those in both ``queries`` and ``qrels`` with a relevant passage, like
  sentence-transformers' evaluator. A judged query without text is left out with a warning
  (``trec_eval -c`` would count it as 0).
* **Results** are fractions in :math:`[0, 1]`, never percentages.
* **Comparing with sentence-transformers' evaluator.** It takes a *set* of relevant ids per query,
  so (a) graded qrels must be binarised and its nDCG is then the binary nDCG (ours uses the
  grades); (b) its MAP@k divides by :math:`\min(k, R)` where ``trec_eval`` (and we) divide by
  :math:`R`: equal when :math:`R \le k`, as on MS MARCO dev small for :math:`k \ge 4` (1 to 4
  positives per query);
  (c) it breaks exact score ties by corpus id *ascending*, ``trec_eval`` by document id
  *descending*: only exactly equal scores (e.g. duplicate passages) can differ. MRR@k, Recall@k,
  Precision@k, Accuracy@k and binary nDCG@k are otherwise the same formulas.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from sbert_tutor.data.msmarco import MSMarcoData, load_msmarco
from sbert_tutor.encoders.protocol import Encoder, encode_texts
from sbert_tutor.metrics import METRIC_NAMES, Qrels, Run, evaluate_run, run_from_topk
from sbert_tutor.provenance import provenance as make_provenance
from sbert_tutor.results import Result

__all__ = [
    "MSMarcoResult",
    "RetrievalResult",
    "encode_corpus",
    "evaluate_msmarco",
    "evaluate_retrieval",
    "metrics_table",
    "retrieve",
    "search_corpus",
    "select_queries",
]

#: Corpora larger than this many passages get a progress bar by default.
PROGRESS_THRESHOLD = 2048


@dataclass(frozen=True)
class CorpusEmbeddings:
    """An encoded corpus: passage ids and their embeddings (row ``i`` belongs to ``ids[i]``).

    Pass it as ``corpus`` to :func:`retrieve` / :func:`evaluate_retrieval` to search the same
    corpus several times without encoding it again.
    """

    ids: list[str]
    embeddings: np.ndarray
    model: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.embeddings.ndim != 2 or self.embeddings.shape[0] != len(self.ids):
            raise ValueError(
                f"embeddings must be [n, dim] with n = len(ids) = {len(self.ids)}, got shape "
                f"{self.embeddings.shape}"
            )

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class RetrievalResult(Result):
    """A scored run: ``table`` has one row a measure, one column a cutoff :math:`k`.

    Attributes:
        results: the same numbers flat, ``{"mrr@10": ..., ...}`` (fractions in [0, 1]).
        run: the rankings scored, ``{qid: {pid: score}}``.
        n_queries: queries evaluated (those with a relevant passage).
        relevance_threshold: lowest grade the binary measures count as relevant.
        n_passages, top_k, score: the search behind the run (``None`` for a given run).
    """

    results: dict[str, float]
    run: Run
    n_queries: int
    relevance_threshold: int
    n_passages: int | None = None
    top_k: int | None = None
    score: str | None = None

    @property
    def primary_metric(self) -> str:  # type: ignore[override]
        """``"ndcg@10"`` (sentence-transformers' ``InformationRetrievalEvaluator``'s main
        number), or nDCG at the largest cutoff when 10 was not computed."""
        if "ndcg@10" in self.results:
            return "ndcg@10"
        cutoffs = [int(name.split("@")[1]) for name in self.results if name.startswith("ndcg@")]
        return f"ndcg@{max(cutoffs)}"

    @property
    def main_score(self) -> float:
        """``results[primary_metric]``, a fraction in [0, 1]."""
        return float(self.results[self.primary_metric])


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class MSMarcoResult(Result):
    """:func:`evaluate_msmarco`: ``table`` has one row a dataset (sizes, then every measure).

    Attributes:
        tables: ``{dataset: RetrievalResult}``, one measure x cutoff table each.
        runs: ``{dataset: run}``.
        notes: what each dataset's collection is (samples, corpora).
    """

    tables: dict[str, RetrievalResult] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ checks


def _cutoffs(ks: Iterable[int]) -> tuple[int, ...]:
    if isinstance(ks, str):
        raise TypeError(f"ks must be a sequence of integers, not a string ({ks!r})")
    values = tuple(ks)
    if not values:
        raise ValueError("ks must contain at least one cutoff, e.g. ks=(1, 5, 10)")
    for k in values:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"every cutoff k must be a positive integer, got {k!r}")
    return tuple(sorted({int(k) for k in values}))


def _check_top_k(top_k: int | None, ks: tuple[int, ...]) -> int:
    if top_k is None:
        return ks[-1]
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    if top_k < ks[-1]:
        raise ValueError(
            f"top_k={top_k} is smaller than the largest cutoff k={ks[-1]}: a measure at k={ks[-1]} "
            f"would see only {top_k} retrieved passages. Pass top_k >= {ks[-1]}, or None "
            "(= the largest cutoff)."
        )
    return int(top_k)


def select_queries(
    queries: Mapping[str, str], qrels: Qrels, relevance_threshold: int = 1
) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The queries worth evaluating and their qrels.

    Keeps the queries of ``qrels`` that have a passage with grade ``>= relevance_threshold`` and
    a text in ``queries`` (ids compared as strings), in ``queries`` order. Judged queries without
    a text are left out with a ``UserWarning``.

    Raises:
        ValueError: no query is left.
    """
    grades = {str(q): {str(d): int(g) for d, g in docs.items()} for q, docs in qrels.items()}
    wanted = {
        q for q, docs in grades.items() if any(g >= relevance_threshold for g in docs.values())
    }
    texts = {str(q): t for q, t in queries.items()}
    missing = sorted(wanted - texts.keys())
    if missing:
        warnings.warn(
            f"{len(missing)} judged queries have no text in `queries` and are not evaluated "
            f"(e.g. qid {missing[0]}); pass the query texts to count them",
            UserWarning,
            stacklevel=3,
        )
    chosen = {q: t for q, t in texts.items() if q in wanted}
    if not chosen:
        raise ValueError(
            f"no query has both a text and a judged passage with grade >= {relevance_threshold}; "
            "check that query ids match between `queries` and `qrels` (and the threshold)"
        )
    return chosen, {q: grades[q] for q in chosen}


# ------------------------------------------------------------------------------ encoding


def _passages(corpus: Any) -> tuple[Iterator[tuple[str, str]], int | None]:
    items = getattr(corpus, "items", None)
    if isinstance(corpus, CorpusEmbeddings) or not callable(items):
        raise TypeError(
            "corpus must be a {pid: passage} mapping or a StreamedCorpus (anything with .items() "
            f"yielding (pid, passage)), got {type(corpus).__name__}"
        )
    try:
        total: int | None = len(corpus)
    except TypeError:
        total = None
    return iter(items()), total


def _encoded_chunks(
    encoder: Encoder,
    corpus: Any,
    ids: list[str],
    batch_size: int,
    chunk_size: int,
    show_progress_bar: bool | None,
) -> Iterator[np.ndarray]:
    """Embeddings of the corpus, ``chunk_size`` passages at a time; appends their ids to ``ids``.

    Progress: a bar over passages, one step per chunk; a corpus that fits in one chunk shows the
    encoder's own bar (one step per batch) instead. Empty passages cannot be embedded; they are
    skipped (with a warning at the end).
    """
    if (
        isinstance(chunk_size, bool)
        or not isinstance(chunk_size, (int, np.integer))
        or chunk_size < 1
    ):
        raise ValueError(f"corpus_chunk_size must be a positive integer, got {chunk_size!r}")
    pairs, total = _passages(corpus)
    if show_progress_bar is None:
        show_progress_bar = total is None or total > PROGRESS_THRESHOLD
    one_chunk = total is not None and total <= chunk_size
    skipped = 0
    outer = show_progress_bar and not one_chunk
    with tqdm(total=total, desc="encode corpus", unit="passage", disable=not outer) as bar:
        while chunk := list(itertools.islice(pairs, int(chunk_size))):
            pids: list[str] = []
            texts: list[str] = []
            for pid, text in chunk:
                if isinstance(text, str) and text.strip():
                    pids.append(str(pid))
                    texts.append(text)
                else:
                    skipped += 1
            if texts:
                emb = encode_texts(
                    encoder,
                    texts,
                    batch_size=batch_size,
                    show_progress_bar=bool(show_progress_bar and one_chunk),
                )
                ids.extend(pids)
                yield emb
            bar.update(len(chunk))
    if skipped:
        warnings.warn(
            f"{skipped} empty passages were skipped (an empty text has no embedding)",
            UserWarning,
            stacklevel=2,
        )


def encode_corpus(
    encoder: Encoder,
    corpus: Mapping[str, str] | Any,
    batch_size: int = 64,
    chunk_size: int = 50_000,
    show_progress_bar: bool | None = None,
) -> CorpusEmbeddings:
    """Encode a whole corpus once (to search it several times); keep it in memory.

    For the 8.8M-passage collection this is about 13.6 GB of float32 (384 dimensions): stream it
    through :func:`retrieve` / :func:`evaluate_msmarco` instead.
    """
    ids: list[str] = []
    chunks = list(_encoded_chunks(encoder, corpus, ids, batch_size, chunk_size, show_progress_bar))
    if not chunks:
        raise ValueError("the corpus is empty: there is nothing to encode")
    return CorpusEmbeddings(
        ids=ids,
        embeddings=np.concatenate(chunks) if len(chunks) > 1 else chunks[0],
        model=_model(encoder),
    )


def search_corpus(
    encoder: Encoder,
    queries: Mapping[str, str],
    corpus: Any,
    top_k: int,
    score: str,
    batch_size: int,
    corpus_chunk_size: int,
    show_progress_bar: bool | None,
    device: Any,
) -> tuple[dict[str, dict[str, float]], int]:
    """:func:`retrieve`'s work (its arguments, all given): encode the queries, encode the corpus
    ``corpus_chunk_size`` passages at a time (or take a ``CorpusEmbeddings``), search the
    chunks with :func:`~sbert_tutor.search.exact.semantic_search` and keep each query's best ``top_k``.
    Returns the run ``{qid: {pid: score}}`` and the number of passages searched."""
    from sbert_tutor.search.exact import semantic_search  # torch: loaded when a search runs

    top_k = _check_top_k(top_k, (1,))

    qids = [str(q) for q in queries]
    if not qids:
        raise ValueError("no queries to search for")
    q_emb = encode_texts(
        encoder,
        [queries[q] for q in queries],
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
    )
    if isinstance(corpus, CorpusEmbeddings):
        ids: list[str] = corpus.ids
        chunks: Any = corpus.embeddings
    else:
        ids = []
        chunks = _encoded_chunks(
            encoder, corpus, ids, batch_size, corpus_chunk_size, show_progress_bar
        )
    scores, indices = semantic_search(
        q_emb,
        chunks,
        top_k=top_k,
        score=score,
        chunk_size=corpus_chunk_size,
        device=device,
        show_progress_bar=False,
    )
    return run_from_topk(qids, ids, scores, indices), len(ids)


def retrieve(
    encoder: Encoder,
    queries: Mapping[str, str],
    corpus: Any,
    top_k: int = 10,
    score: Literal["cosine", "dot", "euclidean"] = "cosine",
    batch_size: int = 64,
    corpus_chunk_size: int = 50_000,
    show_progress_bar: bool | None = None,
    device: Any = None,
) -> Run:
    """Exact top-k search: ``{qid: {pid: score}}`` for every query, ``top_k`` passages each.

    Args:
        encoder: anything with ``encode(list[str], batch_size=..., show_progress_bar=...) -> array``.
        queries: ``{qid: text}``.
        corpus: ``{pid: passage}``, a :class:`~sbert_tutor.data.msmarco.StreamedCorpus`, or a
            ``CorpusEmbeddings`` (already encoded).
        top_k: passages kept per query.
        score: ``"cosine"``, ``"dot"`` or ``"euclidean"`` (negative distance; higher is better).
        batch_size: sentences per forward pass.
        corpus_chunk_size: passages encoded and searched at a time.
        show_progress_bar: tqdm bars; ``None`` shows them for corpora over 2,048 passages.
        device: where to search (``None``: CUDA when available).
    """
    run, _ = search_corpus(
        encoder,
        queries,
        corpus,
        top_k,
        score,
        batch_size,
        corpus_chunk_size,
        show_progress_bar,
        device,
    )
    return run


# ------------------------------------------------------------------------------ tables


def metrics_table(results: Mapping[str, float]) -> pd.DataFrame:
    """Pivot ``{"mrr@10": x, ...}`` into a table: one row a measure, one column a cutoff k.

    Rows follow :data:`sbert_tutor.metrics.METRIC_NAMES` (precision, accuracy, recall, mrr,
    ndcg, map); columns are the integer cutoffs, increasing. Keys without a cutoff (the uncut
    ``"map"`` of :func:`~sbert_tutor.metrics.evaluate_run`) are left out.
    """
    cells: dict[str, dict[int, float]] = {}
    for key, value in results.items():
        name, sep, k = key.rpartition("@")
        if sep and k.isdigit():
            cells.setdefault(name, {})[int(k)] = float(value)
    if not cells:
        raise ValueError("no 'name@k' key in results; expected keys like 'mrr@10'")
    order = [m for m in METRIC_NAMES if m in cells] + sorted(set(cells) - set(METRIC_NAMES))
    table = pd.DataFrame.from_dict({m: cells[m] for m in order}, orient="index")
    table = table[sorted(table.columns)]
    table.index.name = "metric"
    table.columns.name = "k"
    return table


def retrieval_table(
    run: Run, qrels: Qrels, ks: Iterable[int] = (1, 5, 10), relevance_threshold: int = 1
) -> RetrievalResult:
    """Score a run: :func:`~sbert_tutor.metrics.evaluate_run` as a :func:`metrics_table`, with
    the flat ``results``, the ``run``, ``n_queries`` and a one-line ``note``."""
    ks = _cutoffs(ks)
    results = evaluate_run(run, qrels, ks, relevance_threshold)
    flat = {k: v for k, v in results.items() if "@" in k}
    n_queries = sum(
        1 for docs in qrels.values() if any(g >= relevance_threshold for g in docs.values())
    )
    return RetrievalResult(
        table=metrics_table(flat),
        note=(
            f"fractions in [0, 1], mean over {n_queries} queries; binary measures count grade "
            f">= {relevance_threshold} as relevant, nDCG uses the graded gains; trec_eval "
            "conventions (sbert_tutor.metrics)"
        ),
        results=flat,
        run=dict(run),
        n_queries=n_queries,
        relevance_threshold=relevance_threshold,
    )


def _search_settings(
    ks: Sequence[int],
    top_k: int,
    score: str,
    passages: int,
    batch_size: int,
    corpus_chunk_size: int,
    **more: Any,
) -> dict[str, Any]:
    """The search settings recorded in a result's provenance."""
    return {
        "ks": list(ks),
        "top_k": top_k,
        "score": score,
        **more,
        "passages": passages,
        "batch_size": batch_size,
        "corpus_chunk_size": corpus_chunk_size,
    }


def _model(encoder: Encoder) -> dict[str, Any] | None:
    describe = getattr(encoder, "describe", None)
    return describe() if callable(describe) else None


def evaluate_retrieval(
    encoder: Encoder,
    queries: Mapping[str, str],
    corpus: Any,
    qrels: Qrels,
    ks: Iterable[int] = (1, 5, 10),
    score: Literal["cosine", "dot", "euclidean"] = "cosine",
    top_k: int | None = None,
    batch_size: int = 64,
    corpus_chunk_size: int = 50_000,
    relevance_threshold: int = 1,
    show_progress_bar: bool | None = None,
    device: Any = None,
    data_files: Iterable[str | Path] = (),
    provenance: Mapping[str, Any] | None = None,
) -> RetrievalResult:
    r"""Retrieve with an encoder and score the rankings against the qrels.

    Args:
        encoder: anything with ``encode(list[str], batch_size=..., show_progress_bar=...) -> array``
            (and, for provenance, ``describe()``), e.g. :class:`sbert_tutor.SentenceEncoder`.
        queries: ``{qid: text}``.
        corpus: ``{pid: passage}``, a streamed corpus (``.items()`` yielding pairs, e.g. the full
            MS MARCO collection) or ``CorpusEmbeddings``.
        qrels: ``{qid: {pid: grade}}``; unjudged passages are non-relevant.
        ks: the cutoffs :math:`k`.
        score: ``"cosine"`` (default), ``"dot"`` or ``"euclidean"``.
        top_k: passages retrieved per query; ``None`` = :math:`\max(ks)`; never fewer.
        batch_size: sentences per forward pass.
        corpus_chunk_size: passages encoded and searched at a time (memory bound).
        relevance_threshold: lowest grade the binary measures count as relevant (2 for TREC DL).
        show_progress_bar: tqdm bars; ``None``: for corpora over 2,048 passages.
        device: where to search (``None``: CUDA when available).
        data_files: local files the data came from (hashed into the provenance).
        provenance: anything else to record in the result's provenance, as a mapping (e.g.
            ``provenance={"dataset": "trec-dl19"}``).

    Returns:
        A :class:`RetrievalResult`: ``table`` has one row a measure (precision, accuracy,
        recall, mrr, ndcg, map), one column a cutoff :math:`k` (fractions in :math:`[0, 1]`);
        ``results`` (flat ``{"mrr@10": ...}``), ``run`` (``{qid: {pid: score}}``),
        ``n_queries``, ``n_passages``, ``top_k``, ``score``, ``relevance_threshold``, ``note``
        and ``provenance``.

    Raises:
        ValueError: bad cutoffs, ``top_k < max(ks)``, or no query with a relevant passage.
    """
    ks = _cutoffs(ks)
    top_k = _check_top_k(top_k, ks)
    eval_queries, eval_qrels = select_queries(queries, qrels, relevance_threshold)
    run, n_passages = search_corpus(
        encoder,
        eval_queries,
        corpus,
        top_k,
        score,
        batch_size,
        corpus_chunk_size,
        show_progress_bar,
        device,
    )
    scored = retrieval_table(run, eval_qrels, ks, relevance_threshold)
    return replace(
        scored,
        note=f"{scored.note}; {n_passages:,} passages, top_k={top_k}, score={score}",
        provenance=make_provenance(
            data_files=data_files,
            model=_model(encoder),
            extra={
                "retrieval": _search_settings(
                    ks,
                    top_k,
                    score,
                    n_passages,
                    batch_size,
                    corpus_chunk_size,
                    relevance_threshold=relevance_threshold,
                    queries=len(eval_queries),
                ),
                **(provenance or {}),
            },
        ),
        n_passages=n_passages,
        top_k=top_k,
        score=score,
    )


def evaluate_msmarco(
    encoder: Encoder,
    datasets: Sequence[Any] = ("msmarco-dev-subset", "trec-dl19"),
    corpus: str | None = None,
    ks: Iterable[int] = (1, 5, 10),
    score: Literal["cosine", "dot", "euclidean"] = "cosine",
    top_k: int | None = None,
    batch_size: int = 64,
    corpus_chunk_size: int = 50_000,
    show_progress_bar: bool | None = None,
    device: Any = None,
) -> MSMarcoResult:
    """Evaluate several MS MARCO datasets that share a corpus, encoding the corpus **once**.

    The queries of all datasets are searched in one pass over the corpus (streamed, so this
    works for the 8.8M collection too); each dataset is then scored with its own qrels and
    relevance threshold (2 for TREC DL).

    Args:
        datasets: names (loaded with :func:`sbert_tutor.data.msmarco.load_msmarco`) or
            already-loaded :class:`~sbert_tutor.data.msmarco.MSMarcoData` (e.g. a sample).
        corpus: ``"mini"``, ``"full"`` or ``None`` (each dataset's default), for names only.

    Other arguments: as in :func:`evaluate_retrieval`.

    Returns:
        An :class:`MSMarcoResult`: ``table`` has one row a dataset (its sizes, then every
        ``metric@k``, fractions); ``tables`` (``{dataset: RetrievalResult}``), ``runs``,
        ``notes``, ``note`` and ``provenance``.

    Raises:
        ValueError: the datasets do not share one corpus, or a query id has two texts.
    """
    ks = _cutoffs(ks)
    top_k = _check_top_k(top_k, ks)
    records = [d if isinstance(d, MSMarcoData) else load_msmarco(d, corpus) for d in datasets]
    if not records:
        raise ValueError("no dataset given")
    first = records[0]
    for r in records[1:]:
        if not _same_corpus(first.corpus, r.corpus):
            raise ValueError(
                f"{first.name} and {r.name} do not share one corpus ({first.corpus_name} vs "
                f"{r.corpus_name}); evaluate them separately with evaluate_retrieval"
            )
    selected = [select_queries(r.queries, r.qrels, r.relevance_threshold) for r in records]
    union: dict[str, str] = {}
    for r, (qs, _) in zip(records, selected, strict=True):
        for qid, text in qs.items():
            if union.setdefault(qid, text) != text:
                raise ValueError(f"query id {qid} of {r.name} has two different texts")
    run, n_passages = search_corpus(
        encoder,
        union,
        first.corpus,
        top_k,
        score,
        batch_size,
        corpus_chunk_size,
        show_progress_bar,
        device,
    )
    rows, tables, runs = [], {}, {}
    for r, (qs, qrels) in zip(records, selected, strict=True):
        sub_run = {q: run[q] for q in qs if q in run}
        scored = retrieval_table(sub_run, qrels, ks, r.relevance_threshold)
        tables[r.name] = replace(
            scored,
            note=f"{scored.note}; {n_passages:,} passages ({r.corpus_name}), top_k={top_k}",
            n_passages=n_passages,
            top_k=top_k,
            score=score,
        )
        runs[r.name] = sub_run
        rows.append(
            {
                "dataset": r.name,
                "corpus": r.corpus_name,
                "passages": n_passages,
                "queries": len(qs),
                "relevant if grade >=": r.relevance_threshold,
                **scored.results,
            }
        )
    notes = sorted({n for r in records for n in r.notes})
    return MSMarcoResult(
        table=pd.DataFrame(rows).set_index("dataset"),
        note=f"fractions in [0, 1]; score={score}, top_k={top_k}; " + "; ".join(notes),
        provenance=make_provenance(
            data_files=sorted({str(f) for r in records for f in r.files}),
            model=_model(encoder),
            extra={
                "datasets": [r.describe() for r in records],
                "retrieval": _search_settings(
                    ks, top_k, score, n_passages, batch_size, corpus_chunk_size
                ),
            },
        ),
        tables=tables,
        runs=runs,
        notes=notes,
    )


def _same_corpus(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys()
    return getattr(a, "source", None) is not None and getattr(a, "source", None) == getattr(
        b, "source", None
    )
