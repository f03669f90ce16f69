"""How big each chapter's data and runs are, under the quick and the full profile.

One frozen dataclass per chapter, so a chapter reads ``sizes.pairs`` rather than a number, and
the quick/full choice is made once (:func:`sizes_for`). The *profile name* itself is resolved by
the library (:func:`sbert_tutor.profiles.get_profile`); the sizes are the book's.

* ``quick``: CPU, small real subsets, a few minutes a chapter (CI and the book build). The
  training runs of chapters 6-11 start from :data:`QUICK_START`, a weak one-layer cut of
  all-MiniLM-L6-v2 (:mod:`sbert_tutor.book.weak_start`), three seeds each.
* ``full``: GPU, paper-scale data and epochs, from the papers' start models.

``None`` means "all" (all pairs, all queries, full epochs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sbert_tutor.book.weak_start import MINILM, WeakStart
from sbert_tutor.profiles import PROFILES, Profile, get_profile
from sbert_tutor.validation import check_choice

BERT = "bert-base-uncased"
#: The quick profile's start for the training runs of chapters 6-11: all-MiniLM-L6-v2 cut to
#: its first transformer layer (:mod:`sbert_tutor.book.weak_start`), and the learning rate its
#: short runs use (5x SBERT's 2e-5: one layer, a few dozen steps).
QUICK_START = WeakStart(layers=1)
QUICK_LR = 1e-4
#: Seeds of every training variant: three in the quick profile (mean and spread); one in the
#: full profile, whose GPU runs are long (its tables then give no verdict).
QUICK_SEEDS = (0, 1, 2)
FULL_SEEDS = (42,)


@dataclass(frozen=True)
class CostSizes:
    """Chapter 2 (the cost of cross-encoders): STSb test pairs the cross-encoder scores,
    sentences the bi-encoder encodes, and the batch size of both."""

    pairs: int
    sentences: int
    batch_size: int


@dataclass(frozen=True)
class PoolingSizes:
    """Chapter 3 (Siamese pooling and STS): random sentence pairs behind the anisotropy estimate."""

    anisotropy_pairs: int


@dataclass(frozen=True)
class TransferSizes:
    """Chapter 3b (transfer tasks): what the chapter computes while the book builds.

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


@dataclass(frozen=True)
class RetrievalMetricsSizes:
    """Chapter 4 (retrieval metrics vs k): dev-subset queries (with their BM25 top-20s), TREC DL19
    queries (with their judged passages) and random other ``corpus_mini`` passages."""

    dev_queries: int | None
    dl19_queries: int | None
    random_passages: int | None


@dataclass(frozen=True)
class MSMarcoSizes:
    """Chapter 5 (MS MARCO): the corpus (``mini`` = ``corpus_mini.tsv``, ``full`` = the 8.8M
    collection from the hub) and the two datasets evaluated on it."""

    corpus: str
    datasets: tuple[str, str]


@dataclass(frozen=True)
class ClassificationSizes:
    """Chapter 6 (classification): the model of the linear probes, optimizer steps of each
    short run, batch size, training examples drawn with the seed, STSb dev pairs the runs are
    scored on, premises of the probes' (train, test) sides, and the runs' start model, learning
    rate and seeds."""

    model: str
    steps: int | None
    batch_size: int
    examples: int | None
    eval_pairs: int | None
    probe_premises: tuple[int, int]
    start: str | WeakStart
    lr: float
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class RegressionSizes:
    """Chapter 7 (regression): the model of the label-scale table, its STSb train pairs, and the
    regression runs' steps (``None``: ``epochs``), epochs, batch size, training examples, start
    model, learning rate and seeds."""

    model: str
    scale_pairs: int | None
    steps: int | None
    epochs: int
    batch_size: int
    examples: int | None
    start: str | WeakStart
    lr: float
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class TripletSizes:
    """Chapter 8 (triplet): the model of the margin sweep, its NLI triplets, and the short
    runs' steps, batch size, training examples, STSb dev pairs they are scored on, start model,
    learning rate and seeds."""

    model: str
    margin_triplets: int | None
    steps: int | None
    batch_size: int
    examples: int | None
    eval_pairs: int | None
    start: str | WeakStart
    lr: float
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class MNRLSizes:
    """Chapter 9 (MNRL): pairs encoded once for the fixed-embedding analyses, and the short runs'
    steps, batch size, training examples, start model, learning rate and seeds."""

    fixed_pairs: int
    steps: int | None
    batch_size: int
    examples: int | None
    start: str | WeakStart
    lr: float
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class SupMPNSizes:
    """Chapter 10 (SupMPN): the batch size (also the fixed batch of the denominator analysis),
    and the short runs' steps, training examples, start model, learning rate and seeds."""

    batch_size: int
    steps: int | None
    examples: int | None
    start: str | WeakStart
    lr: float
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class SearchGuidedSizes:
    """Chapter 11 (semantic-search guidance): unlabelled sentences in the pool, the student (the
    teacher is always the full all-MiniLM-L6-v2), and the runs' steps, batch size, learning rate
    and seeds."""

    pool: int | None
    student: str | WeakStart
    steps: int | None
    batch_size: int
    lr: float
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class DistanceDilemmaSizes:
    """Chapter 12 (the distance dilemma): test queries (the first ones of the dev subset; the
    rest train), random extra test passages beyond their judged and BM25 candidates, BM25
    negatives per training query, the start model, optimizer steps, epochs, batch size,
    triplets in the PCA picture, and whether the study's own margins are trained too (three more
    runs: more than a minute of CPU, so only in the full profile)."""

    test_queries: int
    other_passages: int | None
    negatives_per_query: int | None
    model: str
    steps: int | None
    epochs: int
    batch_size: int
    pca_triplets: int
    study_margins: bool


@dataclass(frozen=True)
class EfficiencySizes:
    """Chapter 13 (computational efficiency): STSb sentences and MS MARCO passages timed, timing
    repeats, and the corpus size of the search benchmark."""

    sts_sentences: int
    passages: int
    repeats: int
    search_corpus: int


#: chapter -> (quick sizes, full sizes).
SIZES: dict[str, tuple[Any, Any]] = {
    "cost": (CostSizes(192, 512, 32), CostSizes(4096, 20000, 128)),
    "pooling": (PoolingSizes(2000), PoolingSizes(20000)),
    "transfer": (
        TransferSizes(("mr", "subj", "trec", "mrpc"), 400, ("mean", "cls"), kfold=5),
        TransferSizes(
            ("mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc"), None, ("mean", "cls", "max")
        ),
    ),
    "retrieval_metrics": (
        RetrievalMetricsSizes(100, 10, 0),
        RetrievalMetricsSizes(None, None, None),
    ),
    "msmarco": (
        MSMarcoSizes("mini", ("msmarco-dev-subset", "trec-dl19")),
        MSMarcoSizes("full", ("msmarco-dev", "trec-dl19")),
    ),
    "classification": (
        ClassificationSizes(
            # 150 steps: from the weak start, 25 steps of softmax leave STSb within the seed
            # spread (69.7 +- 0.2 from 69.72); 150 move it (+1.5, every seed above the start)
            MINILM,
            150,
            16,
            2400,
            500,
            (500, 300),
            QUICK_START,
            QUICK_LR,
            QUICK_SEEDS,
        ),
        ClassificationSizes(BERT, None, 16, None, None, (20000, 2000), BERT, 2e-5, FULL_SEEDS),
    ),
    "regression": (
        RegressionSizes(MINILM, 500, 60, 1, 16, 2000, QUICK_START, QUICK_LR, QUICK_SEEDS),
        RegressionSizes(BERT, None, None, 4, 16, None, BERT, 2e-5, FULL_SEEDS),
    ),
    "triplet": (
        TripletSizes(MINILM, 500, 25, 16, 1000, 500, QUICK_START, QUICK_LR, QUICK_SEEDS),
        TripletSizes(BERT, 5000, None, 16, None, None, BERT, 2e-5, FULL_SEEDS),
    ),
    "mnrl": (
        MNRLSizes(1024, 40, 32, 1280, QUICK_START, QUICK_LR, QUICK_SEEDS),
        MNRLSizes(8192, None, 64, None, BERT, 2e-5, FULL_SEEDS),
    ),
    "supmpn": (
        SupMPNSizes(16, 40, 640, QUICK_START, QUICK_LR, QUICK_SEEDS),
        SupMPNSizes(64, None, None, BERT, 2e-5, FULL_SEEDS),
    ),
    "search_guided": (
        SearchGuidedSizes(1280, QUICK_START, 40, 32, QUICK_LR, QUICK_SEEDS),
        SearchGuidedSizes(None, BERT, None, 64, 2e-5, FULL_SEEDS),
    ),
    "distance_dilemma": (
        DistanceDilemmaSizes(100, 0, 2, MINILM, 32, 1, 16, 40, False),
        DistanceDilemmaSizes(200, None, None, BERT, None, 1, 16, 100, True),
    ),
    "efficiency": (
        EfficiencySizes(500, 100, 2, 100_000),
        EfficiencySizes(5000, 2000, 5, 1_000_000),
    ),
}


def sizes_for(chapter: str, profile: Profile | str | None = None) -> Any:
    """The sizes of ``chapter`` (a key of :data:`SIZES`) under ``profile``.

    ``profile``: a :class:`~sbert_tutor.profiles.Profile`, ``"quick"`` / ``"full"``, or ``None``
    (resolved by :func:`~sbert_tutor.profiles.get_profile`).

    Example:
        >>> sizes_for("cost", "quick").pairs
        192
    """
    if profile is None:
        profile = get_profile()
    name = profile.name if isinstance(profile, Profile) else str(profile)
    check_choice(name, PROFILES, "profile", key=name)
    quick, full = SIZES[check_choice(chapter, tuple(SIZES), "chapter")]
    return quick if name == "quick" else full
