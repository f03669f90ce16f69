r"""Chapter 12a (training a retriever): six ways to fine-tune a bi-encoder on the same queries.

One start model, one split of the MS MARCO dev subset's queries: the six :data:`VARIANTS` and the
start model scored on the held-out queries (:data:`MEASURES`, and per query for the bootstrap).
The chapter's loop and :func:`run_study` (``benchmarks/retriever_study.py``'s) call the same
pieces in the same order. Also: each profile's :data:`SIZES`, the study's figure and that of the
recorded ``mnrl`` / ``cached_mnrl`` memory runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book.figures import new_axes, new_panels
from sbert_tutor.book.sizes import ChapterSizes, register_sizes
from sbert_tutor.book.weak_start import (
    MINILM,
    CrossEncoderStart,
    WeakStart,
    load_start,
    start_label,
)
from sbert_tutor.data import msmarco
from sbert_tutor.evaluation.retrieval import encode_corpus, evaluate_retrieval
from sbert_tutor.metrics import evaluate_run, evaluate_run_per_query
from sbert_tutor.search.rerank import BiEncoderScorer, rerank
from sbert_tutor.stats import seeded_subset
from sbert_tutor.training import TrainingConfig
from sbert_tutor.training.hard_negatives import mine_hard_negatives, teacher_margins
from sbert_tutor.training.recipe import fit

__all__ = [
    "MEASURES",
    "SIZES",
    "VARIANTS",
    "RetrieverData",
    "RetrieverSizes",
    "evaluate_variant",
    "load_retriever_data",
    "mined_sets",
    "plot_memory",
    "plot_study",
    "rerank_quality",
    "run_study",
    "train_teachers",
    "train_variant",
]

#: The measures of every row (fractions in [0, 1]); MRR@10 is MS MARCO's official one.
MEASURES = ("mrr@10", "ndcg@10", "recall@100")
#: The trained variants, in the order the chapter shows them: ``name -> objective``.
VARIANTS: dict[str, str] = {
    "in-batch negatives": "mnrl",
    "BM25 negatives": "mnrl",
    "BM25 negatives, top 3 skipped": "mnrl",
    "dense negatives, filtered": "mnrl",
    "Margin-MSE from a cross-encoder": "margin_mse",
    "Margin-MSE from a bi-encoder": "margin_mse",
}


@dataclass(frozen=True, kw_only=True)
class RetrieverSizes(ChapterSizes):
    """One profile's run.

    Attributes:
        start: the bi-encoder every variant starts from (a hub name or a :class:`WeakStart`).
        miner: the dense model that mines negatives (a stronger, already trained retriever).
        teacher_start: the cross-encoder teacher's start (its transformer, a new one-logit head).
        test_queries: held-out queries of the 540; ``train_queries``: how many of the others
            train (a seeded subset; ``None``: all).
        other_passages: random ``corpus_mini`` passages added to the test corpus beyond the test
            queries' judged passages and BM25 candidates (``None``: the whole mini corpus).
        epochs, batch_size, lr, warmup_ratio: every variant's training (the same for all six).
        relative_margin: the dense miner's false-negative filter (a negative must score below
            ``(1 - relative_margin)`` times its positive); ``mine_range_max``: how deep it looks
            for one that passes (a pair with none is dropped, as sentence-transformers does).
        teacher_epochs, teacher_batch_size, teacher_lr: the cross-encoder's ``ce_bce`` training;
            ``teacher_negatives``: BM25 negatives per training query in its rows (``None``: all).
        seeds: each variant's training seeds.
    """

    start: str | WeakStart
    miner: str = MINILM
    teacher_start: str | WeakStart = MINILM
    test_queries: int = 200
    train_queries: int | None = None
    other_passages: int | None = None
    epochs: int = 1
    batch_size: int = 32
    lr: float = 1e-4
    warmup_ratio: float = 0.1
    relative_margin: float = 0.05
    mine_range_max: int = 50
    teacher_epochs: int = 1
    teacher_batch_size: int = 32
    teacher_lr: float = 5e-5
    teacher_negatives: int | None = 4
    seeds: tuple[int, ...] = (0,)

    def describe(self) -> dict[str, Any]:
        """Every field, the models by their labels (for tables and the results file)."""
        described = {f.name: getattr(self, f.name) for f in fields(self)}
        models = ("start", "miner", "teacher_start")
        return described | {name: start_label(described[name]) for name in models}


_T4 = RetrieverSizes(start=WeakStart(layers=2), epochs=10, teacher_epochs=8, seeds=(0, 1, 2))
#: The profiles' sizes. ``quick``: the smallest run that trains every variant: a one-layer start
#: with room to learn, one epoch over 200 of the 440 training queries (all 440, in the full run
#: at c80836f, raised in-batch negatives' live gain over the start from +0.044 to +0.085 MRR@10,
#: with the same verdicts for Margin-MSE, and the study loop took 560 s against 297 s for 200
#: with the fused optimizer at b2a6165), one seed, a small test corpus, and a teacher trained for
#: one short epoch (weak: the chapter says so and shows its re-ranking quality). ``t4``: the
#: recorded GPU run's sizes (the whole mini corpus). ``paper``: the t4 sizes (the study is the
#: book's own; no paper's setup to follow).
SIZES: dict[str, RetrieverSizes] = register_sizes(
    "12a_training_a_retriever",
    {
        "quick": RetrieverSizes(
            start=WeakStart(layers=1),
            teacher_start=WeakStart(layers=2),
            test_queries=100,
            train_queries=200,
            other_passages=2000,
            lr=2e-4,
        ),
        "t4": _T4,
        "paper": _T4,
    },
)


@dataclass
class RetrieverData:
    """The split and the rows built from it: ``test`` (the held-out queries and the searched
    corpus), ``pairs`` (the training queries' (anchor, positive) rows, one a judged passage),
    ``pool`` (the passages negatives are mined from: the training queries' BM25 candidates),
    ``labelled`` (the teacher's (query, passage, label) rows: each training query's positive and
    its other BM25 candidates), ``test_candidates`` (each test query's BM25 top 20, best first:
    what the teacher re-ranks), ``files`` (data files read) and ``notes`` (how it was built)."""

    test: msmarco.MSMarcoData
    pairs: pd.DataFrame
    pool: list[str]
    labelled: pd.DataFrame
    test_candidates: dict[str, list[str]]
    files: tuple[Any, ...]
    notes: tuple[str, ...]

    def describe(self) -> dict[str, int]:
        """Sizes, for tables and provenance."""
        return {
            "train_queries": int(self.pairs["anchor"].nunique()),
            "train_pairs": len(self.pairs),
            "mining_pool": len(self.pool),
            "teacher_rows": len(self.labelled),
            "test_queries": len(self.test.queries),
            "test_passages": len(self.test.corpus),
        }


def load_retriever_data(sizes: RetrieverSizes, seed: int = 0) -> RetrieverData:
    """Split the dev subset's 540 queries by query (``seed``) and build every row the study uses."""
    dev = msmarco.load_msmarco("msmarco-dev-subset")
    bm25 = msmarco.load_bm25_candidates(with_labels=True)  # {qid: [(pid, label), ...]}
    split = msmarco.split_queries(list(dev.queries), sizes.test_queries, seed=seed)
    train = split.train
    if sizes.train_queries is not None:
        if not 0 < sizes.train_queries <= len(train):
            raise ValueError(
                f"RetrieverSizes.train_queries={sizes.train_queries!r}: the split leaves "
                f"{len(train)} training queries; pass 1..{len(train)}, or None for all of them"
            )
        train = tuple(train[i] for i in seeded_subset(len(train), sizes.train_queries, seed))
    held_out = replace(dev, queries={q: dev.queries[q] for q in split.test})
    ranked = {q: [p for p, _ in bm25[q]] for q in split.test if q in bm25}
    test = msmarco.sample_msmarco(held_out, None, sizes.other_passages, seed, candidates=ranked)
    threshold = dev.relevance_threshold
    pairs, pool = [], {}
    for qid in train:
        relevant = sorted(p for p, g in dev.qrels.get(qid, {}).items() if g >= threshold)
        pairs += [(dev.queries[qid], dev.corpus[p]) for p in relevant if p in dev.corpus]
        for pid, _ in bm25.get(qid, ()):
            pool.setdefault(pid, dev.corpus[pid])
    rows = msmarco.candidate_pairs(dev.queries, dev.corpus, bm25, train, sizes.teacher_negatives)
    note = (
        f"split by query (seed {seed}): {len(split.test)} test queries, {len(train)} of the "
        f"{len(split.train)} others as training queries, with {len(pairs)} judged (query, passage) "
        f"pairs; negatives mined from the training queries' {len(pool):,} BM25-candidate passages"
    )
    return RetrieverData(
        test=test,
        pairs=pd.DataFrame(pairs, columns=["anchor", "positive"]),
        pool=list(pool.values()),
        labelled=pd.DataFrame(rows, columns=["query", "passage", "label"]),
        test_candidates=ranked,
        files=(*dev.files, msmarco.bm25_candidates_path()),
        notes=(*test.notes, note),
    )


def train_teachers(
    data: RetrieverData, sizes: RetrieverSizes, miner: Any, device: str | None = None
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The Margin-MSE teachers, keyed ``"cross-encoder"`` (``sizes.teacher_start`` with a new
    one-logit head, trained with ``ce_bce`` on ``data.labelled``, seed 0) and ``"bi-encoder"``
    (the ``miner``, scoring a pair by its cosine), and what each is: its model, its training
    (rows, seconds) and :func:`rerank_quality`."""
    config = TrainingConfig(
        epochs=sizes.teacher_epochs,
        batch_size=sizes.teacher_batch_size,
        lr=sizes.teacher_lr,
        seed=0,
        show_progress_bar=False,
    )
    begin = time.perf_counter()
    start = CrossEncoderStart(sizes.teacher_start).load()
    cross_encoder = fit(start, "ce_bce", data.labelled, config, device=device).model
    quality: dict[str, dict[str, Any]] = {
        "cross-encoder": {
            "model": f"{start_label(sizes.teacher_start)}, trained as a cross-encoder",
            "rows": len(data.labelled),
            "seconds": time.perf_counter() - begin,
        },
        "bi-encoder": {"model": f"{start_label(sizes.miner)} (cosine)"},
    }
    teachers = {"cross-encoder": cross_encoder, "bi-encoder": BiEncoderScorer(miner)}
    for kind, teacher in teachers.items():
        quality[kind] |= rerank_quality(teacher, data)
    return teachers, quality


def rerank_quality(cross_encoder: Any, data: RetrieverData) -> dict[str, float]:
    """MRR@10 of the test queries' BM25 top 20 as BM25 ranks it and as ``cross_encoder`` re-ranks
    it (how good the teacher is, on queries it never saw)."""
    test, ranked = data.test, data.test_candidates
    bm25 = {q: {p: -float(r) for r, p in enumerate(ranked[q])} for q in test.queries if q in ranked}
    reranked = rerank(cross_encoder, test.queries, bm25, test.corpus, batch_size=64)
    qrels = {q: test.qrels[q] for q in bm25}
    threshold = test.relevance_threshold
    return {
        name: float(evaluate_run(run, qrels, ks=(10,), relevance_threshold=threshold)["mrr@10"])
        for name, run in (("bm25_top20_mrr@10", bm25), ("reranked_top20_mrr@10", reranked))
    }


def mined_sets(
    data: RetrieverData, miner: Any, sizes: RetrieverSizes, teachers: Mapping[str, Any]
) -> dict[str, pd.DataFrame]:
    """Each variant's training rows (:data:`VARIANTS`): one hard negative per (query, positive)
    pair, the best one its rule keeps; the Margin-MSE ones labelled by ``teachers``' margins."""
    pairs = data.pairs
    one = {"corpus": data.pool, "num_negatives": 1}  # one negative a pair, from the pool
    sets = {
        "in-batch negatives": pairs,
        "BM25 negatives": mine_hard_negatives(pairs, "bm25", **one),
        "BM25 negatives, top 3 skipped": mine_hard_negatives(pairs, "bm25", range_min=3, **one),
    }
    dense = mine_hard_negatives(
        pairs, miner, relative_margin=sizes.relative_margin, range_max=sizes.mine_range_max, **one
    )
    sets["dense negatives, filtered"] = dense
    triplets = list(dense[["anchor", "positive", "negative"]].itertuples(index=False))
    for kind, teacher in teachers.items():
        margins = teacher_margins(teacher, triplets, batch_size=64)
        sets[f"Margin-MSE from a {kind}"] = dense.assign(label=margins)
    return sets


def evaluate_variant(encoder: Any, data: RetrieverData, score: str = "cosine") -> dict[str, Any]:
    """``encoder`` on the test split: the test corpus encoded once and searched with ``score``
    (``"cosine"``, or ``"dot"`` for a Margin-MSE student); ``results`` holds :data:`MEASURES`
    over the test queries and ``per_query`` each measure per query (for the paired bootstrap)."""
    test = data.test
    corpus = encode_corpus(encoder, test.corpus, show_progress_bar=False)
    result = evaluate_retrieval(
        encoder,
        test.queries,
        corpus,
        test.qrels,
        ks=(10, 100),
        score=score,
        show_progress_bar=False,
        relevance_threshold=test.relevance_threshold,
    )
    per_query = evaluate_run_per_query(result.run, test.qrels, (10, 100), test.relevance_threshold)
    return {
        "score": score,
        "results": {m: float(result.results[m]) for m in MEASURES},
        "per_query": {m: {q: float(v[m]) for q, v in per_query.items()} for m in MEASURES},
    }


def train_variant(
    sizes: RetrieverSizes,
    variant: str,
    rows: pd.DataFrame,
    data: RetrieverData,
    seed: int,
    device: str | None = None,
) -> dict[str, Any]:
    """A fresh ``sizes.start`` trained on ``rows`` with ``variant``'s objective, then
    :func:`evaluate_variant`: one run (its variant, seed, loss, seconds and steps, and scores)."""
    loss = VARIANTS[variant]
    encoder = load_start(sizes.start)
    # Margin-MSE regresses dot-product margins onto the teacher's, which a cosine (at most 2 apart)
    # could not reach: the student drops unit length and is searched by the dot product, as
    # Hofstatter et al.'s are
    score = "dot" if loss == "margin_mse" else "cosine"
    encoder.normalize = score == "cosine"
    config = TrainingConfig(
        epochs=sizes.epochs,
        batch_size=sizes.batch_size,
        lr=sizes.lr,
        warmup_ratio=sizes.warmup_ratio,
        seed=seed,
        show_progress_bar=False,
    )
    begin = time.perf_counter()
    run = fit(encoder, loss, rows, config, device=device)
    seconds = time.perf_counter() - begin
    steps = int(run.log["steps_done"])
    scores = evaluate_variant(run.model, data, score)
    return dict(variant=variant, seed=seed, loss=loss, seconds=seconds, steps=steps, **scores)


def run_study(
    sizes: RetrieverSizes, device: str | None = None, log: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The whole study as the chapter runs it, for the recorded runs, as a JSON-ready mapping:
    ``data`` (sizes of the split), ``notes``, ``files`` (read), ``runs`` (one per variant and
    seed, the start model's as ``"start model"``), ``teachers`` (:func:`train_teachers`' report),
    ``mining`` (rows kept per variant) and ``sizes``. ``log`` gets a line per finished step."""
    say = log or (lambda _: None)
    data = load_retriever_data(sizes)
    say(f"data: {data.describe()}")
    out: dict[str, Any] = {"data": data.describe(), "notes": list(data.notes)}
    out |= {"files": [str(f) for f in data.files], "runs": []}
    miner = load_start(sizes.miner)
    teachers, out["teachers"] = train_teachers(data, sizes, miner, device)
    say(f"teachers: {out['teachers']}")
    begin = time.perf_counter()
    sets = mined_sets(data, miner, sizes, teachers)
    out["mining"] = {
        "seconds": time.perf_counter() - begin,
        "rows": {name: len(rows) for name, rows in sets.items()},
        "miner": start_label(sizes.miner),
        "relative_margin": sizes.relative_margin,
        "range_max": sizes.mine_range_max,
    }
    del miner, teachers
    start = evaluate_variant(load_start(sizes.start), data)
    out["runs"].append({"variant": "start model", "seed": None, **start})
    say(f"start model: {start['results']}")
    for variant in VARIANTS:
        for seed in sizes.seeds:
            row = train_variant(sizes, variant, sets[variant], data, seed, device)
            out["runs"].append(row)
            say(f"{variant} / seed {seed}: {row['results']} in {row['seconds']:.1f} s")
    out["sizes"] = sizes.describe()
    return out


def plot_study(studies: Mapping[str, Mapping[str, Any]], axes: Any = None) -> Any:
    """MRR@10 and recall@100 of every variant as horizontal bars, one bar per study (e.g. the
    live quick run and a recorded one) in each variant's group; each seed a dot on its bar."""
    axes = new_panels(axes, 2, figsize=(11, 4.6))
    names = ["start model", *VARIANTS]
    height = 0.8 / max(len(studies), 1)
    for ax, measure in zip(axes, ("mrr@10", "recall@100"), strict=True):
        for j, (label, study) in enumerate(studies.items()):
            ys, means = [], []
            for i, variant in enumerate(names):
                values = [r["results"][measure] for r in study["runs"] if r["variant"] == variant]
                if not values:
                    continue
                y = i + (j - (len(studies) - 1) / 2) * height
                ys.append(y)
                means.append(float(np.mean(values)))
                ax.plot(values, [y] * len(values), "k.", markersize=4)
            ax.barh(ys, means, height=height, label=label, alpha=0.8)
        ax.set_yticks(range(len(names)), names if ax is axes[0] else [""] * len(names))
        ax.invert_yaxis()
        ax.set_xlabel(measure)
        ax.set_title(f"{measure} on the held-out queries (dots: seeds)")
    axes[1].legend(fontsize=8, loc="upper right", bbox_to_anchor=(1.0, -0.13), ncol=len(studies))
    return axes


def plot_memory(rows: pd.DataFrame, ax=None):
    """Step memory (``"step memory (MiB)"``) against batch size, one line with markers per
    (record, variant) of the chapter's memory table, the batch size on a log scale."""
    ax = new_axes(ax, figsize=(7, 3.8))
    measured = rows.dropna(subset=["step memory (MiB)"])
    for (record, variant), group in measured.groupby(["record", "variant"], sort=False):
        ax.plot(
            group["batch size"], group["step memory (MiB)"], marker="o",
            label=f"{variant} ({record})",
        )  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size (pairs)")
    ax.set_ylabel("memory of one step (MiB)\nabove the loaded model")
    ax.set_title("One training step: MNRL against cached MNRL (GradCache)")
    ax.legend(fontsize=8)
    return ax
