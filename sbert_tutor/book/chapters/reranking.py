r"""Chapter 14, re-ranking: accuracy beside cost, then retrieve-then-re-rank on MS MARCO.

Part 1 trains a **cross-encoder** and a **bi-encoder** the same way, as SBERT's Table 2 compares
them (Reimers & Gurevych, 2019): the same start model, the same STSb train pairs, the same
steps, learning rate and seeds (:func:`stsb_cross_vs_bi`). The bi-encoder learns the cosine
regression of chapter 7; the cross-encoder reads both sentences together and learns
:math:`\sigma(z) \approx y / 5` with the binary cross-entropy (``ce_bce``,
sentence-transformers' recipe for STSb). :func:`pair_rates` times what each costs a pair.

Part 2 re-ranks all-MiniLM-L6-v2's top-:math:`k` on MS MARCO queries held out by
:func:`~sbert_tutor.data.msmarco.split_queries` (:func:`load_rerank_data`) with a cross-encoder
trained here on the other queries' labelled BM25 candidates (:func:`msmarco_reranker`), the same
model whether or not the hub is reachable; the published ``cross-encoder/ms-marco-MiniLM-L6-v2``
appears as its published numbers (:func:`published_reranker`). One scoring of
the deepest :math:`K` candidates serves every :math:`k \le K`
(:func:`~sbert_tutor.search.rerank.merge_reranked`): :func:`rerank_table` and
:func:`plot_mrr_vs_k`.

Part 3 asks which re-ranker helps which first stage: BM25's top 20 (:func:`bm25_first_stage`)
and the bi-encoder's, each re-ranked by each pair scorer, beside the MRR@10 of a random order
(:func:`random_order_rr`, :func:`rerank_grid`, :func:`plot_rerank_grid`); the recorded
:func:`rerank_study` trains a cross-encoder longer (``benchmarks/rerank_study.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book.bootstrap import PairedBootstrap, interval_verdict, paired_bootstrap
from sbert_tutor.book.cost import median_seconds
from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.seeds import SeededRuns, Verdict, seeded_variants, summarize, verdict
from sbert_tutor.book.sizes import QUICK_RUN, SBERT_RUN, T4_LR, T4_RUN, RunSizes, register_sizes
from sbert_tutor.book.weak_start import MINILM, CrossEncoderStart, load_start
from sbert_tutor.data import STSData
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
from sbert_tutor.encoders.protocol import Encoder
from sbert_tutor.evaluation.retrieval import encode_corpus, retrieve
from sbert_tutor.metrics import Run, evaluate_run, evaluate_run_per_query
from sbert_tutor.search.rerank import PairScorer, cross_encoder_scores, merge_reranked
from sbert_tutor.training import TrainingConfig
from sbert_tutor.training.recipe import fit

__all__ = [
    "BI",
    "BM25_DEPTH",
    "CROSS",
    "CrossVsBi",
    "RerankData",
    "RERANK_RECORD",
    "RerankingSizes",
    "Retrieval",
    "SIZES",
    "STSB_VARIANTS",
    "Scores",
    "TRAINED",
    "WEAK",
    "bm25_first_stage",
    "first_relevant_moves",
    "first_stage_ceiling",
    "grid_values",
    "load_rerank_data",
    "msmarco_reranker",
    "pair_rates",
    "plot_mrr_vs_k",
    "plot_rerank_grid",
    "published_reranker",
    "random_order_rr",
    "rerank_change",
    "rerank_grid",
    "rerank_study",
    "rerank_table",
    "rerank_verdict",
    "stsb_cross_vs_bi",
    "study_table",
    "timed_retrieval",
    "timed_scores",
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
        depths: the numbers of candidates k re-ranked; the largest is the retrieval depth.
        msmarco_run: the MS MARCO cross-encoder's training run (start, steps, batch, lr).
    """

    cost_pairs: int
    test_queries: int
    other_passages: int | None
    negatives_per_query: int | None
    depths: tuple[int, ...]
    msmarco_run: RunSizes


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, RerankingSizes] = register_sizes(
    "14_reranking",
    {
        # the STSb runs are chapter 7's (RegressionSizes); the MS MARCO cross-encoder starts from
        # the retriever itself, all-MiniLM-L6-v2, with a new one-logit head
        "quick": RerankingSizes(
            steps=60,
            batch_size=16,
            examples=2000,
            cost_pairs=256,
            test_queries=30,
            other_passages=0,
            negatives_per_query=3,
            depths=(1, 2, 5, 10, 20),
            msmarco_run=RunSizes(steps=30, batch_size=16, start=MINILM, lr=T4_LR, seeds=(0,)),
            **QUICK_RUN,
        ),
        "t4": RerankingSizes(
            steps=240,
            batch_size=16,
            examples=None,
            cost_pairs=1379,
            test_queries=140,
            other_passages=None,
            # all 19 BM25 negatives of the 400 training queries, two epochs: 1,000 steps of 16
            # (the recorded rerank_study)
            negatives_per_query=None,
            depths=(1, 5, 10, 20, 100),
            msmarco_run=RunSizes(
                steps=None, epochs=2, batch_size=16, start=MINILM, lr=T4_LR, seeds=(0,)
            ),
            **T4_RUN,
        ),
        "paper": RerankingSizes(
            steps=None,
            epochs=4,
            examples=None,
            cost_pairs=1379,
            test_queries=140,
            other_passages=None,
            negatives_per_query=None,
            depths=(1, 5, 10, 20, 100),
            msmarco_run=RunSizes(steps=None, batch_size=16, start=MINILM, lr=T4_LR, seeds=(0,)),
            seeds=tuple(range(10)),
            **SBERT_RUN,
        ),
    },
)

#: The two STSb variants, trained the same way: name -> (objective, options).
BI = "bi-encoder: cosine regression"
CROSS = "cross-encoder: BCE on y / 5"
STSB_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    BI: ("cosine", {}),
    CROSS: ("ce_bce", {"score_range": (0.0, 5.0)}),
}


# ------------------------------------------------------------------------ part 1: STSb
@dataclass(frozen=True)
class CrossVsBi:
    """:func:`stsb_cross_vs_bi`: the two seeded runs, one table side by side, and the
    cross-encoder's :func:`~sbert_tutor.book.seeds.verdict` against the bi-encoder."""

    bi: SeededRuns
    cross: SeededRuns
    table: pd.DataFrame
    verdict: Verdict

    @property
    def sentence(self) -> str:
        """The verdict, and why when the cross-encoder is behind (the chapter glues it)."""
        if self.verdict.difference >= 0:
            return self.verdict.sentence
        return (
            f"{self.verdict.sentence} The bi-encoder began from a start whose cosines already "
            f"score {self.bi.start:.2f}; the cross-encoder began from a random head "
            f"({self.cross.start:.2f}) and had the same steps to learn it and to read the two "
            "sentences together."
        )


def stsb_cross_vs_bi(
    sizes: RerankingSizes, config: TrainingConfig, eval_data: STSData
) -> CrossVsBi:
    """Train the bi-encoder and the cross-encoder on STSb train from ``sizes.start`` with the
    same ``config``, seeds and seeded subsets; score both on ``eval_data`` (Spearman x100 of
    the cosine, resp. of the cross-encoder's score)."""
    starts = {BI: sizes.start, CROSS: CrossEncoderStart(sizes.start)}
    runs = {
        name: seeded_variants(
            start,
            {name: STSB_VARIANTS[name]},
            "stsb",
            config,
            eval_data,
            seeds=sizes.seeds,
            max_examples=sizes.examples,
        )
        for name, start in starts.items()
    }
    rows = []
    for name, result in runs.items():
        row = result.table.loc[name]
        rows.append(
            {
                "model": name,
                "start (no training)": result.start,
                "mean": row["mean"],
                "spread": row["spread"],
                "min": row["min"],
                "max": row["max"],
                "seeds": int(row["seeds"]),
            }
        )
    both = replace(runs[BI], table=summarize(pd.concat([runs[BI].runs, runs[CROSS].runs])))
    return CrossVsBi(
        runs[BI], runs[CROSS], pd.DataFrame(rows).set_index("model"), verdict(both, CROSS, BI)
    )


def pair_rates(
    models: Mapping[str, Any],
    pairs: Sequence[tuple[str, str]],
    batch_size: int = 32,
    repeats: int = 3,
) -> pd.DataFrame:
    """Pairs scored a second by each model, the median of ``repeats`` timings. The time does
    not depend on the weights, only on the architecture, so start models time as trained ones.

    A cross-encoder scores a pair with one forward pass of the pair (``predict``); a bi-encoder
    encodes both sentences and takes their cosine. Both timings start from text.
    """
    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    rows = []
    for name, model in models.items():
        if isinstance(model, CrossEncoder):

            def work(model=model):
                return model.predict(list(pairs), batch_size=batch_size)
        else:

            def work(model=model):
                u = model.encode(firsts, batch_size=batch_size, normalize_embeddings=True)
                v = model.encode(seconds, batch_size=batch_size, normalize_embeddings=True)
                return (u * v).sum(axis=1)

        work()  # warm-up
        seconds_taken, _ = median_seconds(work, repeats)
        rows.append({"model": name, "pairs/s": len(pairs) / seconds_taken})
    return pd.DataFrame(rows).set_index("model")


# ------------------------------------------------------------------------ part 2: MS MARCO
@dataclass(frozen=True)
class RerankData:
    """The dev subset split by query: a test collection and training rows.

    Attributes:
        split: the query ids of each side (no query in both).
        test: the held-out queries, their judged passages, their BM25 candidates and
            ``other_passages`` random ``corpus_mini`` passages (the searched corpus).
        train: ``(query, passage, label)`` rows of the training queries' labelled BM25
            candidates: the positive, then the best-ranked negatives.
        files: data files read (hashed into provenance); notes: how it was built.
    """

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
    ``train`` from ``sizes.msmarco_run.start`` with a new one-logit head (seed 0).

    The same model is trained whether or not the hub is reachable, so the page shows the same
    run everywhere; the published MS MARCO cross-encoder is shown as its published numbers
    (:func:`published_reranker`).
    """
    start = CrossEncoderStart(sizes.msmarco_run.start)
    run = fit(start.load(), "ce_bce", train, config, device=device)
    how = (
        f"trained here: {start.label}, ce_bce on {len(train):,} labelled BM25 pairs of "
        f"the training queries, {run.log['steps_done']} steps of {config.batch_size}"
    )
    return run.model, how


@dataclass(frozen=True)
class Retrieval:
    """:func:`timed_retrieval`: the run, the ms a query (query encoding + exact search over
    the pre-encoded corpus) and the seconds the corpus took to encode once."""

    run: Run
    ms_per_query: float
    corpus_seconds: float


def timed_retrieval(encoder: Encoder, data: MSMarcoData, top_k: int) -> Retrieval:
    """Encode ``data.corpus`` once, then retrieve the top ``top_k`` for every query, timed."""
    start = time.perf_counter()
    corpus = encode_corpus(encoder, data.corpus)
    corpus_seconds = time.perf_counter() - start
    start = time.perf_counter()
    run = retrieve(encoder, data.queries, corpus, top_k=top_k, show_progress_bar=False)
    ms = 1000 * (time.perf_counter() - start) / len(data.queries)
    return Retrieval(run, ms, corpus_seconds)


@dataclass(frozen=True)
class Scores:
    """:func:`timed_scores`: cross-encoder scores of each query's first ``k`` candidates and
    the ms a pair they took (all pairs in one batched ``predict``)."""

    scores: dict[str, dict[str, float]]
    k: int
    ms_per_pair: float


def timed_scores(
    cross_encoder: CrossEncoder, data: MSMarcoData, run: Run, k: int, batch_size: int = 32
) -> Scores:
    """Score the first ``k`` candidates of every query of ``run`` once, timed."""
    start = time.perf_counter()
    scores = cross_encoder_scores(
        cross_encoder, data.queries, run, data.corpus, k, batch_size, show_progress_bar=None
    )
    pairs = sum(map(len, scores.values()))
    return Scores(scores, k, 1000 * (time.perf_counter() - start) / max(pairs, 1))


def first_stage_ceiling(retrieval: Retrieval, data: MSMarcoData, k: int) -> tuple[float, float]:
    """The first stage's recall@k and the highest MRR@10 that re-ranking its top ``k`` can reach.

    Re-ranking only re-orders the first ``k`` candidates (the others keep their places): a
    perfect re-ranker puts a relevant passage first for every query that has one among them
    (reciprocal rank 1), and leaves every other query's RR@10 as the first stage had it. The
    mean of that over the queries is the ceiling; no re-ranker of these ``k`` can do better.
    """
    per_query = evaluate_run_per_query(
        retrieval.run, data.qrels, ks=sorted({k, 10}), relevance_threshold=data.relevance_threshold
    )
    recall = [m[f"recall@{k}"] for m in per_query.values()]
    best = [1.0 if m[f"recall@{k}"] > 0 else m["mrr@10"] for m in per_query.values()]
    return float(np.mean(recall)), float(np.mean(best))


def rerank_table(
    retrieval: Retrieval, scores: Scores, data: MSMarcoData, depths: Sequence[int]
) -> pd.DataFrame:
    """MRR@10 and nDCG@10 of the bi-encoder alone (k = 0) and re-ranked at each depth k; for
    each k the first stage's recall@k and the MRR@10 ceiling of re-ranking its top k
    (:func:`first_stage_ceiling`); and the ms a query: retrieval, plus k times the measured ms
    a pair (amortised over batches of pairs, not one query's latency) for re-ranking."""
    rows = [(0, retrieval.run)]
    rows += [(k, merge_reranked(retrieval.run, scores.scores, k)) for k in depths]
    out = []
    for k, run in rows:
        metrics = evaluate_run(
            run, data.qrels, ks=[10], relevance_threshold=data.relevance_threshold
        )
        recall, ceiling = first_stage_ceiling(retrieval, data, k) if k else (np.nan, np.nan)
        out.append(
            {
                "k re-ranked": k,
                "first stage recall@k": recall,
                "mrr@10 ceiling": ceiling,
                "mrr@10": metrics["mrr@10"],
                "ndcg@10": metrics["ndcg@10"],
                "retrieval ms/query": retrieval.ms_per_query,
                "re-ranking ms/query": k * scores.ms_per_pair,
            }
        )
    table = pd.DataFrame(out).set_index("k re-ranked")
    table["total ms/query"] = table["retrieval ms/query"] + table["re-ranking ms/query"]
    return table


def rerank_change(
    retrieval: Retrieval, reranked: Run, data: MSMarcoData, n_resamples: int = 2000
) -> PairedBootstrap:
    """The change of MRR@10 that re-ranking made, query by query, with a 95% paired bootstrap
    interval over the test queries (:func:`~sbert_tutor.book.bootstrap.paired_bootstrap`)."""
    threshold = data.relevance_threshold
    before = evaluate_run_per_query(retrieval.run, data.qrels, [10], threshold)
    after = evaluate_run_per_query(reranked, data.qrels, [10], threshold)
    queries = list(before)
    return paired_bootstrap(
        [after[q]["mrr@10"] for q in queries],
        [before[q]["mrr@10"] for q in queries],
        n_resamples=n_resamples,
    )


def plot_mrr_vs_k(table: pd.DataFrame, ax=None, label: str = "re-ranked"):
    """MRR@10 against the number of candidates re-ranked (k = 0: the bi-encoder alone, dotted),
    the ms a query on a second axis."""
    ax = new_axes(ax, figsize=(7, 3.5))
    reranked = table.loc[table.index > 0]
    ax.plot(reranked.index, reranked["mrr@10"], "o-", color="C0", label=label)
    ax.axhline(table.loc[0, "mrr@10"], color="grey", ls=":", label="bi-encoder alone")
    ax.set_xscale("log")
    ax.set_xticks(list(reranked.index))
    ax.set_xticklabels([str(k) for k in reranked.index])
    ax.set_xlabel("candidates re-ranked, k")
    ax.set_ylabel("MRR@10")
    right = ax.twinx()
    right.plot(reranked.index, reranked["total ms/query"], "s--", color="C1", lw=1)
    right.set_ylabel("ms a query (retrieval + re-ranking)", color="C1")
    right.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="best")
    return ax


def first_relevant_moves(retrieval: Retrieval, reranked: Run, data: MSMarcoData) -> pd.Series:
    """How many test queries the re-ranking moved their first relevant passage up, down, or
    left it where it was (within the candidates; not retrieved counts as rank infinity)."""
    from sbert_tutor.metrics import rank_documents

    def first(run: Run, q: str) -> float:
        ranking = rank_documents(run.get(q, {}))
        grades = data.qrels.get(q, {})
        threshold = data.relevance_threshold
        hits = [i for i, d in enumerate(ranking, 1) if grades.get(d, 0) >= threshold]
        return float(hits[0]) if hits else np.inf

    moves = {"up": 0, "same": 0, "down": 0}
    for q in data.queries:
        before, after = first(retrieval.run, q), first(reranked, q)
        moves["up" if after < before else "down" if after > before else "same"] += 1
    return pd.Series(moves, name="queries")


def rerank_verdict(
    table: pd.DataFrame, reranker: str, interval: PairedBootstrap | None = None
) -> str:
    """One sentence on what re-ranking the deepest k did to MRR@10, and the why when it hurt:
    ``reranker`` says which cross-encoder ran (:func:`msmarco_reranker`'s words); ``interval``
    (:func:`rerank_change`) adds the change's 95% bootstrap interval over the test queries."""
    k = int(table.index.max())
    before, after = float(table.loc[0, "mrr@10"]), float(table.loc[k, "mrr@10"])
    change = after - before
    head = f"Re-ranking the top {k} moves MRR@10 from {before:.3f} to {after:.3f} ({change:+.3f}"
    if interval is not None:
        head += (
            f"; 95% paired bootstrap interval over the {interval.n} test queries "
            f"[{interval.low:+.3f}, {interval.high:+.3f}], "
            + (
                "which contains 0: these queries cannot tell the two rankings apart"
                if interval.low <= 0 <= interval.high
                else "which excludes 0"
            )
            + f"; {interval.better} queries gained, {interval.worse} lost"
        )
    head += ")"
    if change > 0:
        return head + (
            ": the cross-encoder trained here on a few hundred queries already orders the "
            "bi-encoder's candidates better on these held-out queries. It is not the published "
            "model, and a handful of test queries makes the size of the gain uncertain."
        )
    return head + (
        f": the cross-encoder trained here ({reranker.removeprefix('trained here: ')}) does not "
        "beat the bi-encoder. It saw a few hundred training queries with one judged passage "
        "each (and, in this profile, only part of them), while all-MiniLM-L6-v2 was trained on "
        "about a billion pairs and the published cross-encoder on MS MARCO's whole training "
        "set. The training data and steps, not the architecture, are what is missing here."
    )


def published_reranker() -> pd.DataFrame:
    """The published MS MARCO cross-encoder's numbers (re-ranking; labelled with their source)."""
    from sbert_tutor.book.published import MSMARCO_CROSS_ENCODER, MSMARCO_CROSS_ENCODER_SOURCE

    frame = pd.DataFrame.from_dict(
        MSMARCO_CROSS_ENCODER,
        orient="index",
        columns=[
            "ndcg@10 (TREC DL19, re-ranking)",
            "mrr@10 (MS MARCO dev, re-ranking)",
            "docs/s (V100)",
        ],
    )
    frame["source"] = str(MSMARCO_CROSS_ENCODER_SOURCE)
    frame.index.name = "model (published)"
    return frame


# ------------------------------------------------------------ part 3: which first stage, which re-ranker
#: The depth of the BM25 candidate lists in the data (Anserini's top 20): the grid re-ranks it.
BM25_DEPTH = 20


def bm25_first_stage(data: MSMarcoData) -> Run:
    """Anserini's BM25 top 20 of each test query of ``data`` as a run (score: minus the rank),
    read from the data's candidate lists (:func:`~sbert_tutor.data.msmarco.load_bm25_candidates`)."""
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
    from math import comb

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
    """Every re-ranker on every first stage's top ``k``, on the same queries; ``scored`` holds
    scores a re-ranker already gave a first stage's candidates (its first ``k`` or more, as
    :func:`timed_scores` returns them), keyed ``(first stage, re-ranker)``: not computed again.

    Returns a table (one row per first stage and re-ranker, ``"none"`` for the first stage
    alone): MRR@10, nDCG@10, the first stage's recall@k, the MRR@10 a random order of its top k
    would give (:func:`random_order_rr`), and the change of MRR@10 over the first stage with its
    95% paired bootstrap interval over the queries; and each run's RR@10 query by query
    (``{first stage: {re-ranker: {qid: rr}}}``).
    """
    from sbert_tutor.metrics import rank_documents

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


#: The re-ranker names of :func:`rerank_study`.
WEAK, TRAINED = "weak (quick profile's run)", "trained (this profile's run)"


def rerank_study(
    sizes: RerankingSizes, device: str | None = None, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Chapter 14's recorded study: two first stages (BM25's top 20, all-MiniLM-L6-v2's top 20)
    and two re-rankers (the quick profile's 30-step cross-encoder and ``sizes``' trained one,
    both trained on the same training queries of ``sizes``' split), on ``sizes``' held-out
    test queries (:func:`rerank_grid`). Returns a JSON-ready record (rows, per-query RR@10,
    how each re-ranker was made, the data notes and files)."""
    from sbert_tutor.book.configs import training_config

    weak_sizes = SIZES["quick"]
    data = load_rerank_data(sizes.test_queries, sizes.other_passages, sizes.negatives_per_query)
    weak_rows = load_rerank_data(
        sizes.test_queries, sizes.other_passages, weak_sizes.negatives_per_query
    ).train
    made, rerankers, seconds = {}, {}, {}
    for name, run_sizes, rows in (
        (WEAK, weak_sizes, weak_rows),
        (TRAINED, sizes, data.train),
    ):
        log(f"training the {name} re-ranker on {len(rows):,} rows")
        start = time.perf_counter()
        config = training_config(run_sizes.msmarco_run, eval_before=False, show_progress_bar=True)
        rerankers[name], made[name] = msmarco_reranker(run_sizes, rows, config, device=device)
        seconds[f"train {name}"] = time.perf_counter() - start
    log("retrieving with all-MiniLM-L6-v2")
    start = time.perf_counter()
    dense = timed_retrieval(load_start(MINILM), data.test, top_k=BM25_DEPTH)
    seconds["dense retrieval"] = time.perf_counter() - start
    stages = {"BM25 (Anserini)": bm25_first_stage(data.test), "all-MiniLM-L6-v2": dense.run}
    log("re-ranking")
    start = time.perf_counter()
    table, per_query = rerank_grid(stages, rerankers, data.test, BM25_DEPTH)
    seconds["re-ranking"] = time.perf_counter() - start
    return {
        "k": BM25_DEPTH,
        "rerankers": made,
        "rows": table.reset_index().to_dict(orient="records"),
        "per_query_rr@10": per_query,
        "notes": list(data.notes),
        "seconds_by_part": seconds,
        "files": [str(f) for f in data.files],
    }


#: The recorded study the chapter shows (``benchmarks/rerank_study.py --profile t4 --device cpu``).
RERANK_RECORD = "rerank_study_t4_cpu_2threads"


def study_table(record: Mapping[str, Any]) -> pd.DataFrame:
    """The recorded :func:`rerank_study`'s rows as :func:`rerank_grid` returns them."""
    return pd.DataFrame(record["rows"]).set_index(["first stage", "re-ranker"])


def plot_rerank_grid(table: pd.DataFrame, ax=None, title: str | None = None):
    """MRR@10 of each first stage alone and re-ranked by each re-ranker (bars, 95% intervals of
    the change drawn on the re-ranked bars), and the random order of the top k (dashed)."""
    ax = new_axes(ax, figsize=(7, 3.2))
    stages = list(dict.fromkeys(table.index.get_level_values(0)))
    names = list(dict.fromkeys(table.index.get_level_values(1)))
    width = 0.8 / len(names)
    for j, name in enumerate(names):
        rows = table.xs(name, level=1).reindex(stages)
        x = np.arange(len(stages)) + (j - (len(names) - 1) / 2) * width
        base = table.xs("none", level=1).reindex(stages)["mrr@10"].to_numpy()
        errors = None
        if name != "none":
            low = base + rows["95% low"].to_numpy()
            high = base + rows["95% high"].to_numpy()
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


def grid_values(table: pd.DataFrame) -> dict[str, str]:
    """The numbers the chapter glues from a :func:`rerank_grid` table: for each first stage
    (``bm25``, ``dense``) and re-ranker (its position: ``r1``, ``r2``), MRR@10 alone and
    re-ranked, the change with its interval in words, and the random-order floor."""
    stages = list(dict.fromkeys(table.index.get_level_values(0)))
    names = [n for n in dict.fromkeys(table.index.get_level_values(1)) if n != "none"]
    out: dict[str, str] = {}
    for key, stage in zip(("bm25", "dense"), stages, strict=False):
        alone = table.loc[(stage, "none")]
        out[f"{key}_alone"] = f"{alone['mrr@10']:.3f}"
        out[f"{key}_random"] = f"{alone.filter(like='random order').iloc[0]:.3f}"
        for i, name in enumerate(names, 1):
            row = table.loc[(stage, name)]
            out[f"{key}_r{i}"] = f"{row['mrr@10']:.3f}"
            where = {
                "higher": "above the first stage alone",
                "lower": "below the first stage alone",
                "no difference": "an interval that holds 0: these queries cannot tell the two apart",
            }[interval_verdict(row["95% low"], row["95% high"])]
            out[f"{key}_r{i}_change"] = (
                f"{row['change']:+.3f} [{row['95% low']:+.3f}, {row['95% high']:+.3f}], {where}"
            )
    return out
