r"""Chapter 12a (training a retriever): four ways to fine-tune a bi-encoder on the same queries.

From one start model and one split of the MS MARCO dev subset's queries (the test queries never
train), :func:`run_study` trains

================================  ==============  ===============================================
variant                           objective       training rows
================================  ==============  ===============================================
in-batch negatives                ``mnrl``        (query, positive)
BM25 negatives                    ``mnrl``        (query, positive, BM25-mined negative)
dense negatives, filtered         ``mnrl``        (query, positive, dense-mined negative) whose
                                                  miner score is below :math:`(1 - r)` times the
                                                  positive's (``relative_margin`` :math:`r`)
Margin-MSE from a cross-encoder   ``margin_mse``  the filtered triplets, labelled with the
                                                  teacher's margin :math:`t(q, p^+) - t(q, p^-)`
================================  ==============  ===============================================

and evaluates each (and the start model) on the held-out queries over the test corpus: MRR@10,
nDCG@10 and recall@100, per query for the paired bootstrap. Negatives are mined from the
*training* queries' BM25 candidates only (:func:`~sbert_tutor.hard_negatives.mine_hard_negatives`,
with BM25 or with the dense ``miner``); the teacher is a cross-encoder trained with ``ce_bce`` on
the same training queries' labelled BM25 candidates, and its own quality is reported (it re-ranks
the test queries' BM25 top 20).

The sizes of each profile live here (:data:`SIZES`); ``benchmarks/retriever_study.py`` runs a
profile and records it, the chapter runs the quick one live.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book.chapters.reranking import CrossEncoderStart
from sbert_tutor.book.weak_start import MINILM, WeakStart, load_start, start_label
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
from sbert_tutor.hard_negatives import mine_hard_negatives, teacher_margins
from sbert_tutor.metrics import evaluate_run, evaluate_run_per_query
from sbert_tutor.stats import paired_bootstrap
from sbert_tutor.training import TrainingConfig
from sbert_tutor.training.recipe import fit

__all__ = [
    "MEASURES",
    "SIZES",
    "VARIANTS",
    "BiEncoderTeacher",
    "RetrieverData",
    "RetrieverSizes",
    "bootstrap_table",
    "load_retriever_data",
    "mined_sets",
    "rerank_quality",
    "run_study",
    "summary_table",
    "train_teacher",
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
class RetrieverSizes:
    """One profile's run.

    Attributes:
        start: the bi-encoder every variant starts from (a hub name or a :class:`WeakStart`).
        miner: the dense model that mines negatives (a stronger, already trained retriever).
        teacher_start: the cross-encoder teacher's start (its transformer, a new one-logit head).
        test_queries: held-out queries of the 540 (the rest train).
        other_passages: random ``corpus_mini`` passages added to the test corpus beyond the test
            queries' judged passages and BM25 candidates (``None``: the whole mini corpus).
        epochs, batch_size, lr, warmup_ratio: every variant's training (the same for all four).
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

    def config(self, seed: int, **changes: Any) -> TrainingConfig:
        """The :class:`~sbert_tutor.training.TrainingConfig` of every variant's run."""
        settings = dict(
            epochs=self.epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            warmup_ratio=self.warmup_ratio,
            seed=seed,
            show_progress_bar=False,
        )
        settings.update(changes)
        return TrainingConfig(**settings)


#: The profiles' sizes. ``quick``: two CPU cores, minutes: a one-layer start with room to learn,
#: 100 test queries over their candidates plus 2,000 other passages, and a teacher trained for
#: one short epoch (weak: the chapter says so and shows its re-ranking quality). ``t4``: the
#: recorded GPU run's sizes: a two-layer start, 200 test queries over the whole mini corpus,
#: three seeds, and a teacher trained for five epochs.
SIZES: dict[str, RetrieverSizes] = {
    "quick": RetrieverSizes(
        start=WeakStart(layers=1),
        teacher_start=WeakStart(layers=2),
        test_queries=100,
        other_passages=2000,
        epochs=2,
        batch_size=32,
        lr=2e-4,
        teacher_epochs=1,
        teacher_batch_size=32,
        teacher_lr=5e-5,
        teacher_negatives=4,
        seeds=(0,),
    ),
    "t4": RetrieverSizes(
        start=WeakStart(layers=2),
        test_queries=200,
        other_passages=None,
        epochs=10,
        batch_size=32,
        lr=1e-4,
        teacher_epochs=5,
        teacher_batch_size=32,
        teacher_lr=5e-5,
        seeds=(0, 1, 2),
    ),
}
SIZES["paper"] = SIZES["t4"]


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
    for qid in split.train:
        relevant = sorted(p for p, g in dev.qrels.get(qid, {}).items() if g >= threshold)
        pairs += [(dev.queries[qid], dev.corpus[p]) for p in relevant if p in dev.corpus]
        for pid, _ in labelled.get(qid, ()):
            pool.setdefault(pid, dev.corpus[pid])
    rows = candidate_pairs(dev.queries, dev.corpus, labelled, split.train, sizes.teacher_negatives)
    note = (
        f"split by query (seed {seed}): {len(split.test)} test queries, {len(split.train)} "
        f"training queries with {len(pairs)} judged (query, passage) pairs; negatives mined from "
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


def train_teacher(data: RetrieverData, sizes: RetrieverSizes, device: str | None = None) -> Any:
    """The cross-encoder teacher: ``sizes.teacher_start`` with a new one-logit head, trained with
    ``ce_bce`` on the training queries' labelled BM25 candidates (seed 0)."""
    config = TrainingConfig(
        epochs=sizes.teacher_epochs,
        batch_size=sizes.teacher_batch_size,
        lr=sizes.teacher_lr,
        seed=0,
        show_progress_bar=False,
    )
    start = CrossEncoderStart(sizes.teacher_start)
    return fit(start.load(), "ce_bce", data.labelled, config, device=device).encoder


def rerank_quality(cross_encoder: Any, data: RetrieverData) -> dict[str, float]:
    """MRR@10 of the test queries' BM25 top 20 as BM25 ranks it and as ``cross_encoder`` re-ranks
    it (how good the teacher is, on queries it never saw)."""
    qids = [q for q in data.test.queries if q in data.test_candidates]
    bm25 = {q: {p: -float(r) for r, p in enumerate(data.test_candidates[q])} for q in qids}
    texts = [
        (data.test.queries[q], data.test.corpus[p]) for q in qids for p in data.test_candidates[q]
    ]
    scores = np.asarray(cross_encoder.predict(texts, batch_size=64), dtype=np.float64)
    reranked, i = {}, 0
    for q in qids:
        n = len(data.test_candidates[q])
        reranked[q] = dict(zip(data.test_candidates[q], scores[i : i + n].tolist(), strict=True))
        i += n
    qrels = {q: data.test.qrels[q] for q in qids}
    threshold = data.test.relevance_threshold

    def mrr(run: dict[str, dict[str, float]]) -> float:
        return float(evaluate_run(run, qrels, ks=(10,), relevance_threshold=threshold)["mrr@10"])

    return {"bm25_top20_mrr@10": mrr(bm25), "reranked_top20_mrr@10": mrr(reranked)}


class BiEncoderTeacher:
    """A bi-encoder read as a teacher: ``predict`` scores (query, passage) pairs by the cosine of
    their embeddings, as :func:`~sbert_tutor.hard_negatives.teacher_margins` and
    :func:`rerank_quality` call a cross-encoder."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.name = getattr(encoder, "name", "bi-encoder")

    def predict(self, pairs: Sequence[Sequence[str]], batch_size: int = 32, **_: Any) -> np.ndarray:
        """Cosine of each pair (``activation_fn`` and the like do not apply to a cosine)."""
        queries = self.encoder.encode(
            [p[0] for p in pairs],
            batch_size=batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        passages = self.encoder.encode(
            [p[1] for p in pairs],
            batch_size=batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return (np.asarray(queries) * np.asarray(passages)).sum(axis=1).astype(np.float32)


def mined_sets(
    data: RetrieverData,
    miner: Any,
    sizes: RetrieverSizes,
    teachers: Mapping[str, Any] | None = None,
) -> dict[str, pd.DataFrame]:
    """The training rows of each variant (:data:`VARIANTS`; a Margin-MSE variant only when
    ``teachers`` has its teacher, keyed ``"cross-encoder"`` / ``"bi-encoder"``). One hard
    negative per (query, positive) pair, the best one the variant's rule keeps."""
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
    for kind, teacher in (teachers or {}).items():
        margins = teacher_margins(teacher, triplets, batch_size=64)
        sets[f"Margin-MSE from a {kind}"] = dense.assign(label=margins)
    return sets


def _evaluate(encoder: Any, data: RetrieverData) -> dict[str, Any]:
    corpus = encode_corpus(encoder, data.test.corpus, show_progress_bar=False)
    result = evaluate_retrieval(
        encoder,
        data.test.queries,
        corpus,
        data.test.qrels,
        ks=(10, 100),
        show_progress_bar=False,
        relevance_threshold=data.test.relevance_threshold,
    )
    per_query = evaluate_run_per_query(
        result.run, data.test.qrels, (10, 100), data.test.relevance_threshold
    )
    return {
        "results": {m: float(result.results[m]) for m in MEASURES},
        "per_query": {m: {q: float(v[m]) for q, v in per_query.items()} for m in MEASURES},
    }


def run_study(
    sizes: RetrieverSizes,
    device: str | None = None,
    variants: Sequence[str] = tuple(VARIANTS),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Train every variant with every seed from ``sizes.start`` and evaluate each on the test split.

    Returns a JSON-ready mapping: ``data`` (sizes of the split), ``teachers`` (each one's re-ranking
    quality on the test queries' BM25 top 20), ``mining`` (rows kept per variant), ``runs`` (one per variant
    and seed, the start model's as ``"start model"``: ``results``, ``per_query``, ``seconds``,
    ``steps``) and ``notes``.
    """
    say = progress or (lambda _: None)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    data = load_retriever_data(sizes)
    say(f"data: {data.describe()}")
    out: dict[str, Any] = {
        "data": data.describe(),
        "notes": list(data.notes),
        "files": [str(f) for f in data.files],
        "runs": [],
    }
    miner = load_start(sizes.miner)
    teachers: dict[str, Any] = {}
    out["teachers"] = {}
    if "Margin-MSE from a cross-encoder" in variants:
        begin = time.perf_counter()
        teachers["cross-encoder"] = train_teacher(data, sizes, device)
        out["teachers"]["cross-encoder"] = {
            "model": f"{start_label(sizes.teacher_start)}, trained as a cross-encoder",
            "rows": len(data.labelled),
            "seconds": time.perf_counter() - begin,
            **rerank_quality(teachers["cross-encoder"], data),
        }
        say(f"cross-encoder teacher: {out['teachers']['cross-encoder']}")
    if "Margin-MSE from a bi-encoder" in variants:
        teachers["bi-encoder"] = BiEncoderTeacher(miner)
        out["teachers"]["bi-encoder"] = {
            "model": f"{start_label(sizes.miner)} (cosine)",
            **rerank_quality(teachers["bi-encoder"], data),
        }
        say(f"bi-encoder teacher: {out['teachers']['bi-encoder']}")
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
    start = load_start(sizes.start)
    out["runs"].append({"variant": "start model", "seed": None, **_evaluate(start, data)})
    say(f"start model: {out['runs'][-1]['results']}")
    del start
    for variant in variants:
        loss = VARIANTS[variant]
        for seed in sizes.seeds:
            encoder = load_start(sizes.start)
            begin = time.perf_counter()
            run = fit(encoder, loss, sets[variant], sizes.config(seed), device=device)
            seconds = time.perf_counter() - begin
            row = {
                "variant": variant,
                "seed": seed,
                "loss": loss,
                "seconds": seconds,
                "steps": int(run.log["steps_done"]),
                **_evaluate(run.encoder, data),
            }
            out["runs"].append(row)
            say(f"{variant} / seed {seed}: {row['results']} in {seconds:.1f} s")
            del run, encoder
    out["sizes"] = {
        k: (start_label(v) if k in ("start", "miner", "teacher_start") else v)
        for k, v in asdict(sizes).items()
    }
    return out


def summary_table(study: Mapping[str, Any]) -> pd.DataFrame:
    """Mean and spread (min-max over seeds) of each measure, one row a variant (start first)."""
    rows = []
    for variant in ("start model", *VARIANTS):
        runs = [r for r in study["runs"] if r["variant"] == variant]
        if not runs:
            continue
        row: dict[str, Any] = {
            "variant": variant,
            "seeds": len(runs) if runs[0]["seed"] is not None else 0,
        }
        for m in MEASURES:
            values = np.array([r["results"][m] for r in runs])
            row[m] = values.mean()
            row[f"{m} spread"] = values.max() - values.min()
        rows.append(row)
    return pd.DataFrame(rows).set_index("variant")


def bootstrap_table(
    study: Mapping[str, Any],
    baseline: str = "start model",
    measure: str = "mrr@10",
    n_resamples: int = 2000,
) -> pd.DataFrame:
    """Each variant's change in ``measure`` over ``baseline`` on the same test queries (each
    query's value averaged over the seeds first), with a 95% paired bootstrap interval."""

    def per_query(variant: str) -> pd.Series:
        runs = [r for r in study["runs"] if r["variant"] == variant]
        if not runs:
            raise KeyError(f"no runs of {variant!r} in the study")
        return pd.DataFrame([r["per_query"][measure] for r in runs]).mean(axis=0)

    base = per_query(baseline)
    rows = {}
    for variant in ("start model", *VARIANTS):
        if variant == baseline or not any(r["variant"] == variant for r in study["runs"]):
            continue
        boot = paired_bootstrap(per_query(variant), base, n_resamples, 0)
        rows[variant] = {
            f"{measure} change": boot.change,
            "95% low": boot.low,
            "95% high": boot.high,
            "queries better": boot.better,
            "queries worse": boot.worse,
        }
    return pd.DataFrame.from_dict(rows, orient="index")
