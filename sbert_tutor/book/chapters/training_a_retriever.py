r"""Chapter 12a (training a retriever): six ways to fine-tune a bi-encoder on the same queries.

From one start model and one split of the MS MARCO dev subset's queries (the test queries never
train), the chapter trains the six :data:`VARIANTS` and scores each, and the start model, on the
held-out queries: :data:`MEASURES`, and each per query for the paired bootstrap. The study's
pieces, which the chapter's loop and :func:`run_study` (the recorded runs',
``benchmarks/retriever_study.py``) call in the same order: :func:`load_retriever_data` (the
split and its rows), :func:`train_teachers` (a cross-encoder trained with ``ce_bce`` on the
training queries' labelled BM25 candidates, and the ``miner`` as a bi-encoder teacher, each with
its :func:`rerank_quality`), :func:`mined_sets` (one hard negative per training pair, mined from
the *training* queries' BM25 candidates only, with BM25 or with the dense ``miner``; the
Margin-MSE rows labelled with the teachers' margins), :func:`train_variant` and
:func:`evaluate_variant`.

The sizes of each profile live here (:data:`SIZES`), with the figures of the study
(:func:`plot_study`) and of the recorded memory runs of ``mnrl`` against ``cached_mnrl``
(:func:`plot_memory`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
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
from sbert_tutor.data.msmarco import (
    MSMarcoData,
    bm25_candidates_path,
    candidate_pairs,
    load_bm25_candidates,
    load_msmarco,
    sample_msmarco,
    split_queries,
)
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
        test_queries: held-out queries of the 540 (the rest train).
        train_queries: how many of the other queries train (a seeded subset of them; ``None``:
            all of them).
        other_passages: random ``corpus_mini`` passages added to the test corpus beyond the test
            queries' judged passages and BM25 candidates (``None``: the whole mini corpus).
        epochs, batch_size, lr, warmup_ratio: every variant's training (the same for all six).
        relative_margin: the dense miner's false-negative filter (a negative must score below
            ``(1 - relative_margin)`` times its positive).
        mine_range_max: the dense miner looks this deep into its ranking for a negative that
            passes the filter (a pair with none is dropped, as sentence-transformers does).
        teacher_epochs, teacher_batch_size, teacher_lr: the cross-encoder's ``ce_bce`` training.
        teacher_negatives: BM25 negatives per training query in the teacher's rows.
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
    teacher_lr: float = 2e-5
    teacher_negatives: int | None = None
    seeds: tuple[int, ...] = (0,)

    def describe(self) -> dict[str, Any]:
        """Every field, the models by their labels (for tables and the results file)."""
        models = ("start", "miner", "teacher_start")
        return {
            f.name: start_label(getattr(self, f.name))
            if f.name in models
            else getattr(self, f.name)
            for f in fields(self)
        }

    def config(self, seed: int) -> TrainingConfig:
        """The :class:`~sbert_tutor.training.TrainingConfig` of every variant's run."""
        return TrainingConfig(
            epochs=self.epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            warmup_ratio=self.warmup_ratio,
            seed=seed,
            show_progress_bar=False,
        )


_T4 = RetrieverSizes(
    start=WeakStart(layers=2),
    test_queries=200,
    other_passages=None,
    epochs=10,
    batch_size=32,
    lr=1e-4,
    teacher_epochs=8,
    teacher_batch_size=32,
    teacher_lr=5e-5,
    teacher_negatives=4,
    seeds=(0, 1, 2),
)
#: The profiles' sizes. ``quick``: the smallest run that trains every variant: a one-layer start
#: with room to learn, one epoch over 200 of the 440 training queries (all 440, in the full run
#: at c80836f, raised in-batch negatives' live gain over the start from +0.044 to +0.085
#: MRR@10, with the same verdicts for Margin-MSE, and the study loop took 560 s against 297 s
#: for 200 with the fused optimizer at b2a6165), one seed, 100 test queries over their
#: candidates plus 2,000 other passages, and a teacher trained for one short epoch (weak:
#: the chapter says so and shows its re-ranking quality). ``t4``: the recorded GPU run's sizes:
#: a two-layer start, 200 test queries over the whole mini corpus,
#: three seeds, and a teacher trained for eight epochs on each training query's positive and
#: four best-ranked BM25 negatives. ``paper``: the t4 sizes (the study is the book's own; no
#: paper's setup to follow).
SIZES: dict[str, RetrieverSizes] = register_sizes(
    "12a_training_a_retriever",
    {
        "quick": RetrieverSizes(
            start=WeakStart(layers=1),
            teacher_start=WeakStart(layers=2),
            test_queries=100,
            train_queries=200,
            other_passages=2000,
            epochs=1,
            batch_size=32,
            lr=2e-4,
            teacher_epochs=1,
            teacher_batch_size=32,
            teacher_lr=5e-5,
            teacher_negatives=4,
            seeds=(0,),
        ),
        "t4": _T4,
        "paper": _T4,  # no paper's setup: the study is the book's own
    },
)


@dataclass
class RetrieverData:
    """The split and the rows built from it.

    Attributes:
        test: the held-out queries and the searched corpus.
        pairs: (anchor, positive) rows of the training queries, one a judged passage.
        pool: the passages negatives are mined from (the training queries' BM25 candidates).
        labelled: (query, passage, label) rows for the teacher: each training query's positive
            and its other BM25 candidates.
        test_candidates: each test query's BM25 top 20, best first (what the teacher re-ranks).
        files: data files read; notes: how it was built.
    """

    test: MSMarcoData
    pairs: pd.DataFrame
    pool: list[str]
    labelled: pd.DataFrame
    test_candidates: dict[str, list[str]]
    files: tuple[Any, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

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
    dev = load_msmarco("msmarco-dev-subset")
    labelled = load_bm25_candidates(with_labels=True)
    split = split_queries(list(dev.queries), sizes.test_queries, seed=seed)
    train = split.train
    if sizes.train_queries is not None:
        if not 0 < sizes.train_queries <= len(train):
            raise ValueError(
                f"RetrieverSizes.train_queries={sizes.train_queries!r}: the split leaves "
                f"{len(train)} training queries; pass 1..{len(train)}, or None for all of them"
            )
        keep = set(seeded_subset(len(train), sizes.train_queries, seed).tolist())
        train = tuple(q for i, q in enumerate(train) if i in keep)
    held_out = replace(
        dev,
        queries={q: dev.queries[q] for q in split.test},
        qrels={q: dev.qrels[q] for q in split.test},
    )
    test_candidates = {q: [p for p, _ in labelled[q]] for q in split.test if q in labelled}
    test = sample_msmarco(
        held_out, None, sizes.other_passages, seed=seed, candidates=test_candidates
    )
    threshold = dev.relevance_threshold
    pairs, pool = [], {}
    for qid in train:
        relevant = sorted(p for p, g in dev.qrels.get(qid, {}).items() if g >= threshold)
        pairs += [(dev.queries[qid], dev.corpus[p]) for p in relevant if p in dev.corpus]
        for pid, _ in labelled.get(qid, ()):
            pool.setdefault(pid, dev.corpus[pid])
    rows = candidate_pairs(dev.queries, dev.corpus, labelled, train, sizes.teacher_negatives)
    note = (
        f"split by query (seed {seed}): {len(split.test)} test queries, {len(train)} of the "
        f"{len(split.train)} others as training queries, with {len(pairs)} judged (query, passage) pairs; negatives mined from "
        f"the training queries' {len(pool):,} BM25-candidate passages"
    )
    return RetrieverData(
        test=test,
        pairs=pd.DataFrame(pairs, columns=["anchor", "positive"]),
        pool=list(pool.values()),
        labelled=pd.DataFrame(rows, columns=["query", "passage", "label"]),
        test_candidates=test_candidates,
        files=(*dev.files, bm25_candidates_path()),
        notes=(*test.notes, note),
    )


def train_teachers(
    data: RetrieverData, sizes: RetrieverSizes, miner: Any, device: str | None = None
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The Margin-MSE teachers, keyed ``"cross-encoder"`` / ``"bi-encoder"``, and what each is:
    its model, its training (rows, seconds) and :func:`rerank_quality`.

    The cross-encoder is ``sizes.teacher_start`` with a new one-logit head, trained with
    ``ce_bce`` on the training queries' labelled BM25 candidates (seed 0); the bi-encoder is the
    ``miner``, scoring a pair by its cosine."""
    config = TrainingConfig(
        epochs=sizes.teacher_epochs,
        batch_size=sizes.teacher_batch_size,
        lr=sizes.teacher_lr,
        seed=0,
        show_progress_bar=False,
    )
    begin = time.perf_counter()
    start = CrossEncoderStart(sizes.teacher_start)
    cross_encoder = fit(start.load(), "ce_bce", data.labelled, config, device=device).model
    seconds = time.perf_counter() - begin
    teachers = {"cross-encoder": cross_encoder, "bi-encoder": BiEncoderScorer(miner)}
    quality = {
        "cross-encoder": {
            "model": f"{start_label(sizes.teacher_start)}, trained as a cross-encoder",
            "rows": len(data.labelled),
            "seconds": seconds,
            **rerank_quality(cross_encoder, data),
        },
        "bi-encoder": {
            "model": f"{start_label(sizes.miner)} (cosine)",
            **rerank_quality(teachers["bi-encoder"], data),
        },
    }
    return teachers, quality


def rerank_quality(cross_encoder: Any, data: RetrieverData) -> dict[str, float]:
    """MRR@10 of the test queries' BM25 top 20 as BM25 ranks it and as ``cross_encoder`` re-ranks
    it (how good the teacher is, on queries it never saw)."""
    qids = [q for q in data.test.queries if q in data.test_candidates]
    bm25 = {q: {p: -float(r) for r, p in enumerate(data.test_candidates[q])} for q in qids}
    reranked = rerank(cross_encoder, data.test.queries, bm25, data.test.corpus, batch_size=64)
    qrels = {q: data.test.qrels[q] for q in qids}
    threshold = data.test.relevance_threshold

    def mrr(run: dict[str, dict[str, float]]) -> float:
        return float(evaluate_run(run, qrels, ks=(10,), relevance_threshold=threshold)["mrr@10"])

    return {"bm25_top20_mrr@10": mrr(bm25), "reranked_top20_mrr@10": mrr(reranked)}


def mined_sets(
    data: RetrieverData,
    miner: Any,
    sizes: RetrieverSizes,
    teachers: Mapping[str, Any],
) -> dict[str, pd.DataFrame]:
    """The training rows of each variant (:data:`VARIANTS`), the Margin-MSE ones labelled by
    :func:`train_teachers`' ``teachers``. One hard negative per (query, positive) pair, the best
    one the variant's rule keeps."""
    pairs = data.pairs
    sets = {"in-batch negatives": pairs}
    sets["BM25 negatives"] = mine_hard_negatives(pairs, "bm25", corpus=data.pool, num_negatives=1)
    sets["BM25 negatives, top 3 skipped"] = mine_hard_negatives(
        pairs, "bm25", corpus=data.pool, num_negatives=1, range_min=3
    )
    dense = mine_hard_negatives(
        pairs,
        miner,
        corpus=data.pool,
        num_negatives=1,
        relative_margin=sizes.relative_margin,
        range_max=sizes.mine_range_max,
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
    corpus = encode_corpus(encoder, data.test.corpus, show_progress_bar=False)
    result = evaluate_retrieval(
        encoder,
        data.test.queries,
        corpus,
        data.test.qrels,
        ks=(10, 100),
        score=score,
        show_progress_bar=False,
        relevance_threshold=data.test.relevance_threshold,
    )
    per_query = evaluate_run_per_query(
        result.run, data.test.qrels, (10, 100), data.test.relevance_threshold
    )
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
    """A fresh ``sizes.start`` trained on ``rows`` with ``variant``'s objective
    (:data:`VARIANTS`) and ``sizes.config(seed)``, then :func:`evaluate_variant`: one run of the
    study (its variant, seed, loss, seconds and steps beside the scores)."""
    loss = VARIANTS[variant]
    encoder = load_start(sizes.start)
    # Margin-MSE regresses dot-product margins onto the teacher's, which a cosine (at most 2
    # apart) could not reach: the student drops its unit-length output and is searched by the
    # dot product, as Hofstatter et al.'s are
    score = "dot" if loss == "margin_mse" else "cosine"
    encoder.normalize = score == "cosine"
    begin = time.perf_counter()
    run = fit(encoder, loss, rows, sizes.config(seed), device=device)
    seconds = time.perf_counter() - begin
    return {
        "variant": variant,
        "seed": seed,
        "loss": loss,
        "seconds": seconds,
        "steps": int(run.log["steps_done"]),
        **evaluate_variant(run.model, data, score),
    }


def run_study(
    sizes: RetrieverSizes, device: str | None = None, log: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The whole study, as the chapter runs it, for the recorded runs: every variant with every
    seed from ``sizes.start``, and the start model, evaluated on the test split.

    Returns a JSON-ready mapping: ``data`` (sizes of the split), ``notes``, ``files`` (read),
    ``runs`` (one per variant and seed, the start model's as ``"start model"``: ``results``,
    ``per_query``, ``seconds``, ``steps``), ``teachers`` (:func:`train_teachers`' report),
    ``mining`` (rows kept per variant) and ``sizes``. ``log`` receives a line per finished step
    (e.g. ``print``).
    """
    say = log or (lambda _: None)
    data = load_retriever_data(sizes)
    say(f"data: {data.describe()}")
    out: dict[str, Any] = {
        "data": data.describe(),
        "notes": list(data.notes),
        "files": [str(f) for f in data.files],
        "runs": [],
    }
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
