"""How big each chapter's data and runs are, under the ``quick``, ``t4`` and ``paper`` profiles.

One frozen dataclass per chapter, built by keyword, so a chapter reads ``sizes.pairs`` rather
than a number, and the profile choice is made once: ``sizes_for(CostSizes)`` returns a
:class:`CostSizes` (typed, so an editor knows its fields). The training chapters (6-11) share
:class:`RunSizes`: steps or epochs, batch size, examples, start model (with its pooling),
learning rate, warm-up and seeds; :func:`sbert_tutor.book.configs.training_config` turns them
into a :class:`~sbert_tutor.training.TrainingConfig`. The *profile name* itself is resolved by
the library (:func:`sbert_tutor.book.profiles.get_profile`); the sizes are the book's.

* ``quick``: CPU, small real subsets, a few minutes a chapter (the runs the rendered book shows). The
  training runs of chapters 6-11 start from :data:`QUICK_START`, a weak one-layer cut of
  all-MiniLM-L6-v2 (:mod:`sbert_tutor.book.weak_start`), three seeds each.
* ``t4``: one T4-class GPU (Colab's), fp16 mixed precision. The training runs start from
  :data:`T4_START`, ``nreimers/MiniLM-L6-H384-uncased``: the pre-trained MiniLM that
  all-MiniLM-L6-v2 was sentence-tuned from. It is a language model, never trained on sentence
  pairs, so every objective has all of its effect still to make; it is 6 layers of width 384
  (about a fifth of BERT-base's compute), so a run of a few thousand examples takes a minute on
  a T4; and a reader can download it anywhere (90 MB). Its runs are sized, with three seeds
  each, so that the estimate of :mod:`sbert_tutor.book.profile_costs` (an upper bound) stays within
  10 minutes a chapter on a T4 and 90 for the book.
* ``paper``: each chapter's run is its paper's setup (:mod:`sbert_tutor.book.published`:
  :data:`~sbert_tutor.book.published.SBERT_SETUP`, ``TANEJA_SETUP``, ``SUPMPN_SETUP``,
  ``OH_SETUP``, ``DISTANCE_DILEMMA``): start model and pooling, data, batch size, epochs,
  learning rate, warm-up, P/Q and margins. :func:`~sbert_tutor.book.deviations.deviations` lists what still differs and
  why, computed from these sizes and those setups (a test keeps the reasons in step).

``None`` means "all" (all pairs, all queries, full epochs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sbert_tutor.book.profiles import PROFILES, Profile, check_profile, get_profile
from sbert_tutor.book.weak_start import MINILM, Start, WeakStart

if TYPE_CHECKING:  # the encoder (torch) loads only when a model does
    pass

__all__ = [
    "ApproximateIndexSizes",
    "BERT",
    "CHAPTERS",
    "ChapterSizes",
    "ClassificationSizes",
    "CompressionSizes",
    "CostSizes",
    "DISTILBERT",
    "DistanceDilemmaSizes",
    "EfficiencySizes",
    "MNRLSizes",
    "MSMarcoSizes",
    "PAPER_SEEDS",
    "PoolingSizes",
    "QUICK_LR",
    "QUICK_RUN",
    "QUICK_SEEDS",
    "QUICK_START",
    "RegressionSizes",
    "RerankingSizes",
    "RetrievalMetricsSizes",
    "RunSizes",
    "SBERT_RUN",
    "SIZES",
    "SearchGuidedSizes",
    "SupMPNSizes",
    "T4_LR",
    "T4_RUN",
    "T4_SEEDS",
    "T4_START",
    "TransferSizes",
    "TripletSizes",
    "sizes_for",
]

BERT = "bert-base-uncased"
DISTILBERT = "distilbert-base-uncased"
#: The t4 profile's start for every training run: the pre-trained (masked-language-model)
#: MiniLM, 6 layers x 384, that all-MiniLM-L6-v2 was sentence-tuned from. Not sentence-tuned,
#: so each objective's effect is all its own; small enough for three seeds a variant on a T4.
T4_START = "nreimers/MiniLM-L6-H384-uncased"
#: The t4 profile's learning rate: the top of BERT's usual fine-tuning range (2e-5 to 5e-5),
#: for runs of a few hundred steps.
T4_LR = 5e-5
#: The quick profile's start for the training runs of chapters 6-11: all-MiniLM-L6-v2 cut to
#: its first transformer layer (:mod:`sbert_tutor.book.weak_start`), and the learning rate its
#: short runs use (5x SBERT's 2e-5: one layer, a few dozen steps).
QUICK_START = WeakStart(layers=1)
QUICK_LR = 1e-4
#: Seeds of every training variant: three in the quick and t4 profiles (mean and spread: a
#: verdict needs them); in the paper profile, the paper's own number of runs where it states one
#: (SBERT's Table 2: ten seeds), else one (hours a run; its tables then give no verdict).
QUICK_SEEDS = (0, 1, 2)
T4_SEEDS = (0, 1, 2)
PAPER_SEEDS = (0,)


@dataclass(frozen=True, kw_only=True)
class ChapterSizes:
    """Base of every chapter's sizes (keyword-only, frozen)."""


@dataclass(frozen=True, kw_only=True)
class RunSizes(ChapterSizes):
    """What sizes every training run of chapters 6-11.

    Attributes:
        steps: optimizer steps of each run (``None``: ``epochs`` whole epochs).
        epochs: passes over the training examples when ``steps`` is ``None``.
        batch_size: pairs (or groups) a step.
        examples: training examples drawn with the seed (``None``: all).
        start: the model each run starts from (a hub name, a :class:`Start` naming its
            pooling, or a :class:`WeakStart`).
        lr: the peak learning rate.
        warmup_ratio: share of the steps spent warming the learning rate up (then linear decay).
        seeds: one run per seed (mean and spread over them).
    """

    steps: int | None
    epochs: int = 1
    batch_size: int
    examples: int | None = None
    start: str | Start | WeakStart
    lr: float
    warmup_ratio: float = 0.1
    seeds: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class CostSizes(ChapterSizes):
    """Chapter 2 (the cost of cross-encoders): STSb test pairs the cross-encoder scores,
    sentences the bi-encoder encodes, and the batch size of both."""

    pairs: int
    sentences: int
    batch_size: int


@dataclass(frozen=True, kw_only=True)
class PoolingSizes(ChapterSizes):
    """Chapter 3 (Siamese pooling and STS): random sentence pairs behind the anisotropy estimate."""

    anisotropy_pairs: int


@dataclass(frozen=True, kw_only=True)
class TransferSizes(ChapterSizes):
    """Chapter 3b (transfer tasks): what the chapter computes when it runs.

    Attributes:
        experiment_tasks: the tasks of the pooling/normalisation experiment.
        experiment_max_items: items a split in it (a stratified subsample; ``None`` = all).
        poolings: the poolings compared (each with and without L2 normalisation).
        kfold: folds of its cross-validations (SentEval's 10 on full data; fewer on subsamples).
        classifier: the probe of the experiment. ``"lbfgs"``, the converged logistic regression:
            the experiment asks what the embeddings carry, and SentEval's Adam with early stopping
            barely leaves its initialisation on a few hundred items (16 steps a round on a
            quick profile's inner training fold), so its answer would be about the optimiser.
    """

    experiment_tasks: tuple[str, ...]
    experiment_max_items: int | None
    poolings: tuple[str, ...]
    kfold: int = 10
    classifier: str = "lbfgs"


@dataclass(frozen=True, kw_only=True)
class RetrievalMetricsSizes(ChapterSizes):
    """Chapter 4 (retrieval metrics vs k): dev-subset queries (with their BM25 top-20s), TREC DL19
    queries (with their judged passages) and random other ``corpus_mini`` passages."""

    dev_queries: int | None
    dl19_queries: int | None
    random_passages: int | None


@dataclass(frozen=True, kw_only=True)
class MSMarcoSizes(ChapterSizes):
    """Chapter 5 (MS MARCO): the corpus (``mini`` = ``corpus_mini.tsv``, ``full`` = the 8.8M
    collection from the hub) and the two datasets evaluated on it."""

    corpus: str
    datasets: tuple[str, str]


@dataclass(frozen=True, kw_only=True)
class ClassificationSizes(RunSizes):
    """Chapter 6 (classification): the model of the linear probes, STSb dev pairs the runs are
    scored on and premises of the probes' (train, test) sides, beside the runs' sizes."""

    model: str
    eval_pairs: int | None
    probe_premises: tuple[int, int]


@dataclass(frozen=True, kw_only=True)
class RegressionSizes(RunSizes):
    """Chapter 7 (regression): the model of the label-scale table and its STSb train pairs."""

    model: str
    scale_pairs: int | None


@dataclass(frozen=True, kw_only=True)
class TripletSizes(RunSizes):
    """Chapter 8 (triplet): the model of the margin sweep, its NLI triplets, the STSb dev
    pairs the runs are scored on, and the margin of the runs (SBERT's: 1, Euclidean)."""

    model: str
    margin_triplets: int | None
    eval_pairs: int | None
    margin: float = 1.0


@dataclass(frozen=True, kw_only=True)
class MNRLSizes(RunSizes):
    """Chapter 9 (MNRL): pairs encoded once for the fixed-embedding analyses."""

    fixed_pairs: int


@dataclass(frozen=True, kw_only=True)
class SupMPNSizes(RunSizes):
    """Chapter 10 (SupMPN): ``positives`` (P) and ``negatives`` (Q) per anchor; ``batch_size``
    is also the fixed batch of the denominator analysis."""

    positives: int
    negatives: int


@dataclass(frozen=True, kw_only=True)
class SearchGuidedSizes(RunSizes):
    """Chapter 11 (semantic-search guidance): unlabelled sentences in the pool; ``start`` is the
    student (the teacher is always all-MiniLM-L6-v2 itself)."""

    pool: int | None


@dataclass(frozen=True, kw_only=True)
class DistanceDilemmaSizes(ChapterSizes):
    """Chapter 12 (the distance dilemma): test queries (the first ones of the dev subset; the
    rest train), random extra test passages beyond their judged and BM25 candidates, BM25
    negatives per training query, the start model (mean pooling, as the study's), optimizer
    steps, epochs, batch size, learning rate and warm-up, triplets in the PCA picture, and
    whether the study's own margins are trained too (three more runs: only in the paper
    profile)."""

    test_queries: int
    other_passages: int | None
    negatives_per_query: int | None
    model: str
    steps: int | None
    epochs: int
    batch_size: int
    lr: float = 2e-5
    warmup_ratio: float = 0.1
    pca_triplets: int
    study_margins: bool


@dataclass(frozen=True, kw_only=True)
class EfficiencySizes(ChapterSizes):
    """Chapter 13 (computational efficiency): STSb sentences and MS MARCO passages timed, timing
    repeats, and the corpus size of the search benchmark."""

    sts_sentences: int
    passages: int
    repeats: int
    search_corpus: int


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
        reranker: the published MS MARCO cross-encoder, used when the hub is reachable.
    """

    cost_pairs: int
    test_queries: int
    other_passages: int | None
    negatives_per_query: int | None
    depths: tuple[int, ...]
    msmarco_run: RunSizes
    reranker: str = "cross-encoder/ms-marco-MiniLM-L6-v2"


@dataclass(frozen=True, kw_only=True)
class CompressionSizes(ChapterSizes):
    """Chapter 15 (compressed embeddings): MS MARCO dev-subset queries searched (``None``: all),
    random passages beyond their judged and BM25 candidates (``None``: the whole mini corpus),
    STSb test pairs (``None``: all) and search-timing repeats; then the Matryoshka study, the
    plain MNRL objective and its Matryoshka-wrapped twin trained alike on NLI entailment
    pairs: ``steps`` (or ``epochs``), ``batch_size``, ``examples``, ``start``, ``lr``,
    ``warmup_ratio``, ``seeds`` (as :class:`RunSizes`) and the prefix lengths ``matryoshka_dims``
    (the Matryoshka loss's and the truncations evaluated). Not a :class:`RunSizes`: no paper's
    setup is followed (Kusupati et al. 2022 train vision and BERT classifiers; sentence-
    transformers' example is an illustration). The t4 profile trains one seed for 100 steps, which
    keeps the whole book within a Colab session; the paper profile trains chapter 9's t4 run
    (200 steps of 64, three seeds) for each objective."""

    queries: int | None
    other_passages: int | None
    sts_pairs: int | None
    repeats: int
    steps: int | None
    epochs: int = 1
    batch_size: int
    examples: int | None = None
    start: str | Start | WeakStart
    lr: float
    warmup_ratio: float = 0.1
    seeds: tuple[int, ...]
    matryoshka_dims: tuple[int, ...] = (384, 256, 128, 64, 32)


@dataclass(frozen=True, kw_only=True)
class ApproximateIndexSizes(ChapterSizes):
    """Chapter 16 (approximate indexes): pool texts embedded and indexed when the chapter runs
    (a seeded sample), MS MARCO dev-small queries searched, and timing repeats."""

    corpus: int
    queries: int
    repeats: int


QUICK_RUN: dict[str, Any] = {"start": QUICK_START, "lr": QUICK_LR, "seeds": QUICK_SEEDS}
T4_RUN: dict[str, Any] = {"start": T4_START, "lr": T4_LR, "seeds": T4_SEEDS}
#: SBERT's own setup (Reimers & Gurevych 2019; :data:`~sbert_tutor.book.published.SBERT_SETUP`):
#: BERT-base with mean pooling, batch 16, lr 2e-5, warm-up over 10%.
SBERT_RUN: dict[str, Any] = {
    "start": Start(BERT, "mean"),
    "lr": 2e-5,
    "warmup_ratio": 0.1,
    "batch_size": 16,
}

#: sizes class -> profile name -> that chapter's sizes.
SIZES: dict[type[ChapterSizes], dict[str, ChapterSizes]] = {
    CostSizes: {
        "quick": CostSizes(pairs=192, sentences=512, batch_size=32),
        "t4": CostSizes(pairs=4096, sentences=10000, batch_size=128),
        "paper": CostSizes(pairs=4096, sentences=10000, batch_size=128),
    },
    PoolingSizes: {
        "quick": PoolingSizes(anisotropy_pairs=2000),
        "t4": PoolingSizes(anisotropy_pairs=20000),
        "paper": PoolingSizes(anisotropy_pairs=20000),
    },
    TransferSizes: {
        "quick": TransferSizes(
            experiment_tasks=("mr", "subj", "trec", "mrpc"),
            experiment_max_items=400,
            poolings=("mean", "cls"),
            kfold=5,
        ),
        # the logistic regressions run on the CPU, which a T4 does not speed up: quick's sizes
        "t4": TransferSizes(
            experiment_tasks=("mr", "subj", "trec", "mrpc"),
            experiment_max_items=400,
            poolings=("mean", "cls"),
            kfold=5,
        ),
        "paper": TransferSizes(
            experiment_tasks=("mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc"),
            experiment_max_items=None,
            poolings=("mean", "cls", "max"),
        ),
    },
    RetrievalMetricsSizes: {
        "quick": RetrievalMetricsSizes(dev_queries=100, dl19_queries=10, random_passages=0),
        "t4": RetrievalMetricsSizes(dev_queries=None, dl19_queries=None, random_passages=None),
        "paper": RetrievalMetricsSizes(dev_queries=None, dl19_queries=None, random_passages=None),
    },
    MSMarcoSizes: {
        "quick": MSMarcoSizes(corpus="mini", datasets=("msmarco-dev-subset", "trec-dl19")),
        # the 8.8M collection is hours of encoding on a T4: the 16,799-passage mini corpus
        "t4": MSMarcoSizes(corpus="mini", datasets=("msmarco-dev-subset", "trec-dl19")),
        "paper": MSMarcoSizes(corpus="full", datasets=("msmarco-dev", "trec-dl19")),
    },
    ClassificationSizes: {
        # 150 steps: from the weak start, 25 steps of softmax leave STSb within the seed
        # spread (69.7 +- 0.2 from 69.72); 150 move it (+1.5, every seed above the start)
        "quick": ClassificationSizes(
            model=MINILM,
            steps=150,
            batch_size=16,
            examples=2400,
            eval_pairs=500,
            probe_premises=(500, 300),
            **QUICK_RUN,
        ),
        "t4": ClassificationSizes(
            model=T4_START,
            steps=100,
            batch_size=32,
            examples=None,
            eval_pairs=None,
            probe_premises=(2000, 500),
            **T4_RUN,
        ),
        "paper": ClassificationSizes(
            model=BERT,
            steps=None,
            epochs=1,
            examples=None,
            eval_pairs=None,
            probe_premises=(20000, 2000),
            seeds=PAPER_SEEDS,
            **SBERT_RUN,
        ),
    },
    RegressionSizes: {
        "quick": RegressionSizes(
            model=MINILM,
            scale_pairs=500,
            steps=60,
            epochs=1,
            batch_size=16,
            examples=2000,
            **QUICK_RUN,
        ),
        "t4": RegressionSizes(
            model=T4_START,
            scale_pairs=None,
            steps=None,
            epochs=1,
            batch_size=16,
            examples=None,
            **T4_RUN,
        ),
        "paper": RegressionSizes(
            model=BERT,
            scale_pairs=None,
            steps=None,
            epochs=4,
            examples=None,
            seeds=tuple(range(10)),
            **SBERT_RUN,
        ),
    },
    TripletSizes: {
        "quick": TripletSizes(
            model=MINILM,
            margin_triplets=500,
            steps=25,
            batch_size=16,
            examples=1000,
            eval_pairs=500,
            **QUICK_RUN,
        ),
        "t4": TripletSizes(
            model=T4_START,
            margin_triplets=5000,
            steps=120,
            batch_size=32,
            examples=None,
            eval_pairs=None,
            **T4_RUN,
        ),
        "paper": TripletSizes(
            model=BERT,
            margin_triplets=5000,
            steps=None,
            epochs=1,
            examples=None,
            eval_pairs=None,
            seeds=PAPER_SEEDS,
            **SBERT_RUN,
        ),
    },
    MNRLSizes: {
        "quick": MNRLSizes(fixed_pairs=1024, steps=40, batch_size=32, examples=1280, **QUICK_RUN),
        "t4": MNRLSizes(fixed_pairs=8192, steps=200, batch_size=64, examples=None, **T4_RUN),
        "paper": MNRLSizes(
            fixed_pairs=8192,
            start=Start(BERT, "mean"),
            steps=None,
            epochs=1,
            batch_size=12,
            examples=None,
            lr=2e-5,
            warmup_ratio=0.1,
            seeds=PAPER_SEEDS,
        ),
    },
    SupMPNSizes: {
        "quick": SupMPNSizes(
            batch_size=16, steps=40, examples=640, positives=2, negatives=2, **QUICK_RUN
        ),
        "t4": SupMPNSizes(
            batch_size=32, steps=60, examples=None, positives=2, negatives=2, **T4_RUN
        ),
        "paper": SupMPNSizes(
            # the paper pools the average of the first and last layers; the library pools the
            # last layer only (see deviation_table)
            start=Start(BERT, "mean"),
            batch_size=256,
            steps=None,
            epochs=3,
            examples=None,
            positives=5,
            negatives=5,
            lr=5e-5,
            seeds=PAPER_SEEDS,
        ),
    },
    SearchGuidedSizes: {
        "quick": SearchGuidedSizes(pool=1280, steps=40, batch_size=32, **QUICK_RUN),
        "t4": SearchGuidedSizes(pool=None, steps=100, batch_size=64, **T4_RUN),
        "paper": SearchGuidedSizes(
            pool=None,
            start=Start(BERT, "cls"),
            steps=None,
            epochs=1,
            batch_size=32,
            lr=3e-5,
            seeds=PAPER_SEEDS,
        ),
    },
    DistanceDilemmaSizes: {
        "quick": DistanceDilemmaSizes(
            test_queries=100,
            other_passages=0,
            negatives_per_query=2,
            model=MINILM,
            steps=32,
            epochs=1,
            batch_size=16,
            pca_triplets=40,
            study_margins=False,
        ),
        "t4": DistanceDilemmaSizes(
            test_queries=200,
            other_passages=0,
            negatives_per_query=4,
            model=T4_START,
            steps=None,
            epochs=1,
            batch_size=16,
            lr=T4_LR,
            pca_triplets=100,
            study_margins=False,
        ),
        "paper": DistanceDilemmaSizes(
            test_queries=200,
            other_passages=None,
            negatives_per_query=None,
            model=DISTILBERT,
            steps=None,
            epochs=3,
            batch_size=64,
            warmup_ratio=0.0,
            pca_triplets=100,
            study_margins=True,
        ),
    },
    RerankingSizes: {
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
            negatives_per_query=4,
            depths=(1, 5, 10, 20, 100),
            msmarco_run=RunSizes(steps=None, batch_size=16, start=MINILM, lr=T4_LR, seeds=(0,)),
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
    EfficiencySizes: {
        "quick": EfficiencySizes(sts_sentences=500, passages=100, repeats=2, search_corpus=100_000),
        "t4": EfficiencySizes(
            sts_sentences=5000, passages=2000, repeats=3, search_corpus=1_000_000
        ),
        "paper": EfficiencySizes(
            sts_sentences=5000, passages=2000, repeats=5, search_corpus=1_000_000
        ),
    },
    CompressionSizes: {
        "quick": CompressionSizes(
            queries=60,
            other_passages=200,
            sts_pairs=None,
            repeats=2,
            steps=40,
            batch_size=32,
            examples=1280,
            **QUICK_RUN,
        ),
        "t4": CompressionSizes(
            queries=None,
            other_passages=None,
            sts_pairs=None,
            repeats=3,
            steps=100,
            batch_size=64,
            examples=None,
            **{**T4_RUN, "seeds": T4_SEEDS[:1]},
        ),
        "paper": CompressionSizes(
            queries=None,
            other_passages=None,
            sts_pairs=None,
            repeats=3,
            steps=200,
            batch_size=64,
            examples=None,
            **T4_RUN,
        ),
    },
    ApproximateIndexSizes: {
        "quick": ApproximateIndexSizes(corpus=3000, queries=300, repeats=3),
        "t4": ApproximateIndexSizes(corpus=20_000, queries=1000, repeats=3),
        "paper": ApproximateIndexSizes(corpus=50_000, queries=2000, repeats=5),
    },
}

#: sizes class -> the chapter (notebook stem in ``book/``) that reads it.
CHAPTERS: dict[type[ChapterSizes], str] = {
    CostSizes: "02_cost_of_cross_encoders",
    PoolingSizes: "03_siamese_pooling_sts",
    TransferSizes: "03b_transfer_tasks",
    RetrievalMetricsSizes: "04_retrieval_metrics",
    MSMarcoSizes: "05_msmarco",
    ClassificationSizes: "06_classification_objective",
    RegressionSizes: "07_regression_objective",
    TripletSizes: "08_triplet_objective",
    MNRLSizes: "09_multiple_negatives_ranking",
    SupMPNSizes: "10_supmpn",
    SearchGuidedSizes: "11_semantic_search_guided",
    DistanceDilemmaSizes: "12_distance_dilemma",
    EfficiencySizes: "13_computational_efficiency",
    RerankingSizes: "14_reranking",
    CompressionSizes: "15_compressed_embeddings",
    ApproximateIndexSizes: "16_approximate_indexes",
}

S = TypeVar("S", bound=ChapterSizes)


def sizes_for(kind: type[S], profile: Profile | str | None = None) -> S:
    """The sizes of one chapter (its sizes class, e.g. :class:`CostSizes`) under ``profile``.

    ``profile``: a :class:`~sbert_tutor.book.profiles.Profile`, one of
    :data:`~sbert_tutor.book.profiles.PROFILES` (``"quick"``, ``"t4"``, ``"paper"``), or ``None``
    (resolved by :func:`~sbert_tutor.book.profiles.get_profile`).

    Example:
        >>> sizes_for(CostSizes, "quick").pairs
        192
    """
    if profile is None:
        profile = get_profile()
    name = profile.name if isinstance(profile, Profile) else check_profile(str(profile))
    if kind not in SIZES:
        known = ", ".join(k.__name__ for k in SIZES)
        raise TypeError(f"{kind!r} is not a chapter's sizes class; use one of {known}")
    return cast(S, SIZES[kind][name])


assert all(set(by_profile) == set(PROFILES) for by_profile in SIZES.values())
assert set(CHAPTERS) == set(SIZES)
