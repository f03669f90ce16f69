r"""Chapter 14, re-ranking: what its page and the recorded study (``benchmarks/rerank_study.py``)
share: the sizes, the data split by query (:func:`load_rerank_data`), the MS MARCO cross-encoder
trained here (:func:`msmarco_reranker`), BM25's top 20 (:func:`bm25_first_stage`), the grid of
first stages by re-rankers (:func:`rerank_grid`, floor: :func:`random_order_rr`), the plots and
the published cross-encoder's numbers (:func:`published_reranker`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from math import comb
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.published import MSMARCO_CROSS_ENCODER, MSMARCO_CROSS_ENCODER_SOURCE
from sbert_tutor.book.sizes import QUICK_RUN, SBERT_RUN, T4_LR, T4_RUN, RunSizes, register_sizes
from sbert_tutor.book.weak_start import MINILM, CrossEncoderStart
from sbert_tutor.data.msmarco import (
    MSMarcoData,
    QuerySplit,
    bm25_candidates_path,
    candidate_pairs,
    load_bm25_candidates,
    load_msmarco,
    sample_msmarco,
    split_queries,
)
from sbert_tutor.data.table import DataTable
from sbert_tutor.encoders.cross_encoder import CrossEncoder
from sbert_tutor.metrics import Run, evaluate_run_per_query, rank_documents
from sbert_tutor.search.rerank import PairScorer, cross_encoder_scores, merge_reranked
from sbert_tutor.stats import paired_bootstrap
from sbert_tutor.training import TrainingConfig
from sbert_tutor.training.recipe import fit

__all__ = [
    "BM25_DEPTH",
    "RERANK_RECORD",
    "RerankData",
    "RerankingSizes",
    "SIZES",
    "bm25_first_stage",
    "load_rerank_data",
    "msmarco_reranker",
    "plot_mrr_vs_k",
    "plot_rerank_grid",
    "published_reranker",
    "random_order_rr",
    "rerank_grid",
]


@dataclass(frozen=True, kw_only=True)
class RerankingSizes(RunSizes):
    """Chapter 14 (re-ranking). The inherited run sizes train the cross-encoder *and* the
    bi-encoder on STSb train, from the same start with the same steps and seeds; beside them:

    Attributes:
        cost_pairs: STSb test pairs each model scores while its pairs/s is timed.
        test_queries: held-out dev-subset queries (:func:`~sbert_tutor.data.msmarco.split_queries`,
            seed 0); the other queries' BM25 candidates train the MS MARCO cross-encoder.
        other_passages: random ``corpus_mini`` passages searched beyond the test queries' judged
            passages and BM25 candidates (``None``: all of ``corpus_mini``).
        negatives_per_query: BM25 negatives a training query (the best-ranked; ``None``: all 19).
        depths: the numbers k of candidates re-ranked; the largest is the retrieval depth.
        msmarco_run: the MS MARCO cross-encoder's training run.
    """

    cost_pairs: int
    test_queries: int
    other_passages: int | None
    negatives_per_query: int | None
    depths: tuple[int, ...]
    msmarco_run: RunSizes


# The MS MARCO cross-encoder starts from the retriever itself, all-MiniLM-L6-v2, with a new
# one-logit head: one epoch (quick: 30 steps; t4: two epochs over all 19 BM25 negatives of the
# 400 training queries, 1,000 steps of 16, the recorded rerank_study).
_MSMARCO_RUN = RunSizes(steps=None, batch_size=16, start=MINILM, lr=T4_LR, seeds=(0,))
# The STSb runs are chapter 7's (RegressionSizes); t4 and paper share the MS MARCO side.
_T4 = RerankingSizes(
    steps=240,
    batch_size=16,
    cost_pairs=1379,
    test_queries=140,
    other_passages=None,
    negatives_per_query=None,
    depths=(1, 5, 10, 20, 100),
    msmarco_run=replace(_MSMARCO_RUN, epochs=2),
    **T4_RUN,
)
#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, RerankingSizes] = register_sizes(
    "14_reranking",
    {
        "quick": RerankingSizes(
            steps=60,
            batch_size=16,
            examples=2000,
            cost_pairs=256,
            test_queries=30,
            other_passages=0,
            negatives_per_query=3,
            depths=(1, 2, 5, 10, 20),
            msmarco_run=replace(_MSMARCO_RUN, steps=30),
            **QUICK_RUN,
        ),
        "t4": _T4,
        "paper": replace(
            _T4, steps=None, epochs=4, msmarco_run=_MSMARCO_RUN, seeds=tuple(range(10)), **SBERT_RUN
        ),
    },
)


# ------------------------------------------------------------------------ part 2: MS MARCO
@dataclass(frozen=True)
class RerankData:
    """The dev subset split by query (``split``: no query on both sides): ``test``, the held-out
    queries with their judged passages, BM25 candidates and ``other_passages`` random
    ``corpus_mini`` passages (the searched corpus); ``train``, ``(query, passage, label)`` rows
    of the training queries' labelled BM25 candidates (the positive, then the best-ranked
    negatives); the data ``files`` read (hashed into provenance), ``notes`` on how it was built."""

    split: QuerySplit
    test: MSMarcoData
    train: DataTable
    files: tuple[Any, ...]
    notes: tuple[str, ...]


def load_rerank_data(
    test_queries: int, other_passages: int | None, negatives_per_query: int | None, seed: int = 0
) -> RerankData:
    """Split the 540 dev-subset queries by query (:func:`~sbert_tutor.data.msmarco.split_queries`,
    ``seed``); build the test collection and the training rows (:class:`RerankData`)."""
    dev = load_msmarco("msmarco-dev-subset")
    labelled = load_bm25_candidates(with_labels=True)
    split = split_queries(list(dev.queries), test_queries, seed=seed)
    held_out = replace(
        dev,
        queries={q: dev.queries[q] for q in split.test},
        qrels={q: dev.qrels[q] for q in split.test},
    )
    ranked = {q: [p for p, _ in labelled[q]] for q in split.test if q in labelled}
    test = sample_msmarco(held_out, None, other_passages, seed=seed, candidates=ranked)
    rows = candidate_pairs(dev.queries, dev.corpus, labelled, split.train, negatives_per_query)
    negatives = "all" if negatives_per_query is None else f"the {negatives_per_query} best-ranked"
    note = (
        f"split by query (seed {seed}): {len(split.test)} test queries, {len(split.train)} "
        f"training queries; training rows: each training query's MS MARCO positive among its "
        f"BM25 top-20 (label 1) and {negatives} of its other candidates (label 0), "
        f"{len(rows):,} rows"
    )
    files = (*dev.files, bm25_candidates_path())
    table = DataTable(
        pd.DataFrame(rows, columns=["query", "passage", "label"]),
        source="MS MARCO dev subset, labelled BM25 candidates of the training queries",
        files=tuple(str(f) for f in files),
        note=note,
    )
    return RerankData(split, test, table, files, (*test.notes, note))


def msmarco_reranker(
    sizes: RerankingSizes, train: DataTable, config: TrainingConfig, device: str | None = None
) -> tuple[CrossEncoder, str]:
    """The re-ranker and how it was made, in words: a cross-encoder trained with ``ce_bce`` on
    ``train`` from ``sizes.msmarco_run.start`` with a new one-logit head (seed 0), the same run
    with or without the hub (the published model is shown by its numbers,
    :func:`published_reranker`)."""
    start = CrossEncoderStart(sizes.msmarco_run.start)
    run = fit(start.load(), "ce_bce", train, config, device=device)
    how = (
        f"trained here: {start.label}, ce_bce on {len(train):,} labelled BM25 pairs of "
        f"the training queries, {run.log['steps_done']} steps of {config.batch_size}"
    )
    return run.model, how


def published_reranker() -> pd.DataFrame:
    """The published MS MARCO cross-encoder's numbers (re-ranking; labelled with their source)."""
    columns = ["ndcg@10 (TREC DL19, re-ranking)", "mrr@10 (MS MARCO dev, re-ranking)"]
    frame = pd.DataFrame.from_dict(
        MSMARCO_CROSS_ENCODER, orient="index", columns=[*columns, "docs/s (V100)"]
    )
    return frame.assign(source=str(MSMARCO_CROSS_ENCODER_SOURCE)).rename_axis("model (published)")


def plot_mrr_vs_k(table: pd.DataFrame, ax=None, label: str = "re-ranked"):
    """MRR@10 against the number of candidates re-ranked (k = 0: the bi-encoder alone, dotted),
    the ms a query on a second axis."""
    ax = new_axes(ax, figsize=(7, 3.5))
    reranked = table.loc[table.index > 0]
    ax.plot(reranked.index, reranked["mrr@10"], "o-", color="C0", label=label)
    ax.axhline(table.loc[0, "mrr@10"], color="grey", ls=":", label="bi-encoder alone")
    ax.set_xscale("log")
    ax.set_xticks(list(reranked.index), [str(k) for k in reranked.index])
    ax.set_xlabel("candidates re-ranked, k")
    ax.set_ylabel("MRR@10")
    right = ax.twinx()
    right.plot(reranked.index, reranked["total ms/query"], "s--", color="C1", lw=1)
    right.set_ylabel("ms a query (retrieval + re-ranking)", color="C1")
    right.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="best")
    return ax


# ------------------------------------------------------ part 3: which first stage, which re-ranker
#: The depth of the BM25 candidate lists in the data (Anserini's top 20): the grid re-ranks it.
BM25_DEPTH = 20


def bm25_first_stage(data: MSMarcoData) -> Run:
    """Anserini's BM25 top 20 of each test query of ``data`` as a run (score: minus the rank), read
    from the data's candidate lists (:func:`~sbert_tutor.data.msmarco.load_bm25_candidates`)."""
    ranked = load_bm25_candidates()
    missing = [q for q in data.queries if q not in ranked]
    if missing:
        raise KeyError(f"{len(missing)} test queries have no BM25 candidates, e.g. {missing[:3]}")
    return {q: {p: -float(r) for r, p in enumerate(ranked[q], 1)} for q in data.queries}


def random_order_rr(ranking: Sequence[str], relevant: set[str], k: int, cutoff: int = 10) -> float:
    r"""The expected RR@``cutoff`` of a re-ranker that orders the first ``k`` candidates at
    random (the others keep their places): with :math:`m \ge 1` relevant among the top
    :math:`k`, the first of them lands at rank :math:`r` with probability
    :math:`\binom{k-r}{m-1} / \binom{k}{m}`, so :math:`E[RR] = \sum_{r \le \text{cutoff}}
    \frac1r \binom{k-r}{m-1} / \binom{k}{m}`; with none there, the first stage's own RR@cutoff
    below :math:`k`. One relevant among 20: :math:`H_{10}/20 \approx 0.146`.
    """
    top = list(ranking[:k])
    m = sum(p in relevant for p in top)
    if m:
        return sum(
            comb(len(top) - r, m - 1) / r for r in range(1, min(cutoff, len(top)) + 1)
        ) / comb(len(top), m)
    later = [i for i, p in enumerate(ranking[k:cutoff], k + 1) if p in relevant]
    return 1.0 / later[0] if later else 0.0


def rerank_grid(
    first_stages: Mapping[str, Run],
    rerankers: Mapping[str, PairScorer],
    data: MSMarcoData,
    k: int = BM25_DEPTH,
    scored: Mapping[tuple[str, str], Mapping[str, Mapping[str, float]]] | None = None,
) -> tuple[pd.DataFrame, dict[str, dict[str, dict[str, float]]]]:
    """Every re-ranker on every first stage's top ``k``, on the same queries (``scored``: scores
    already given, by ``(first stage, re-ranker)``, not computed again). Returns one row per
    first stage and re-ranker (``"none"``: the stage alone): MRR@10, nDCG@10, the stage's
    recall@k, a random order's MRR@10 (:func:`random_order_rr`), the change of MRR@10 over the
    stage with its 95% paired bootstrap interval; and each run's RR@10 by query,
    ``{first stage: {re-ranker: {qid: rr}}}``."""
    threshold = data.relevance_threshold
    rows, per_query = [], {}
    for stage, run in first_stages.items():
        runs = {"none": run}
        for name, model in rerankers.items():
            scores = (scored or {}).get((stage, name))
            if scores is None:
                scores = cross_encoder_scores(model, data.queries, run, data.corpus, k, 32, None)
            runs[name] = merge_reranked(run, scores, k)
        measured = {
            n: evaluate_run_per_query(r, data.qrels, [10, k], threshold) for n, r in runs.items()
        }
        queries = list(measured["none"])
        relevant = {q: {p for p, g in data.qrels[q].items() if g >= threshold} for q in queries}
        ranks = {q: rank_documents(run.get(q, {})) for q in queries}
        random_rr = np.mean([random_order_rr(ranks[q], relevant[q], k) for q in queries])
        base = [measured["none"][q]["mrr@10"] for q in queries]
        per_query[stage] = {}
        for name, metrics in measured.items():
            rr = [metrics[q]["mrr@10"] for q in queries]
            per_query[stage][name] = dict(zip(queries, rr, strict=True))
            boot = paired_bootstrap(rr, base) if name != "none" else None
            rows.append(
                {
                    "first stage": stage,
                    "re-ranker": name,
                    "mrr@10": float(np.mean(rr)),
                    "ndcg@10": float(np.mean([metrics[q]["ndcg@10"] for q in queries])),
                    f"first stage recall@{k}": float(
                        np.mean([measured["none"][q][f"recall@{k}"] for q in queries])
                    ),
                    f"random order of top {k}": float(random_rr),
                    "change": boot.change if boot else np.nan,
                    "95% low": boot.low if boot else np.nan,
                    "95% high": boot.high if boot else np.nan,
                    "better / worse queries": f"{boot.better} / {boot.worse}" if boot else "",
                }
            )
    return pd.DataFrame(rows).set_index(["first stage", "re-ranker"]), per_query


#: The recorded study the chapter shows (``benchmarks/rerank_study.py --profile t4 --device cpu``).
RERANK_RECORD = "rerank_study_t4_cpu_2threads"


def plot_rerank_grid(table: pd.DataFrame, ax=None, title: str | None = None):
    """MRR@10 of each first stage alone and re-ranked by each re-ranker (bars, 95% intervals of
    the change drawn on the re-ranked bars), and the random order of the top k (dashed)."""
    ax = new_axes(ax, figsize=(7, 3.2))
    stages = list(dict.fromkeys(table.index.get_level_values(0)))
    names = list(dict.fromkeys(table.index.get_level_values(1)))
    width = 0.8 / len(names)
    base = table.xs("none", level=1).reindex(stages)["mrr@10"].to_numpy()
    for j, name in enumerate(names):
        rows = table.xs(name, level=1).reindex(stages)
        x = np.arange(len(stages)) + (j - (len(names) - 1) / 2) * width
        errors = None
        if name != "none":  # the change's interval, drawn around the re-ranked bar
            low, high = base + rows["95% low"].to_numpy(), base + rows["95% high"].to_numpy()
            errors = [rows["mrr@10"] - low, high - rows["mrr@10"]]
        label = "first stage alone" if name == "none" else f"re-ranked: {name}"
        ax.bar(x, rows["mrr@10"], width, label=label, color=f"C{j}", yerr=errors, capsize=3)
    floor = table.filter(like="random order").iloc[:, 0].groupby(level=0).first().reindex(stages)
    for i, value in enumerate(floor):
        ax.hlines(value, i - 0.45, i + 0.45, colors="k", linestyles="--", lw=1)
    ax.plot([], [], "k--", lw=1, label=floor.name.replace("random order", "a random order"))
    ax.set_xticks(np.arange(len(stages)), stages)
    ax.set_ylabel("MRR@10")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax
