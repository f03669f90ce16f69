"""How big each chapter's data and runs are, under the quick and the full profile.

One frozen dataclass per chapter, built by keyword, so a chapter reads ``sizes.pairs`` rather
than a number, and the quick/full choice is made once: ``sizes_for(CostSizes)`` returns a
:class:`CostSizes` (typed, so an editor knows its fields). The training chapters (6-11) share
:class:`RunSizes`: steps, batch size, examples, start model, learning rate and seeds. The *profile name* itself is resolved by
the library (:func:`sbert_tutor.profiles.get_profile`); the sizes are the book's.

* ``quick``: CPU, small real subsets, a few minutes a chapter (CI and the book build). The
  training runs of chapters 6-11 start from :data:`QUICK_START`, a weak one-layer cut of
  all-MiniLM-L6-v2 (:mod:`sbert_tutor.book.weak_start`), three seeds each.
* ``full``: GPU, paper-scale data and epochs, from the papers' start models.

``None`` means "all" (all pairs, all queries, full epochs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, cast

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


@dataclass(frozen=True, kw_only=True)
class ChapterSizes:
    """Base of every chapter's sizes (keyword-only, frozen)."""


@dataclass(frozen=True, kw_only=True)
class RunSizes(ChapterSizes):
    """What sizes every training run of chapters 6-11.

    Attributes:
        steps: optimizer steps of each run (``None``: whole epochs).
        batch_size: pairs (or groups) a step.
        examples: training examples drawn with the seed (``None``: all).
        start: the model each run starts from (a hub name or a :class:`WeakStart`).
        lr: the peak learning rate.
        seeds: one run per seed (mean and spread over them).
    """

    steps: int | None
    batch_size: int
    examples: int | None = None
    start: str | WeakStart
    lr: float
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
    """Chapter 7 (regression): the model of the label-scale table and its STSb train pairs, and
    the epochs of the runs when ``steps`` is ``None``."""

    model: str
    scale_pairs: int | None
    epochs: int


@dataclass(frozen=True, kw_only=True)
class TripletSizes(RunSizes):
    """Chapter 8 (triplet): the model of the margin sweep, its NLI triplets, and the STSb dev
    pairs the runs are scored on."""

    model: str
    margin_triplets: int | None
    eval_pairs: int | None


@dataclass(frozen=True, kw_only=True)
class MNRLSizes(RunSizes):
    """Chapter 9 (MNRL): pairs encoded once for the fixed-embedding analyses."""

    fixed_pairs: int


@dataclass(frozen=True, kw_only=True)
class SupMPNSizes(RunSizes):
    """Chapter 10 (SupMPN): ``batch_size`` is also the fixed batch of the denominator analysis."""


@dataclass(frozen=True, kw_only=True)
class SearchGuidedSizes(RunSizes):
    """Chapter 11 (semantic-search guidance): unlabelled sentences in the pool; ``start`` is the
    student (the teacher is always the full all-MiniLM-L6-v2)."""

    pool: int | None


@dataclass(frozen=True, kw_only=True)
class DistanceDilemmaSizes(ChapterSizes):
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


@dataclass(frozen=True, kw_only=True)
class EfficiencySizes(ChapterSizes):
    """Chapter 13 (computational efficiency): STSb sentences and MS MARCO passages timed, timing
    repeats, and the corpus size of the search benchmark."""

    sts_sentences: int
    passages: int
    repeats: int
    search_corpus: int


QUICK_RUN = {"start": QUICK_START, "lr": QUICK_LR, "seeds": QUICK_SEEDS}
FULL_RUN = {"start": BERT, "lr": 2e-5, "seeds": FULL_SEEDS}

#: sizes class -> profile name -> that chapter's sizes.
SIZES: dict[type[ChapterSizes], dict[str, ChapterSizes]] = {
    CostSizes: {
        "quick": CostSizes(pairs=192, sentences=512, batch_size=32),
        "full": CostSizes(pairs=4096, sentences=20000, batch_size=128),
    },
    PoolingSizes: {
        "quick": PoolingSizes(anisotropy_pairs=2000),
        "full": PoolingSizes(anisotropy_pairs=20000),
    },
    TransferSizes: {
        "quick": TransferSizes(
            experiment_tasks=("mr", "subj", "trec", "mrpc"),
            experiment_max_items=400,
            poolings=("mean", "cls"),
            kfold=5,
        ),
        "full": TransferSizes(
            experiment_tasks=("mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc"),
            experiment_max_items=None,
            poolings=("mean", "cls", "max"),
        ),
    },
    RetrievalMetricsSizes: {
        "quick": RetrievalMetricsSizes(dev_queries=100, dl19_queries=10, random_passages=0),
        "full": RetrievalMetricsSizes(dev_queries=None, dl19_queries=None, random_passages=None),
    },
    MSMarcoSizes: {
        "quick": MSMarcoSizes(corpus="mini", datasets=("msmarco-dev-subset", "trec-dl19")),
        "full": MSMarcoSizes(corpus="full", datasets=("msmarco-dev", "trec-dl19")),
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
        "full": ClassificationSizes(
            model=BERT,
            steps=None,
            batch_size=16,
            examples=None,
            eval_pairs=None,
            probe_premises=(20000, 2000),
            **FULL_RUN,
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
        "full": RegressionSizes(
            model=BERT,
            scale_pairs=None,
            steps=None,
            epochs=4,
            batch_size=16,
            examples=None,
            **FULL_RUN,
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
        "full": TripletSizes(
            model=BERT,
            margin_triplets=5000,
            steps=None,
            batch_size=16,
            examples=None,
            eval_pairs=None,
            **FULL_RUN,
        ),
    },
    MNRLSizes: {
        "quick": MNRLSizes(fixed_pairs=1024, steps=40, batch_size=32, examples=1280, **QUICK_RUN),
        "full": MNRLSizes(fixed_pairs=8192, steps=None, batch_size=64, examples=None, **FULL_RUN),
    },
    SupMPNSizes: {
        "quick": SupMPNSizes(batch_size=16, steps=40, examples=640, **QUICK_RUN),
        "full": SupMPNSizes(batch_size=64, steps=None, examples=None, **FULL_RUN),
    },
    SearchGuidedSizes: {
        "quick": SearchGuidedSizes(pool=1280, steps=40, batch_size=32, **QUICK_RUN),
        "full": SearchGuidedSizes(pool=None, steps=None, batch_size=64, **FULL_RUN),
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
        "full": DistanceDilemmaSizes(
            test_queries=200,
            other_passages=None,
            negatives_per_query=None,
            model=BERT,
            steps=None,
            epochs=1,
            batch_size=16,
            pca_triplets=100,
            study_margins=True,
        ),
    },
    EfficiencySizes: {
        "quick": EfficiencySizes(sts_sentences=500, passages=100, repeats=2, search_corpus=100_000),
        "full": EfficiencySizes(
            sts_sentences=5000, passages=2000, repeats=5, search_corpus=1_000_000
        ),
    },
}

S = TypeVar("S", bound=ChapterSizes)


def sizes_for(kind: type[S], profile: Profile | str | None = None) -> S:
    """The sizes of one chapter (its sizes class, e.g. :class:`CostSizes`) under ``profile``.

    ``profile``: a :class:`~sbert_tutor.profiles.Profile`, ``"quick"`` / ``"full"``, or ``None``
    (resolved by :func:`~sbert_tutor.profiles.get_profile`).

    Example:
        >>> sizes_for(CostSizes, "quick").pairs
        192
    """
    if profile is None:
        profile = get_profile()
    name = profile.name if isinstance(profile, Profile) else str(profile)
    check_choice(name, PROFILES, "profile", key=name)
    if kind not in SIZES:
        known = ", ".join(k.__name__ for k in SIZES)
        raise TypeError(f"{kind!r} is not a chapter's sizes class; use one of {known}")
    return cast(S, SIZES[kind][name])
