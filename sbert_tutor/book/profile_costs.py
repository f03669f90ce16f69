r"""What each profile costs, before a reader presses run: minutes and GPU memory per chapter.

:func:`cost_table` has one row per chapter and profile (``quick``, ``t4``, ``paper``): what the
chapter trains and evaluates (read from :mod:`sbert_tutor.book.sizes`), the estimated minutes on
a 2-core CPU, a T4 and an H100, the peak GPU memory, whether it fits a T4 (10 minutes and 15 GB
a chapter; 90 minutes the book), and the **basis** of each figure:

* ``measured: the quick profile's chapter times`` -- the CPU column of the quick profile is the chapter's measured time
  in a run of every chapter under nbmake, from ``sbert_tutor/book/results/chapter_times_cpu.json`` (written by
  ``benchmarks/chapter_times.py`` from that run's JUnit XML; the table names the
  run). Other profiles' CPU minutes are that time scaled by their work ratio.
* ``measured: a recorded GPU run`` -- from ``chapter_times_gpu_<gpu>.json``
  (``python benchmarks/chapter_times.py run``), when one is recorded for the profile.
* ``scaled from <named measurement> by <factor>`` -- everything else. The GPU estimates start
  from the H100 figures in :data:`H100`, measured on one H100 in fp32 (2026-11, before the
  GPU-path work; ``shared/gpu/MEASURED.md``). A chapter's work is counted in *sentence
  equivalents*: one STSb-length sentence (14.2 tokens) through all-MiniLM-L6-v2's six layers,
  scaled by text length (:data:`LENGTH`) and model size (:func:`model_factor`). Training work
  runs at the measured training rate (forward + backward + optimizer step), evaluation at the
  measured encoding rate.

  A T4's minutes are the H100's times :data:`T4_FACTOR` = 67 / 8.1 (the two GPUs' fp32 peak
  rates), plus :data:`T4_ALLOWANCE` for loading and the CPU's share. That is an **upper
  bound**: the T4 runs the book in fp16 on tensor cores (about 8x its fp32 peak), and small
  batches are bound by kernel launches, which a T4 does not slow down eightfold. The rates
  themselves were measured at batch 16 (training) and 256 (encoding); larger batches run faster
  per sentence, so they, too, overstate.

* The peak GPU memory is **estimated, unmeasured**: the optimizer's state (16 bytes a
  parameter: fp32 weights, gradients and Adam's two moments), the models a chapter keeps, and
  the activations of its largest training step under fp16 autocast, :math:`s\,b\,h\,(34 +
  5 a s / h)` bytes a layer for :math:`b` texts of width :math:`s` (Korthikanti et al., 2022,
  *Reducing activation recomputation in large transformer models*, section 4.1).
  ``python benchmarks/chapter_times.py run --profile <profile>`` on a GPU measures it
  (``torch.cuda.max_memory_allocated``) and this table then reads the record.

The estimates are there so that a reader can choose a profile; every one says what it rests on,
and a recorded run replaces it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sbert_tutor.book import published
from sbert_tutor.book.profiles import PROFILES
from sbert_tutor.book.recorded import recorded_matching, recorded_results
from sbert_tutor.book.sizes import (
    CHAPTERS,
    SIZES,
    ApproximateIndexSizes,
    ChapterSizes,
    ClassificationSizes,
    CompressionSizes,
    CostSizes,
    DistanceDilemmaSizes,
    EfficiencySizes,
    MNRLSizes,
    MSMarcoSizes,
    PoolingSizes,
    RegressionSizes,
    RerankingSizes,
    RetrievalMetricsSizes,
    SearchGuidedSizes,
    SupMPNSizes,
    TransferSizes,
    TripletSizes,
    sizes_for,
)
from sbert_tutor.book.weak_start import WeakStart, start_label, start_name

__all__ = [
    "BERT_BASE",
    "CPU_COMMAND",
    "CPU_RECORD",
    "DISTILBERT",
    "FITS",
    "GPU_COMMAND",
    "GPU_RECORDS",
    "H100",
    "INTRODUCTION",
    "LENGTH",
    "MINILM_L6",
    "Model",
    "QUICK_UNTIMED_ON_H100",
    "ROWS",
    "SENTEVAL_ITEMS",
    "Step",
    "T4_ALLOWANCE",
    "T4_FACTOR",
    "T4_MEMORY_GB",
    "TRANSFER_RUN",
    "WIDTH",
    "WORK",
    "Work",
    "cost_table",
    "h100_seconds",
    "model_factor",
    "model_of",
    "peak_memory_gb",
    "work",
]

#: Results file of the quick profile's chapter times (``benchmarks/chapter_times.py from-junit``).
CPU_RECORD = "chapter_times_cpu"
#: Results files of recorded GPU chapter runs (``benchmarks/chapter_times.py run``).
GPU_RECORDS = ("chapter_times_gpu_*.json",)
#: The command that measures the GPU figures.
GPU_COMMAND = "python benchmarks/chapter_times.py run --profile {profile}"
#: The command that records the CPU column (after a run of every chapter wrote _build/nbmake.xml).
CPU_COMMAND = "python benchmarks/chapter_times.py from-junit _build/nbmake.xml --out auto"

#: One H100 80 GB, fp32, all-MiniLM-L6-v2 unless said (shared/gpu/MEASURED.md, 2026-11).
H100: dict[str, tuple[float, str]] = {
    "train": (
        16 * 2 * 360 / 8.4,
        "STSb fine-tuning on an H100: 360 steps of 16 pairs in 8.4 s (MiniLM, fp32)",
    ),
    "encode": (
        14_100.0,
        "encoding on an H100: 14,100 sentences/s (MiniLM, fp32, batch 256, STSb + MS MARCO)",
    ),
    "bert_base": (
        19_700 / 7_100,
        "forward passes on an H100 at batch 64: MiniLM 19,700 vs BERT-base 7,100 sentences/s",
    ),
    "chapter": (27.0, "every chapter as a script, quick profile, on an H100: 16-27 s"),
    "sts": (18.0, "STS, all seven tasks, all-MiniLM-L6-v2, on an H100: 18 s"),
}
#: Chapters whose quick run did not finish on the H100 that measured :data:`H100` ``"chapter"``
#: (a data file was missing; an array was left on the GPU; both fixed since), so that run has no
#: time for them: the table takes the other chapters' upper end instead.
QUICK_UNTIMED_ON_H100 = {"07_regression_objective", "11_semantic_search_guided"}
#: H100 SXM / T4 fp32 peak (67 / 8.1 TFLOP/s, vendor figures): an upper bound for fp16 on a T4.
T4_FACTOR = 67 / 8.1
#: A chapter "fits a T4" when its T4 estimate is within 10 minutes and this much GPU memory
#: (the T4's 16 GB less what CUDA itself takes).
T4_MEMORY_GB = 15.0
FITS = "fits a T4 (10 min, 15 GB)"
#: Seconds allowed a chapter on Colab for imports, loading models and data, and CPU-side work.
T4_ALLOWANCE = 60.0
#: Average tokens of a text relative to an STSb sentence (14.2 tokens), MiniLM's tokenizer on
#: the data folder's files: SNLI premises 17.9 and hypotheses 10.6 (NLI texts: 1.0), corpus_mini
#: passages 80.2, dev-subset queries 9.1.
LENGTH = {"sentence": 1.0, "nli": 1.0, "passage": 80.2 / 14.2, "query": 9.1 / 14.2}
#: Padded width of a batch of each kind (tokens; multiples of 32, about their 95th percentile).
WIDTH = {"sentence": 32, "nli": 32, "passage": 160, "query": 32}

#: Rows of the data sets the runs draw from when a size says "all" (``None``).
ROWS = {
    "nli pairs": published.TANEJA_SETUP["NLI rows (SNLI + MNLI train)"],
    "entailment pairs": published.TANEJA_SETUP["entailment pairs kept"],
    # one triplet per entailment hypothesis whose premise has a contradiction: at most this
    "nli triplets": published.TANEJA_SETUP["entailment pairs kept"],
    "supmpn groups": 280_000,  # SUPMPN_SETUP: "~280 K" premises of SNLI + MNLI
    "stsb train": 5_749,
    "stsb dev": 1_500,
    "stsb test": 1_379,
    "stsb train sentences": 2 * 5_749,  # at most: distinct sentences are fewer
    "corpus_mini": 16_799,
    "msmarco collection": 8_841_823,
    "dev subset queries": 540,
    "msmarco dev queries": 6_980,
    "dl19 queries": 43,
    "dl19 judged": 9_260,
    "bm25 candidates": 20,
    # sbert_tutor.data.pool.load_text_pool(): every distinct text, and its MS MARCO passages
    "pool texts": 179_313,
    "pool passages": 16_798,
}


@dataclass(frozen=True)
class Model:
    """What the estimates need of a model: parameters, layers, width, heads, compute factor."""

    params: float
    layers: int
    hidden: int
    heads: int
    factor: float


MINILM_L6 = Model(22.7e6, 6, 384, 12, 1.0)
BERT_BASE = Model(109.5e6, 12, 768, 12, H100["bert_base"][0])
DISTILBERT = Model(66.4e6, 6, 768, 12, H100["bert_base"][0] * 6 / 12)


def model_of(start: Any) -> Model:
    """The :class:`Model` of a start model: a :class:`WeakStart` keeps ``layers`` of MiniLM's 6
    (and its 11.7M embedding parameters); names are matched by family."""
    if isinstance(start, WeakStart):
        per_layer = (MINILM_L6.params - 11.7e6) / 6
        return Model(11.7e6 + per_layer * start.layers, start.layers, 384, 12, start.layers / 6)
    name = start_name(start).lower()
    if "distilbert" in name:
        return DISTILBERT
    if "bert-base" in name:
        return BERT_BASE
    if "minilm-l6" in name:
        return MINILM_L6
    raise ValueError(f"no cost model for start model {start!r}")


def model_factor(start: Any) -> float:
    """Compute of a start model relative to all-MiniLM-L6-v2 (BERT-base: 2.77, measured)."""
    return model_of(start).factor


@dataclass(frozen=True)
class Step:
    """The largest training step of a chapter: the model, and texts a step of each kind."""

    model: Model
    texts: Mapping[str, int]
    models_kept: int = 2


@dataclass(frozen=True)
class Work:
    """What one chapter does under one profile, in words and in sentence equivalents."""

    trains: str
    evaluates: str
    train_units: float = 0.0
    encode_units: float = 0.0
    fixed_seconds: float = 0.0  # measured GPU seconds of a part (the seven STS tasks)
    step: Step | None = None
    cpu_bound: str | None = None  # why the GPU does not shorten it, if it does not


def _run_examples(s: Any, rows: int) -> float:
    """Examples one training run sees: ``steps x batch`` or ``epochs x`` (a subset of) the data."""
    if s.steps is not None:
        return float(s.steps * s.batch_size)
    examples = getattr(s, "examples", None)
    return float(s.epochs * min(rows, examples if examples is not None else rows))


def _per_run(s: Any, rows: int) -> str:
    if s.steps is not None:
        return f"{s.steps} steps x {s.batch_size}"
    return f"{s.epochs} epoch(s) of {_run_examples(s, rows) / s.epochs:,.0f}, batch {s.batch_size}"


def _runs(s: Any, variants: int) -> str:
    return f"{variants} variant(s) x {len(s.seeds)} seed(s) from {start_label(s.start)}"


def _n(value: int | None, rows: int) -> int:
    return rows if value is None else min(value, rows)


def _sts_eval(pairs: int, times: int, start: Any) -> float:
    return 2.0 * pairs * times * model_factor(start)


def _cost(s: CostSizes) -> Work:
    return Work(
        trains="-",
        evaluates=f"cross-encoder rate on {s.pairs:,} STSb pairs, bi-encoder on "
        f"{s.sentences:,} sentences (3 repeats)",
        encode_units=4 * (2 * s.pairs + s.sentences) + s.sentences,
    )


def _pooling(s: PoolingSizes) -> Work:
    stsb = 2 * ROWS["stsb test"]
    return Work(
        trains="-",
        evaluates=f"seven STS tasks; 3 poolings on STSb test; {s.anisotropy_pairs:,} random "
        "pairs for anisotropy",
        encode_units=4 * (stsb + 2 * s.anisotropy_pairs),
        fixed_seconds=H100["sts"][0],
    )


def _transfer(s: TransferSizes) -> Work:
    items = "all items" if s.experiment_max_items is None else f"<= {s.experiment_max_items}"
    return Work(
        trains=f"logistic regressions ({s.kfold}-fold) on frozen embeddings",
        evaluates=f"{len(s.experiment_tasks)} SentEval tasks ({items} a split) x "
        f"{len(s.poolings)} poolings x 2 normalisations",
        cpu_bound="the logistic regressions run on the CPU",
    )


def _retrieval_metrics(s: RetrievalMetricsSizes) -> Work:
    dev_q = _n(s.dev_queries, ROWS["dev subset queries"])
    dl19_q = _n(s.dl19_queries, ROWS["dl19 queries"])
    passages = min(
        ROWS["corpus_mini"],
        dev_q * ROWS["bm25 candidates"] + _n(s.random_passages, ROWS["corpus_mini"]),
    )
    judged = ROWS["dl19 judged"] * dl19_q / ROWS["dl19 queries"]
    return Work(
        trains="-",
        evaluates=f"{dev_q} dev-subset and {dl19_q} DL19 queries over ~{passages + judged:,.0f} "
        "passages, k = 1..100",
        encode_units=(passages + judged) * LENGTH["passage"] + (dev_q + dl19_q) * LENGTH["query"],
    )


def _msmarco(s: MSMarcoSizes) -> Work:
    full = s.corpus == "full"
    passages = ROWS["msmarco collection"] if full else ROWS["corpus_mini"]
    queries = (ROWS["msmarco dev queries"] if full else ROWS["dev subset queries"]) + 43
    return Work(
        trains="-",
        evaluates=f"{', '.join(s.datasets)} over {passages:,} passages ({s.corpus} corpus)",
        encode_units=passages * LENGTH["passage"] + queries * LENGTH["query"],
    )


def _classification(s: ClassificationSizes) -> Work:
    runs = 4 * len(s.seeds)
    premises = sum(s.probe_premises)
    eval_pairs = _n(s.eval_pairs, ROWS["stsb dev"])
    return Work(
        trains=f"softmax on 4 feature sets: {_runs(s, 4)}, {_per_run(s, ROWS['nli pairs'])}",
        evaluates=f"linear probes on {premises:,} premises; STSb dev ({eval_pairs:,} pairs)",
        train_units=runs * _run_examples(s, ROWS["nli pairs"]) * 2 * model_factor(s.start),
        encode_units=3 * 2 * premises * model_factor(s.model)
        + _sts_eval(eval_pairs, runs + 1, s.start),
        step=Step(model_of(s.start), {"nli": 2 * s.batch_size}),
    )


def _regression(s: RegressionSizes) -> Work:
    runs = len(s.seeds)
    scale = _n(s.scale_pairs, ROWS["stsb train"])
    return Work(
        trains=f"cosine regression on STSb train: {_runs(s, 1)}, {_per_run(s, ROWS['stsb train'])}",
        evaluates=f"label-scale table on {scale:,} pairs; STSb test",
        train_units=runs * _run_examples(s, ROWS["stsb train"]) * 2 * model_factor(s.start),
        encode_units=2 * scale * model_factor(s.model)
        + _sts_eval(ROWS["stsb test"], runs + 1, s.start),
        step=Step(model_of(s.start), {"sentence": 2 * s.batch_size}),
    )


def _triplet(s: TripletSizes) -> Work:
    runs = 2 * len(s.seeds)
    triplets = _n(s.margin_triplets, ROWS["nli triplets"])
    eval_pairs = _n(s.eval_pairs, ROWS["stsb dev"])
    return Work(
        trains=f"triplet loss (margin {s.margin:g}), Euclidean and cosine: {_runs(s, 2)}, "
        f"{_per_run(s, ROWS['nli triplets'])}",
        evaluates=f"margin sweep on {triplets:,} triplets; STSb dev ({eval_pairs:,} pairs)",
        train_units=runs * _run_examples(s, ROWS["nli triplets"]) * 3 * model_factor(s.start),
        encode_units=3 * triplets * model_factor(s.model)
        + _sts_eval(eval_pairs, runs + 1, s.start),
        step=Step(model_of(s.start), {"nli": 3 * s.batch_size}),
    )


def _mnrl(s: MNRLSizes) -> Work:
    runs = len(s.seeds)
    return Work(
        trains=f"MNRL on entailment pairs: {_runs(s, 1)}, {_per_run(s, ROWS['entailment pairs'])}",
        evaluates=f"{s.fixed_pairs:,} fixed triplets (all-MiniLM-L6-v2); STSb test",
        train_units=runs * _run_examples(s, ROWS["entailment pairs"]) * 2 * model_factor(s.start),
        encode_units=3 * s.fixed_pairs + _sts_eval(ROWS["stsb test"], runs + 1, s.start),
        step=Step(model_of(s.start), {"nli": 2 * s.batch_size}),
    )


def _supmpn(s: SupMPNSizes) -> Work:
    group = 1 + s.positives + s.negatives
    per_seed = (
        _run_examples(s, ROWS["supmpn groups"]) * group
        + _run_examples(s, ROWS["nli triplets"]) * 3
        + _run_examples(s, ROWS["nli pairs"]) * 2
        + _run_examples(s, ROWS["stsb train"]) * 2
    )
    return Work(
        trains=f"SupMPN (P = {s.positives}, Q = {s.negatives}), MNRL, softmax, regression: "
        f"{_runs(s, 4)}, {_per_run(s, ROWS['supmpn groups'])} (SupMPN groups)",
        evaluates="STSb test; one fixed batch (all-MiniLM-L6-v2)",
        train_units=len(s.seeds) * per_seed * model_factor(s.start),
        encode_units=group * s.batch_size
        + _sts_eval(ROWS["stsb test"], 4 * len(s.seeds) + 1, s.start),
        step=Step(model_of(s.start), {"nli": group * s.batch_size}),
    )


def _search_guided(s: SearchGuidedSizes) -> Work:
    runs = 2 * len(s.seeds)
    pool = _n(s.pool, ROWS["stsb train sentences"])
    return Work(
        trains=f"contrastive, teacher vs dropout positives: {_runs(s, 2)}, {_per_run(s, pool)}",
        evaluates=f"teacher (all-MiniLM-L6-v2) encodes {pool:,} pool sentences; STSb test",
        train_units=runs * _run_examples(s, pool) * 2 * model_factor(s.start),
        encode_units=pool + _sts_eval(ROWS["stsb test"], runs + 1, s.start),
        step=Step(model_of(s.start), {"sentence": 2 * s.batch_size}),
    )


def _distance_dilemma(s: DistanceDilemmaSizes) -> Work:
    queries = ROWS["dev subset queries"] - s.test_queries
    negatives = (
        ROWS["bm25 candidates"] - 1 if s.negatives_per_query is None else s.negatives_per_query
    )
    pairs, triplets = queries * (1 + negatives), queries * negatives
    setups = 4 + (3 if s.study_margins else 0)
    factor = model_factor(s.model)
    q, p = LENGTH["query"], LENGTH["passage"]
    siamese = 2 * _run_examples(s, pairs) * (q + p)
    triplet = (setups - 2) * _run_examples(s, triplets) * (q + 2 * p)
    test_passages = min(
        ROWS["corpus_mini"],
        s.test_queries * (ROWS["bm25 candidates"] + 1) + _n(s.other_passages, ROWS["corpus_mini"]),
    )
    evaluation = (setups + 1) * (test_passages * p + s.test_queries * q) * factor
    return Work(
        trains=f"{setups} setups (Siamese/triplet x cosine/Euclidean) from "
        f"{s.model.rsplit('/', 1)[-1]}: {pairs:,} pairs / {triplets:,} triplets, "
        f"{_per_run(s, pairs)}",
        evaluates=f"{s.test_queries} test queries over {test_passages:,} passages, "
        f"{setups + 1} models",
        train_units=(siamese + triplet) * factor,
        encode_units=pairs * (q + p) + evaluation,
        step=Step(
            model_of(s.model),
            {"query": s.batch_size, "passage": 2 * s.batch_size},
            models_kept=setups + 2,
        ),
    )


def _efficiency(s: EfficiencySizes) -> Work:
    mixed = s.sts_sentences + s.passages * LENGTH["passage"]
    return Work(
        trains="-",
        evaluates=f"encode timings: {s.sts_sentences:,} STSb sentences + {s.passages:,} "
        f"passages, {s.repeats} repeats; exact search over {s.search_corpus:,} vectors",
        encode_units=(3 * 2 + 1 + 2) * s.repeats * mixed,
    )


def _reranking(s: RerankingSizes) -> Work:
    runs = len(s.seeds)
    q, p = LENGTH["query"], LENGTH["passage"]
    train_queries = ROWS["dev subset queries"] - s.test_queries
    negatives = (
        ROWS["bm25 candidates"] - 1 if s.negatives_per_query is None else s.negatives_per_query
    )
    ce_pairs = train_queries * (1 + negatives)
    m = s.msmarco_run
    test_passages = min(
        ROWS["corpus_mini"],
        s.test_queries * ROWS["bm25 candidates"] + _n(s.other_passages, ROWS["corpus_mini"]),
    )
    k = max(s.depths)
    stsb_runs = 2 * runs * _run_examples(s, ROWS["stsb train"]) * 2 * model_factor(s.start)
    return Work(
        trains=f"cross-encoder and bi-encoder on STSb train: {_runs(s, 2)}, "
        f"{_per_run(s, ROWS['stsb train'])}; an MS MARCO cross-encoder from "
        f"{start_label(m.start)}: {_per_run(m, ce_pairs)} ({ce_pairs:,} BM25 pairs)",
        evaluates=f"STSb test; {s.test_queries} held-out queries over {test_passages:,} "
        f"passages, top {k} re-ranked",
        train_units=stsb_runs + _run_examples(m, ce_pairs) * (q + p) * model_factor(m.start),
        encode_units=_sts_eval(ROWS["stsb test"], 2 * runs + 2, s.start)
        + 4 * s.cost_pairs * model_factor(s.start)
        + test_passages * p
        + s.test_queries * k * (q + p) * model_factor(m.start),
        step=Step(model_of(m.start), {"passage": m.batch_size}),
    )


def _compression(s: CompressionSizes) -> Work:
    runs = len(s.seeds)
    q, p = LENGTH["query"], LENGTH["passage"]
    queries = _n(s.queries, ROWS["dev subset queries"])
    passages = min(
        ROWS["corpus_mini"],
        queries * ROWS["bm25 candidates"] + _n(s.other_passages, ROWS["corpus_mini"]),
    )
    sts_pairs = _n(s.sts_pairs, ROWS["stsb test"])
    return Work(
        trains=f"MNRL and Matryoshka MNRL on entailment pairs: {_runs(s, 2)}, "
        f"{_per_run(s, ROWS['entailment pairs'])}",
        evaluates=f"{queries} queries over {passages:,} passages and STSb test, float32 / int8 / "
        f"binary / truncated; the trained models on STSb test at {len(s.matryoshka_dims)} sizes",
        train_units=2
        * runs
        * _run_examples(s, ROWS["entailment pairs"])
        * 2
        * model_factor(s.start),
        encode_units=queries * q
        + passages * p
        + 2.0 * sts_pairs
        + _sts_eval(ROWS["stsb test"], 2 * runs, s.start),
        step=Step(model_of(s.start), {"nli": 2 * s.batch_size}),
    )


def _approximate_indexes(s: ApproximateIndexSizes) -> Work:
    passage_share = ROWS["pool passages"] / ROWS["pool texts"]  # about 9%; the rest sentences
    texts = s.corpus * (1 - passage_share + passage_share * LENGTH["passage"])
    return Work(
        trains="-",
        evaluates=f"{s.corpus:,} pool texts and {s.queries:,} MS MARCO dev queries encoded once; "
        f"FAISS indexes built and searched on the CPU, {s.repeats} repeats",
        encode_units=texts + s.queries * LENGTH["query"],
    )


WORK: dict[type[ChapterSizes], Callable[[Any], Work]] = {
    CostSizes: _cost,
    PoolingSizes: _pooling,
    TransferSizes: _transfer,
    RetrievalMetricsSizes: _retrieval_metrics,
    MSMarcoSizes: _msmarco,
    ClassificationSizes: _classification,
    RegressionSizes: _regression,
    TripletSizes: _triplet,
    MNRLSizes: _mnrl,
    SupMPNSizes: _supmpn,
    SearchGuidedSizes: _search_guided,
    DistanceDilemmaSizes: _distance_dilemma,
    EfficiencySizes: _efficiency,
    RerankingSizes: _reranking,
    CompressionSizes: _compression,
    ApproximateIndexSizes: _approximate_indexes,
}
#: The introduction has no sizes: it loads all-MiniLM-L6-v2 and encodes a few sentences.
INTRODUCTION = "01_introduction"


def work(kind: type[ChapterSizes], profile: str) -> Work:
    """What the chapter of ``kind`` does under ``profile``."""
    return WORK[kind](sizes_for(kind, profile))


def h100_seconds(w: Work) -> float:
    """GPU seconds of a chapter's work on an H100 at the measured rates (no start-up)."""
    return w.train_units / H100["train"][0] + w.encode_units / H100["encode"][0] + w.fixed_seconds


def peak_memory_gb(w: Work) -> float:
    """Estimated peak GPU memory (GB): optimizer state, kept models, one step's activations."""
    if w.step is None:
        model = MINILM_L6
        state = 4 * model.params  # one encoder's fp32 weights
        activations = 256 * WIDTH["passage"] * model.hidden * 34 / 2  # one fp16 layer, batch 256
        return (state + activations) / 1e9
    m = w.step.model
    state = 16 * m.params + 4 * m.params * w.step.models_kept
    activations = sum(
        n * WIDTH[kind] * m.hidden * (34 + 5 * m.heads * WIDTH[kind] / m.hidden) * m.layers
        for kind, n in w.step.texts.items()
    )
    return (state + activations) / 1e9


def _gpu_runs(profile: str, folder: Any = None) -> list[Mapping[str, Any]]:
    return [
        r for r in recorded_matching(GPU_RECORDS, folder).values() if r.get("profile") == profile
    ]


def _run_name(record: Mapping[str, Any]) -> str:
    prov = record.get("provenance", {})
    sha = str(prov.get("git", {}).get("sha", "?"))[:10]
    return f"{record.get('hardware') or prov.get('hardware', {}).get('gpu') or 'CPU'}, commit {sha}, {prov.get('timestamp', '?')}"


def _minutes(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 60, 1)


def _rows_for(
    profile: str, cpu: Mapping[str, Any] | None, folder: Any = None
) -> list[dict[str, Any]]:
    cpu_times = (cpu or {}).get("chapters", {})
    gpu = _gpu_runs(profile, folder)
    quick_units = {
        CHAPTERS[k]: work(k, "quick").train_units + work(k, "quick").encode_units for k in SIZES
    }
    rows = []
    chapters: list[tuple[str, Work | None]] = [(INTRODUCTION, None)] + [
        (CHAPTERS[k], work(k, profile)) for k in SIZES
    ]
    for chapter, w in chapters:
        if w is None:
            w = Work(trains="-", evaluates="all-MiniLM-L6-v2 on a few sentences")
        measured_cpu = cpu_times.get(chapter, {})
        cpu_s = measured_cpu.get("seconds") if measured_cpu.get("outcome") == "passed" else None
        # CPU: measured for quick; scaled by the work ratio for the others
        transfer_all = (
            chapter == CHAPTERS[TransferSizes]
            and sizes_for(TransferSizes, profile).experiment_max_items is None
        )
        if transfer_all or (chapter == CHAPTERS[TransferSizes] and cpu_s is None):
            cpu_min, cpu_basis = _transfer_from_recorded_run(profile)
        elif cpu_s is None:
            cpu_min, cpu_basis = None, f"unmeasured: {CPU_COMMAND} after a run of every chapter"
        elif profile == "quick":
            cpu_min, cpu_basis = cpu_s / 60, f"measured: the quick profile's chapter times ({_run_name(cpu)})"
        else:
            if chapter == CHAPTERS[TransferSizes]:
                ratio = _transfer_ratio(profile)
            else:
                units = w.train_units + w.encode_units
                ratio = units / quick_units[chapter] if quick_units.get(chapter) else 1.0
            cpu_min = cpu_s * ratio / 60
            cpu_basis = (
                f"scaled from this chapter's measured quick time ({cpu_s:.0f} s) by {ratio:.3g} "
                "(its work relative to the quick profile's)"
            )
        # GPU: a recorded run, else scaled from the H100 figures
        measured = [r for r in gpu if chapter in r.get("chapters", {})]
        h100_s = h100_seconds(w)
        if profile == "quick" and chapter in QUICK_UNTIMED_ON_H100:
            h100_min = H100["chapter"][0] / 60
            h100_basis = (
                f"the other chapters' measurement ({H100['chapter'][1]}): this one failed in "
                "that run (before fixes), so it is taken at their upper end"
            )
        elif profile == "quick":
            h100_min = H100["chapter"][0] / 60
            h100_basis = f"measured: {H100['chapter'][1]} (upper end)"
        else:
            h100_min = (H100["chapter"][0] + h100_s) / 60
            h100_basis = (
                f"scaled from {H100['train'][1]} and {H100['encode'][1]} by the chapter's work "
                f"({w.train_units:,.0f} training and {w.encode_units:,.0f} encoding sentence "
                f"equivalents), plus {H100['chapter'][0]:.0f} s ({H100['chapter'][1]})"
            )
        t4_min = (T4_ALLOWANCE + h100_s * T4_FACTOR) / 60
        t4_basis = (
            f"scaled from the H100 estimate's GPU part ({h100_s:,.0f} s) by {T4_FACTOR:.1f} "
            f"(fp32 peak ratio 67/8.1 TFLOP/s: an upper bound in fp16), plus "
            f"{T4_ALLOWANCE:.0f} s for loading"
        )
        if w.cpu_bound:
            base = cpu_min if cpu_min is not None else None
            t4_min = h100_min = base
            t4_basis = h100_basis = (
                f"{w.cpu_bound}: the CPU estimate ({cpu_basis})"
                if base is not None
                else f"{w.cpu_bound}; unmeasured: {CPU_COMMAND}"
            )
        memory = peak_memory_gb(w)
        memory_basis = (
            "estimated (optimizer state, kept models, activations of the largest step, "
            f"Korthikanti et al. 2022); unmeasured: {GPU_COMMAND.format(profile=profile)}"
        )
        for record in measured:
            entry = record["chapters"][chapter]
            name = str(record.get("hardware", ""))
            what = f"measured: a recorded GPU run ({_run_name(record)})"
            if entry.get("peak_memory_gb") is not None:
                memory, memory_basis = entry["peak_memory_gb"], what
            if "T4" in name and entry.get("seconds") is not None:
                t4_min, t4_basis = entry["seconds"] / 60, what
            if "H100" in name and entry.get("seconds") is not None:
                h100_min, h100_basis = entry["seconds"] / 60, what
        rows.append(
            {
                "chapter": chapter,
                "profile": profile,
                "trains": w.trains,
                "evaluates": w.evaluates,
                "CPU, 2 cores (min)": _minutes(None if cpu_min is None else cpu_min * 60),
                "CPU basis": cpu_basis,
                "T4 (min)": _minutes(None if t4_min is None else t4_min * 60),
                "T4 basis": t4_basis,
                "H100 (min)": _minutes(None if h100_min is None else h100_min * 60),
                "H100 basis": h100_basis,
                "peak GPU memory (GB)": round(memory, 2),
                "memory basis": memory_basis,
                FITS: t4_min is not None and t4_min <= 10 and memory <= T4_MEMORY_GB,
                "_raw": {"CPU, 2 cores (min)": cpu_min, "T4 (min)": t4_min, "H100 (min)": h100_min},
            }
        )
    return rows


#: The recorded SentEval run the paper profile's transfer chapter is scaled from.
TRANSFER_RUN = "transfer_minilm_cpu"


def _transfer_from_recorded_run(profile: str) -> tuple[float | None, str]:
    """Minutes of the transfer experiment on all items, from the recorded SentEval run (all
    seven tasks, all items, 10-fold, one pooling, on 2 CPU cores) x poolings x normalisations."""
    record = recorded_results(TRANSFER_RUN)
    sizes = sizes_for(TransferSizes, profile)
    if record is None or "seconds" not in record:
        return None, f"unmeasured: no {TRANSFER_RUN}.json"
    if sizes.experiment_max_items is None:
        factor = len(sizes.poolings) * 2 * len(sizes.experiment_tasks) / 7 * sizes.kfold / 10
        what = f"{len(sizes.poolings)} poolings x 2 normalisations"
        extra = 0.0
    else:  # a subsample: by items x folds x poolings, plus the start-up allowance
        recorded_amount = sum(SENTEVAL_ITEMS.values()) * 10
        factor = _transfer_amount(sizes) * 2 / recorded_amount
        what = "items x folds x poolings x normalisations"
        extra = T4_ALLOWANCE
    basis = (
        f"scaled from the recorded transfer run ({TRANSFER_RUN}.json: {record['seconds']:.0f} s "
        f"on 2 CPU cores, 7 tasks, all items, 10-fold, one pooling; {_run_name(record)}) by "
        f"{factor:.3g} ({what})" + (f", plus {extra:.0f} s for loading" if extra else "")
    )
    return (float(record["seconds"]) * factor + extra) / 60, basis


def _transfer_amount(s: TransferSizes) -> float:
    """Items x folds x poolings of a transfer experiment (items capped at the subsample)."""
    items = sum(
        min(SENTEVAL_ITEMS[t], s.experiment_max_items or SENTEVAL_ITEMS[t])
        for t in s.experiment_tasks
    )
    return items * s.kfold * len(s.poolings)


def _transfer_ratio(profile: str) -> float:
    """The transfer experiment's work relative to the quick profile's: items x folds x
    poolings (a task's items capped at the subsample, SentEval's sizes otherwise)."""

    return _transfer_amount(sizes_for(TransferSizes, profile)) / _transfer_amount(
        sizes_for(TransferSizes, "quick")
    )


#: Items of each SentEval task (the data folder's manifest; SST2: train + dev + test).
SENTEVAL_ITEMS = {
    "mr": 10_662,
    "cr": 3_775,
    "subj": 10_000,
    "mpqa": 10_606,
    "sst2": 67_349 + 872 + 1_821,
    "trec": 5_452 + 500,
    "mrpc": 4_076 + 1_725,
}


def cost_table(profiles: tuple[str, ...] = PROFILES, folder: Any = None) -> pd.DataFrame:
    """Per chapter and profile: what it trains and evaluates, estimated minutes on 2 CPU cores,
    a T4 and an H100, the peak GPU memory, and the basis of each figure; then one ``book``
    row a profile with the sums. ``attrs["note"]`` says which runs the measured figures come
    from. ``folder``: where the recorded runs are (default: the package's,
    :func:`~sbert_tutor.book.recorded.results_folder`)."""
    cpu = recorded_results(CPU_RECORD, folder)
    rows: list[dict[str, Any]] = []
    for profile in profiles:
        part = _rows_for(profile, cpu, folder)
        rows.extend(part)
        total: dict[str, Any] = {"chapter": "book (all chapters)", "profile": profile}
        for column in ("CPU, 2 cores (min)", "T4 (min)", "H100 (min)"):
            values = [r["_raw"][column] for r in part]
            total[column] = None if any(v is None for v in values) else round(sum(values), 1)
        total["peak GPU memory (GB)"] = max(r["peak GPU memory (GB)"] for r in part)
        total[FITS] = all(r[FITS] for r in part) and (total["T4 (min)"] or math.inf) <= 90
        rows.append(total)
    table = pd.DataFrame(rows).drop(columns="_raw").set_index(["chapter", "profile"])
    source = (
        f"CPU column: the quick profile's chapter times from {_run_name(cpu)}"
        + ("" if cpu.get("complete") else " (an incomplete run)")
        if cpu
        else f"CPU column unmeasured: no {CPU_RECORD}.json yet ({CPU_COMMAND})"
    )
    table.attrs["note"] = (
        f"{source}. GPU columns: estimates scaled from one H100's measurements (each row says "
        f"by what), T4 = upper bounds; peak memory estimated, unmeasured until "
        f"`{GPU_COMMAND.format(profile='<profile>')}` runs on a GPU."
    )
    return table
