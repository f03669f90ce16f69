r"""Chapter 12a (training a retriever): six ways to fine-tune a bi-encoder on the same queries.

From one start model and one split of the MS MARCO dev subset's queries (the test queries never
train), :func:`run_study` trains

================================  ==============  ===============================================
variant                           objective       training rows
================================  ==============  ===============================================
in-batch negatives                ``mnrl``        (query, positive)
BM25 negatives                    ``mnrl``        (query, positive, BM25-mined negative)
BM25 negatives, top 3 skipped     ``mnrl``        the same, mined below BM25's first three
                                                  kept candidates (``range_min=3``)
dense negatives, filtered         ``mnrl``        (query, positive, dense-mined negative) whose
                                                  miner score is below :math:`(1 - r)` times the
                                                  positive's (``relative_margin`` :math:`r`)
Margin-MSE from a cross-encoder   ``margin_mse``  the filtered triplets, labelled with the
                                                  teacher's margin :math:`t(q, p^+) - t(q, p^-)`
Margin-MSE from a bi-encoder      ``margin_mse``  the same triplets, labelled with the miner's
                                                  cosine margin
================================  ==============  ===============================================

and evaluates each (and the start model) on the held-out queries over the test corpus: MRR@10,
nDCG@10 and recall@100, per query for the paired bootstrap. Negatives are mined from the
*training* queries' BM25 candidates only (:func:`~sbert_tutor.training.hard_negatives.mine_hard_negatives`,
with BM25 or with the dense ``miner``); the teacher is a cross-encoder trained with ``ce_bce`` on
the same training queries' labelled BM25 candidates, and its own quality is reported (it re-ranks
the test queries' BM25 top 20).

The sizes of each profile live here (:data:`SIZES`); ``benchmarks/retriever_study.py`` runs a
profile and records it, the chapter runs the quick one live.

The recorded baselines and memory runs the chapter shows are read and drawn here too:

* :func:`baseline_tables` and :func:`baselines_sentence`: the BM25 / dense / hybrid baselines
  and BM25's agreement with Anserini (``results/bm25_baselines_*.json``, written by
  ``benchmarks/bm25_baselines.py``), with whatever rows the record has;
* :func:`memory_rows` and :func:`plot_memory`: the step memory of ``mnrl`` against
  ``cached_mnrl`` (``results/cached_mnrl_memory_*.json``, ``benchmarks/cached_mnrl_memory.py``),
  one row per recorded file, batch size and variant, CPU and GPU records alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from sbert_tutor.book.bootstrap import interval_verdict, paired_bootstrap
from sbert_tutor.book.figures import new_axes, new_panels
from sbert_tutor.book.recorded import hardware_text
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
from sbert_tutor.search.rerank import BiEncoderScorer
from sbert_tutor.training import TrainingConfig
from sbert_tutor.training.hard_negatives import mine_hard_negatives, teacher_margins
from sbert_tutor.training.recipe import fit

__all__ = [
    "BASELINES_RECORD",
    "MEMORY_RECORDS",
    "METHOD_NAMES",
    "baseline_tables",
    "baselines_sentence",
    "memory_rows",
    "memory_sentence",
    "plot_memory",
    "MEASURES",
    "SIZES",
    "VARIANTS",
    "RetrieverData",
    "RetrieverSizes",
    "bootstrap_table",
    "evaluate_variant",
    "plot_study",
    "study_findings",
    "verdict_sentence",
    "verdict_table",
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
class RetrieverSizes(ChapterSizes):
    """One profile's run.

    Attributes:
        start: the bi-encoder every variant starts from (a hub name or a :class:`WeakStart`).
        miner: the dense model that mines negatives (a stronger, already trained retriever).
        teacher_start: the cross-encoder teacher's start (its transformer, a new one-logit head).
        test_queries: held-out queries of the 540 (the rest train).
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
#: with room to learn, one epoch over the training queries (a second one moved no variant's
#: MRR@10 by more than 0.03, one seed, and doubled the training time), 100 test queries over
#: their candidates plus 2,000 other passages, and a teacher trained for one short epoch (weak:
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
    return fit(start.load(), "ce_bce", data.labelled, config, device=device).model


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


def run_study(
    sizes: RetrieverSizes,
    device: str | None = None,
    variants: Sequence[str] = tuple(VARIANTS),
    log: Callable[[str], None] | None = None,
    show_progress_bar: bool = True,
) -> dict[str, Any]:
    """Train every variant with every seed from ``sizes.start`` and evaluate each on the test split.

    Returns a JSON-ready mapping: ``data`` (sizes of the split), ``teachers`` (each one's re-ranking
    quality on the test queries' BM25 top 20), ``mining`` (rows kept per variant), ``runs`` (one per variant
    and seed, the start model's as ``"start model"``: ``results``, ``per_query``, ``seconds``,
    ``steps``) and ``notes``. ``log`` receives a line per finished step of the study (e.g.
    ``print``); the progress bar is ``show_progress_bar``'s.
    """
    say = log or (lambda _: None)
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
        teachers["bi-encoder"] = BiEncoderScorer(miner)
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
    out["runs"].append({"variant": "start model", "seed": None, **evaluate_variant(start, data)})
    say(f"start model: {out['runs'][-1]['results']}")
    del start
    bar = tqdm(
        total=len(variants) * len(sizes.seeds),
        desc="variants",
        unit="run",
        disable=not show_progress_bar,
    )
    for variant in variants:
        loss = VARIANTS[variant]
        for seed in sizes.seeds:
            bar.set_postfix_str(f"{variant}, seed {seed}")
            encoder = load_start(sizes.start)
            # Margin-MSE regresses dot-product margins onto the teacher's, which a cosine
            # (at most 2 apart) could not reach: the student drops its unit-length output and
            # is searched by the dot product, as Hofstatter et al.'s are
            score = "dot" if loss == "margin_mse" else "cosine"
            encoder.normalize = score == "cosine"
            begin = time.perf_counter()
            run = fit(encoder, loss, sets[variant], sizes.config(seed), device=device)
            seconds = time.perf_counter() - begin
            row = {
                "variant": variant,
                "seed": seed,
                "loss": loss,
                "seconds": seconds,
                "steps": int(run.log["steps_done"]),
                **evaluate_variant(run.model, data, score),
            }
            out["runs"].append(row)
            say(f"{variant} / seed {seed}: {row['results']} in {seconds:.1f} s")
            bar.update()
            del run, encoder
    bar.close()
    out["sizes"] = sizes.describe()
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


def _interval(row: pd.Series, measure: str) -> str:
    change, low, high = row[f"{measure} change"], row["95% low"], row["95% high"]
    return f"{change:+.3f} [{low:+.3f}, {high:+.3f}]"


def _verdict(row: pd.Series) -> str:
    return interval_verdict(row["95% low"], row["95% high"])


def study_findings(study: Mapping[str, Any], n_resamples: int = 2000) -> str:
    """What in-batch negatives gain over the start model, in words, every number from ``study``
    (paired bootstrap over the test queries, each query's value averaged over the seeds)."""
    table = summary_table(study)
    if "in-batch negatives" not in table.index:
        return "no in-batch run is in the study"
    gain = bootstrap_table(study, n_resamples=n_resamples).loc["in-batch negatives"]
    seeds = int(table["seeds"].max())
    verdict = {
        "higher": "a gain beyond the resampling spread",
        "lower": "a loss beyond the resampling spread",
        "no difference": "an interval that contains 0",
    }[_verdict(gain)]
    return (
        f"on {study['data']['test_queries']} held-out queries ({seeds} "
        f"seed{'s' if seeds != 1 else ''} a variant), in-batch negatives take MRR@10 from "
        f"{table.loc['start model', 'mrr@10']:.3f} to "
        f"{table.loc['in-batch negatives', 'mrr@10']:.3f}: "
        f"{_interval(gain, 'mrr@10')} with its 95% interval, {verdict}"
    )


def verdict_table(study: Mapping[str, Any], n_resamples: int = 2000) -> pd.DataFrame:
    """Each variant against in-batch negatives: the change of MRR@10 and of recall@100 with its
    95% paired-bootstrap interval, and the verdict (``higher`` / ``lower`` when the interval
    excludes 0, else ``no difference``)."""
    parts = {
        m: bootstrap_table(study, "in-batch negatives", m, n_resamples)
        for m in ("mrr@10", "recall@100")
    }
    rows = {}
    for variant in parts["mrr@10"].index:
        if variant == "start model":
            continue
        rows[variant] = {
            "MRR@10 change [95%]": _interval(parts["mrr@10"].loc[variant], "mrr@10"),
            "MRR@10": _verdict(parts["mrr@10"].loc[variant]),
            "recall@100 change [95%]": _interval(parts["recall@100"].loc[variant], "recall@100"),
            "recall@100": _verdict(parts["recall@100"].loc[variant]),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def verdict_sentence(table: pd.DataFrame, measure: str = "MRR@10") -> str:
    """A :func:`verdict_table`'s ``measure`` column in words: which variants are higher, lower
    or no different from in-batch negatives."""
    groups = {
        verdict: [v for v in table.index if table.loc[v, measure] == verdict]
        for verdict in ("higher", "lower", "no difference")
    }
    words = {
        "higher": "higher than in-batch negatives' (beyond the resampling spread) for",
        "lower": "lower than in-batch negatives' (beyond the resampling spread) for",
        "no difference": "indistinguishable from in-batch negatives' for",
    }
    parts = [
        f"{words[k]} {', '.join(repr(n).replace(chr(39), chr(34)) for n in names)}"
        for k, names in groups.items()
        if names
    ]
    return f"{measure} is " + "; ".join(parts) if parts else f"no variant to compare on {measure}"


# ----------------------------------------------------------- recorded baselines and memory
#: The recorded baselines (``benchmarks/bm25_baselines.py --device cuda``: BM25 on the CPU, the
#: dense model on the GPU; the CPU record ``bm25_baselines_cpu`` has the BM25 rows only).
BASELINES_RECORD = "bm25_baselines_gpu_h200"
#: The recorded memory runs: CPU (resident set) and GPU (allocated memory) files.
MEMORY_RECORDS = ("cached_mnrl_memory_cpu_*.json", "cached_mnrl_memory_gpu_*.json")
MEMORY_COMMAND = "python benchmarks/cached_mnrl_memory.py --batch-size 256 --json <file>"
#: How the retrieval runs are named in the record, and in the chapter's table.
METHOD_NAMES = {"bm25": "BM25", "dense": "dense", "hybrid_rrf": "hybrid (RRF)"}
#: Keys a memory record may give a variant's step memory under, most specific first: the CPU
#: script's resident-set growth, then a GPU run's peak allocation above the loaded model.
_STEP_MEMORY_KEYS = (
    "peak_minus_before_bytes",
    "peak_allocated_minus_before_bytes",
    "peak_allocated_bytes",
)


def baseline_tables(record: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two tables of a baselines record: BM25's agreement with Anserini's top-:math:`k`
    (one row per depth: mean overlap, queries whose top-:math:`k` is identical, queries) and the
    retrieval measures, one row per (data set, method) that the record has."""
    agreement = record.get("anserini_agreement", {})
    overlap = pd.DataFrame(
        [
            {
                "depth": key.split("@", 1)[1],
                "mean overlap": value["mean"],
                "queries identical": value["queries_identical"],
                "queries": value["queries"],
            }
            for key, value in agreement.items()
            if key.startswith("overlap@") and isinstance(value, Mapping)
        ]
    )
    if len(overlap):
        overlap = overlap.set_index("depth")
    rows = []
    for data, methods in record.get("retrieval", {}).items():
        if not isinstance(methods, Mapping):
            continue  # e.g. the dense model's encoding seconds
        for method, scores in methods.items():
            if not isinstance(scores, Mapping):
                continue  # the query count
            rows.append(
                {
                    "data": data,
                    "queries": methods.get("queries"),
                    "method": METHOD_NAMES.get(method, method),
                    **{m: scores.get(m) for m in MEASURES},
                }
            )
    measures = pd.DataFrame(rows)
    if len(measures):
        measures = measures.set_index(["data", "method"])
    return overlap, measures


def baselines_sentence(record: Mapping[str, Any]) -> str:
    """What the baselines record shows, in words: the agreement with Anserini, which methods
    were run, and, where a dense run is recorded, whether it beats BM25 on each data set."""
    overlap, measures = baseline_tables(record)
    parts = []
    if "20" in overlap.index:
        row = overlap.loc["20"]
        parts.append(
            f"our BM25 shares {row['mean overlap']:.1%} of Anserini's top 20 passages on "
            f"average, and returns exactly Anserini's top 20 for "
            f"{int(row['queries identical']):,} of {int(row['queries']):,} queries"
        )
    methods = (
        list(dict.fromkeys(measures.index.get_level_values("method"))) if len(measures) else []
    )
    if not methods:
        parts.append("no retrieval run is recorded")
    elif methods == ["BM25"]:
        parts.append(
            "only BM25 is recorded so far: the dense and hybrid rows appear once a run with "
            "the dense model is recorded"
        )
    else:
        for data in dict.fromkeys(measures.index.get_level_values("data")):
            table = measures.loc[data]
            if "BM25" not in table.index:
                continue
            best = table["ndcg@10"].idxmax()
            others = ", ".join(
                f"{m} {table.loc[m, 'ndcg@10']:.3f}" for m in table.index if m != best
            )
            parts.append(
                f"on {data} the best nDCG@10 is {best}'s, {table.loc[best, 'ndcg@10']:.3f} "
                f"({others})"
            )
    return "; ".join(parts) + "."


def _runs(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The runs of a memory record, each ``{batch_size, mini_batch_size, results: {variant:
    row}}``: the record itself (one batch size, as the CPU mode of
    ``benchmarks/cached_mnrl_memory.py`` writes it), a list under ``runs``, or the GPU mode's
    flat ``rows`` (one per batch size and variant) grouped by batch size."""
    if isinstance(record.get("rows"), list):
        by_batch: dict[int, dict[str, Any]] = {}
        for row in record["rows"]:
            run = by_batch.setdefault(
                int(row["batch_size"]),
                {
                    "batch_size": int(row["batch_size"]),
                    "mini_batch_size": record.get("mini_batch_size"),
                    "results": {},
                },
            )
            run["results"][row["variant"]] = row
        return list(by_batch.values())
    runs = record.get("runs")
    return list(runs) if isinstance(runs, list) else [record]


def memory_rows(records: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per recorded file, batch size and variant: the memory one training step needed
    above the loaded model (MiB), its seconds and loss, and the hardware.

    ``records`` is file stem -> parsed JSON (:func:`~sbert_tutor.book.recorded.recorded_matching`
    of :data:`MEMORY_RECORDS`). A record may hold one batch size (``batch_size`` and
    ``results``) or several (a list ``runs`` of such entries); a variant that failed (an
    ``error``, e.g. out of memory) is kept with its error and no number.
    """
    rows = []
    for stem, record in records.items():
        hardware = hardware_text(
            record.get("provenance", {}).get("hardware", {}), record.get("gpu")
        )
        for run in _runs(record):
            for variant, result in run.get("results", {}).items():
                key = next((k for k in _STEP_MEMORY_KEYS if k in result), None)
                rows.append(
                    {
                        "record": stem,
                        "device": "GPU" if "_gpu_" in stem else "CPU",
                        "batch size": int(result.get("batch_size", run.get("batch_size", 0))),
                        "mini-batch": run.get("mini_batch_size") if variant != "mnrl" else None,
                        "variant": variant,
                        "step memory (MiB)": result[key] / 2**20 if key else None,
                        "step seconds": result.get("step_seconds"),
                        "loss": result.get("loss"),
                        "error": str(result["error"]).strip().splitlines()[-1][:120]
                        if "error" in result
                        else None,
                        "hardware": hardware,
                    }
                )
    columns = ["record", "device", "batch size", "mini-batch", "variant", "step memory (MiB)"]
    columns += ["step seconds", "loss", "error", "hardware"]
    table = pd.DataFrame(rows, columns=columns)
    if table["error"].isna().all():
        table = table.drop(columns="error")
    table["mini-batch"] = table["mini-batch"].astype("Int64")
    order = table["variant"].map({"mnrl": 0}).fillna(1)  # plain MNRL first, then GradCache
    table = table.assign(_order=order).sort_values(
        ["record", "batch size", "_order"], kind="stable"
    )
    return table.drop(columns="_order").reset_index(drop=True)


def plot_memory(rows: pd.DataFrame, ax=None):
    """Step memory against batch size, one line per (record, variant): bars when every record
    has a single batch size, lines with markers when some have several."""
    ax = new_axes(ax, figsize=(7, 3.8))
    measured = rows.dropna(subset=["step memory (MiB)"])
    several = (
        measured.groupby("record")["batch size"].nunique().max() > 1 if len(measured) else False
    )
    if several:
        for (record, variant), group in measured.groupby(["record", "variant"], sort=False):
            ax.plot(
                group["batch size"], group["step memory (MiB)"], marker="o",
                label=f"{variant} ({record})",
            )  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size (pairs)")
    else:
        labels = [
            f"{r['variant']}\n{r['device']}, batch {r['batch size']}"
            for _, r in measured.iterrows()
        ]
        colors = ["tab:red" if v == "mnrl" else "tab:blue" for v in measured["variant"]]
        bars = ax.bar(range(len(measured)), measured["step memory (MiB)"], color=colors)
        ax.bar_label(bars, fmt="%.0f MiB")
        ax.set_xticks(range(len(measured)), labels)
    ax.set_ylabel("memory of one step (MiB)\nabove the loaded model")
    ax.set_title("One training step: MNRL against cached MNRL (GradCache)")
    if several:
        ax.legend(fontsize=8)
    return ax


def memory_sentence(rows: pd.DataFrame) -> str:
    """The memory rows in words, one clause per record at its largest batch where both variants
    were measured: each variant's step memory, the ratio and the ratio of their step times;
    for a record with several batch sizes, how MNRL's memory grew while the cached step's did
    not. (The first step of a GPU process includes CUDA's warm-up, so times are compared at the
    largest batch.)"""
    parts = []
    for record, group in rows.groupby("record", sort=False):
        both = group.dropna(subset=["step memory (MiB)"])
        complete = [
            b for b, g in both.groupby("batch size") if {"mnrl", "cached_mnrl"} <= set(g["variant"])
        ]
        if not complete:
            failed = ", ".join(group.loc[group["step memory (MiB)"].isna(), "variant"])
            parts.append(f"{record}: no number for {failed or 'a variant'}")
            continue
        batch = max(complete)
        by = both[both["batch size"] == batch].set_index("variant")
        plain, cached = by.loc["mnrl"], by.loc["cached_mnrl"]
        text = (
            f"on the {plain['device']} at a batch of {batch:,} pairs, one MNRL step needed "
            f"{plain['step memory (MiB)']:,.0f} MiB above the loaded model and one cached-MNRL "
            f"step, in mini-batches of {int(cached['mini-batch'])} texts, "
            f"{cached['step memory (MiB)']:,.0f} MiB, "
            f"{plain['step memory (MiB)'] / cached['step memory (MiB)']:.1f} times less; "
            f"the cached step took {cached['step seconds'] / plain['step seconds']:.1f} times "
            "as long"
        )
        if len(complete) > 1:
            low = both[both["batch size"] == min(complete)].set_index("variant")
            text += (
                f" (from a batch of {min(complete):,} to {batch:,}, MNRL's step memory grew from "
                f"{low.loc['mnrl', 'step memory (MiB)']:,.0f} to "
                f"{plain['step memory (MiB)']:,.0f} MiB, the cached step's from "
                f"{low.loc['cached_mnrl', 'step memory (MiB)']:,.0f} to "
                f"{cached['step memory (MiB)']:,.0f} MiB)"
            )
        parts.append(text)
    return "; ".join(parts) if parts else "no memory run is recorded"
