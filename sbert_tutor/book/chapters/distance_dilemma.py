r"""Chapter 12, the *distance dilemma*: Siamese vs. Triplet SBERT for retrieval (Rygaard,
Bramsløw, Jensen and Bagger, n.d., "Distance Dilemma: Siamese vs. Triplet SBERT Networks for
Information Retrieval", Technical University of Denmark).

Four bi-encoders are fine-tuned from the same start model on the same MS MARCO queries and
compared on a disjoint set of queries:

==========================  =========================  ==========================================
setup                       objective                  loss (chapter 12 notation)
==========================  =========================  ==========================================
Siamese / cosine            ``ce_score`` (cosine)      :math:`(y - \operatorname{ReLU}(\cos(q, d)))^2`
Siamese / euclidean         ``ce_score`` (euclidean)   :math:`(1 - y - \lVert q - d \rVert)^2`
Triplet / cosine            ``triplet`` (cosine)       :math:`\max(\delta_c(q, p) - \delta_c(q, n) + \varepsilon, 0)`
Triplet / euclidean         ``triplet`` (euclidean)    :math:`\max(\lVert q - p\rVert - \lVert q - n \rVert + \varepsilon, 0)`
==========================  =========================  ==========================================

with :math:`\delta_c = 1 - \cos` (SBERT's cosine distance, in :math:`[0, 2]`) and :math:`y` the
teacher's relevance probability of the pair. The Euclidean margin is SBERT's,
:math:`\varepsilon = 1`; the cosine one, 0.5, equals it on the unit sphere (:data:`SETUPS`). The
study's own setups, :data:`STUDY_MARGIN_SETUPS`, use its margins, :math:`\varepsilon = 5` (and 1
for the cosine distance), and its cosine distance :math:`\delta_c^{+} = 1 -
\operatorname{ReLU}(\cos) \in [0, 1]` (``distance="cosine_relu"``).
:func:`margin_activity` shows how each margin acts: no pair of unit vectors satisfies a margin
above 2 with :math:`\delta_c` or the Euclidean distance, and no pair of any vectors satisfies one
above 1 with :math:`\delta_c^{+}`.

**Data.** The book's MS MARCO data (read from ``SBERT_TUTOR_DATA`` or rebuilt from the hub,
chapter 5) hold no cross-encoder scores and only 100 toy training triples, so
:func:`load_dilemma_data` builds training data from the BM25 top-20 candidates of the 540-query
self-consistent dev subset: the first ``n_test`` queries (file order) are the test collection (their judged passages, their BM25 candidates and optionally
random others: :func:`~sbert_tutor.data.sample_msmarco`); the *other* queries are the training
queries, with their judged passages as positives and their non-relevant BM25 candidates as hard
negatives. Unjudged is not the same as irrelevant: some "negatives" are unlabelled relevant
passages (MS MARCO judges about one passage per query).

**Teacher.** The paper regresses onto a cross-encoder's scores. No cross-encoder is among the
models this book uses, so the teacher is all-MiniLM-L6-v2's cosine :math:`c`, Platt-calibrated
on the training pairs' labels (:func:`platt_scale`): :math:`y = \sigma(a c +
b)`, a relevance probability like a cross-encoder's. The teacher logits :math:`z = a c + b` are
the ``ce_score`` objective's labels.

Figures: :func:`plot_teacher_scores`, :func:`plot_training_curves`, :func:`plot_results`,
:func:`plot_triplet_pca`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book import published
from sbert_tutor.book.analysis import pca_2d
from sbert_tutor.book.bootstrap import interval_verdict, paired_bootstrap
from sbert_tutor.book.deviations import HUB_NAMES, POOLINGS, WARMUPS, Aspect, epochs_of
from sbert_tutor.book.figures import new_axes, new_panels, plot_loss_curves
from sbert_tutor.book.sizes import (
    DISTILBERT,
    QUICK_LR,
    QUICK_START,
    T4_LR,
    T4_START,
    ChapterSizes,
    register_sizes,
)
from sbert_tutor.book.weak_start import load_start, start_label
from sbert_tutor.data.msmarco import (
    MSMarcoData,
    bm25_candidates_path,
    load_bm25_candidates,
    load_msmarco,
    sample_msmarco,
)
from sbert_tutor.data.table import DataTable
from sbert_tutor.encoders.protocol import Encoder, encode_unique
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.evaluation.retrieval import RetrievalResult, encode_corpus, evaluate_retrieval
from sbert_tutor.metrics import Run, evaluate_run_per_query
from sbert_tutor.results import Result
from sbert_tutor.training import TrainingConfig, TrainingRecord
from sbert_tutor.training.recipe import fit

__all__ = [
    "DilemmaData",
    "DilemmaRun",
    "DistanceDilemmaSizes",
    "MEASURES",
    "SETUPS",
    "SIZES",
    "STUDY_MARGIN_SETUPS",
    "TEACHER",
    "TrainingSets",
    "best_setup",
    "bootstrap_changes",
    "bootstrap_sentence",
    "bootstrap_vs_start",
    "build_training_sets",
    "evaluate_setup",
    "held_out_triplets",
    "load_dilemma_data",
    "margin_activity",
    "pair_cosines",
    "paper_aspects",
    "platt_scale",
    "plot_results",
    "plot_teacher_scores",
    "plot_training_curves",
    "plot_triplet_pca",
    "results_grid",
    "run_dilemma",
    "setup_score",
    "target_cosines",
    "target_shift",
    "teacher_summary",
    "triplet_geometry",
]


@dataclass(frozen=True, kw_only=True)
class DistanceDilemmaSizes(ChapterSizes):
    """Chapter 12 (the distance dilemma): test queries (the first ones of the dev subset; the
    rest train), random extra test passages beyond their judged and BM25 candidates, BM25
    negatives per training query, the start model (a hub name or a start such as
    :class:`~sbert_tutor.book.weak_start.WeakStart`; mean pooling, as the study's), optimizer
    steps, epochs, batch size, learning rate and warm-up, triplets in the PCA picture, and
    whether the study's own margins are trained too (three more runs: only in the paper
    profile)."""

    test_queries: int
    other_passages: int | None
    negatives_per_query: int | None
    model: Any
    steps: int | None
    epochs: int
    batch_size: int
    lr: float = 2e-5
    warmup_ratio: float = 0.1
    pca_triplets: int
    study_margins: bool


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them). ``quick`` starts from the
#: one-layer weak start of chapters 6-11 with their learning rate: a model with room to learn
#: from the teacher (the full all-MiniLM-L6-v2, already trained on MS MARCO, could only be
#: nudged) and a fifth of the full model's cost a step.
SIZES: dict[str, DistanceDilemmaSizes] = register_sizes(
    "12_distance_dilemma",
    {
        "quick": DistanceDilemmaSizes(
            test_queries=100,
            other_passages=0,
            negatives_per_query=2,
            model=QUICK_START,
            steps=32,
            epochs=1,
            batch_size=16,
            lr=QUICK_LR,
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
)


def paper_aspects() -> list[Aspect]:
    """What the paper profile is compared on with the Distance Dilemma study's setup, read from
    :data:`~sbert_tutor.book.published.DISTANCE_DILEMMA` now (see
    :mod:`sbert_tutor.book.deviations`)."""
    dd, src = published.DISTANCE_DILEMMA, published.DISTANCE_DILEMMA_SOURCE
    return [
        Aspect("start model", HUB_NAMES[dd["start model"]], src, lambda s: start_label(s.model)),
        Aspect("pooling", POOLINGS[dd["pooling"]], src, lambda s: "mean"),
        Aspect("batch size", dd["batch size"], src, lambda s: s.batch_size),
        Aspect("epochs", dd["epochs"], src, epochs_of),
        Aspect(
            "learning rate",
            dd["learning rate"],
            src,
            lambda s: s.lr,
            "the study states none (only that it decreases linearly); SBERT's 2e-5",
        ),
        Aspect("warm-up ratio", WARMUPS[dd["warm-up"]], src, lambda s: s.warmup_ratio),
        Aspect(
            "triplet margin",
            dd["triplet margin"],
            src,
            lambda s: 5.0 if s.study_margins else "SBERT's (1 Euclidean, 0.5 cosine) only",
        ),
        Aspect("test queries", dd["test queries"], src, lambda s: s.test_queries),
        Aspect(
            "training queries",
            dd["training queries"],
            src,
            lambda s: f"the dev subset's other queries (540 - {s.test_queries})",
            "the study's 125,000-query subset of MS MARCO (with its cross-encoder scores) is not "
            "published and its selection is not described; the chapter trains on the queries of "
            "the dev subset (540 judged, with BM25 candidates) that its test split leaves",
        ),
        Aspect(
            "test corpus (passages)",
            f"{dd['corpus passages (millions)']} million",
            src,
            lambda s: (
                "the test queries' judged and BM25 passages"
                + (" + all of corpus_mini (16,799)" if s.other_passages is None else "")
            ),
            "the split, the BM25 negatives and the teacher scores are built from the dev subset "
            "over corpus_mini; chapter 5's paper profile retrieves from the 8.8M collection, for "
            "one model, where this chapter evaluates seven",
        ),
        Aspect(
            "hard negatives and their scores",
            f"cross-encoder scores ({dd['CE-score transform']}); negatives at least "
            f"{dd['hard-negative CE-score gap (logits)']} logits below the positive",
            src,
            lambda s: "BM25 negatives; all-MiniLM-L6-v2's cosines, Platt-scaled on the judgements",
            "the study's cross-encoder scores come with its unpublished subset; the chapter scores "
            "its pairs with a bi-encoder teacher and maps cosines to probabilities on the judged "
            "labels (Platt scaling)",
        ),
    ]


#: name -> (objective, options). Margins: SBERT's :math:`\varepsilon = 1` for the Euclidean
#: triplet; :math:`\varepsilon = 0.5` for the cosine distance :math:`\delta_c = 1 - \cos`. On unit
#: vectors :math:`\lVert q - d \rVert = \sqrt{2 \delta_c}`, so a pair at :math:`\delta_c = 0.5`
#: (cosine 0.5) sits at Euclidean distance 1: both margins are the same share of that distance.
SETUPS: dict[str, tuple[str, dict[str, Any]]] = {
    "Siamese / cosine": ("ce_score", {"similarity": "cosine"}),
    "Siamese / euclidean": ("ce_score", {"similarity": "euclidean"}),
    "Triplet / cosine": ("triplet", {"distance": "cosine", "margin": 0.5}),
    "Triplet / euclidean": ("triplet", {"distance": "euclidean", "margin": 1.0}),
}


#: The study's own triplet setups (Rygaard et al., sections 2.3.2 and 4.1): :math:`\varepsilon = 5`
#: for both distances, and :math:`\varepsilon = 1` for the cosine distance, which it tried again.
#: Its cosine distance is thresholded at 0 by a ReLU (the note under its eq. 1, which covers its
#: eq. 4): :math:`\delta_c^{+} = 1 - \operatorname{ReLU}(\cos)`, ``"cosine_relu"``.
STUDY_MARGIN_SETUPS: dict[str, tuple[str, dict[str, Any]]] = {
    "Triplet / cosine, ε = 5 (study)": ("triplet", {"distance": "cosine_relu", "margin": 5.0}),
    "Triplet / euclidean, ε = 5 (study)": ("triplet", {"distance": "euclidean", "margin": 5.0}),
    "Triplet / cosine, ε = 1 (study)": ("triplet", {"distance": "cosine_relu", "margin": 1.0}),
}


#: The measures Rygaard et al. report, in their order.
MEASURES = ("precision", "accuracy", "mrr", "ndcg")


TEACHER = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass
class DilemmaData:
    """Training queries with positives and hard negatives, and a disjoint test collection.

    Attributes:
        train_queries: ``{qid: text}``.
        positives: ``{qid: [pid, ...]}`` judged relevant passages of each training query.
        negatives: ``{qid: [pid, ...]}`` non-relevant BM25 candidates, best BM25 rank first.
        candidates: ``{qid: [pid, ...]}`` every BM25 top-20 list, best first (test queries too).
        passages: ``{pid: text}`` every passage the training examples use.
        test: the evaluation collection (queries disjoint from ``train_queries``).
        files: local files the data came from (for provenance).
        notes: how it was built.
    """

    train_queries: dict[str, str]
    positives: dict[str, list[str]]
    negatives: dict[str, list[str]]
    passages: dict[str, str]
    test: MSMarcoData
    candidates: dict[str, list[str]] = field(default_factory=dict)  # qid -> BM25 top-20, best first
    files: tuple[Any, ...] = ()
    notes: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        """Sizes of both sides, for tables and provenance."""
        return {
            "train_queries": len(self.train_queries),
            "train_positives": sum(map(len, self.positives.values())),
            "train_negatives": sum(map(len, self.negatives.values())),
            "test_queries": len(self.test.queries),
            "test_passages": len(self.test.corpus),
            "overlap_queries": len(set(self.train_queries) & set(self.test.queries)),
        }


def load_dilemma_data(n_test: int = 100, n_other: int | None = 0, seed: int = 0) -> DilemmaData:
    """Split the dev subset's queries into a test collection and BM25-built training queries.

    Args:
        n_test: test queries (the first ones of ``dev_small_subset`` in file order).
        n_other: random extra passages in the test corpus beyond the test queries' judged
            passages and BM25 candidates (``None``: the whole mini corpus).
        seed: for the random extra passages.

    Raises:
        DataNotFoundError: ``SBERT_TUTOR_DATA`` is unset and the hub cannot be reached.
        ValueError: ``n_test`` leaves no training query.
    """
    dev = load_msmarco("msmarco-dev-subset")
    labelled = load_bm25_candidates(with_labels=True)
    ranked = {q: [p for p, _ in items] for q, items in labelled.items()}
    test = sample_msmarco(dev, n_test, n_other, seed=seed, candidates=ranked)
    threshold = dev.relevance_threshold
    train_queries, positives, negatives = {}, {}, {}
    for qid, text in dev.queries.items():
        if qid in test.queries or qid not in labelled:
            continue
        relevant = {p for p, g in dev.qrels.get(qid, {}).items() if g >= threshold}
        pos = [p for p in sorted(relevant) if p in dev.corpus]
        neg = [p for p, label in labelled[qid] if p not in relevant and not label]
        if pos and neg:
            train_queries[qid], positives[qid], negatives[qid] = text, pos, neg
    if not train_queries:
        raise ValueError(f"n_test={n_test} leaves no training query (the subset has 540)")
    used = {p for ps in (*positives.values(), *negatives.values()) for p in ps}
    note = (
        f"training: {len(train_queries)} dev-subset queries not in the test split, judged "
        "passages as positives, non-relevant BM25 top-20 candidates as hard negatives; test: "
        f"{len(test.queries)} other queries"
    )
    files = (*dev.files, bm25_candidates_path())
    return DilemmaData(
        train_queries=train_queries,
        positives=positives,
        negatives=negatives,
        passages={p: dev.corpus[p] for p in sorted(used)},
        test=test,
        candidates=ranked,
        files=files,
        notes=(*test.notes, note),
    )


def target_cosines(y: Sequence[float] | np.ndarray) -> pd.DataFrame:
    r"""The cosine each Siamese loss asks a pair with teacher probability :math:`y` to have.

    For unit vectors :math:`\lVert q - d \rVert = \sqrt{2 - 2\cos(q, d)}`, so

    * cosine: :math:`\operatorname{ReLU}(\cos) = y`, i.e. :math:`\cos = y` (for :math:`y > 0`;
      at :math:`y = 0` any :math:`\cos \le 0` has zero loss);
    * euclidean: :math:`\lVert q - d \rVert = 1 - y`, i.e.
      :math:`\cos = 1 - \tfrac{(1 - y)^2}{2}`, which lies in :math:`[\tfrac12, 1]`: an
      irrelevant pair is asked to keep cosine :math:`\tfrac12`, not to be orthogonal.
    """
    y = np.asarray(y, dtype=np.float64)
    if ((y < 0) | (y > 1)).any() or not np.isfinite(y).all():
        raise ValueError("teacher probabilities must lie in [0, 1]")
    return pd.DataFrame(
        {"y": y, "Siamese / cosine": y, "Siamese / euclidean": 1 - (1 - y) ** 2 / 2}
    ).set_index("y")


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)


def pair_cosines(encoder: Encoder, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
    """Cosine of each (query, passage) pair under ``encoder`` (texts encoded once each, in sorted
    order: the order the chapter's recorded teacher scores were made with)."""
    queries, passages = list(queries), list(passages)
    emb = encode_unique(
        encoder, [*queries, *passages], batch_size=64, show_progress_bar=None, order="sorted"
    )
    emb = _unit(emb.astype(np.float64))
    return (emb[: len(queries)] * emb[len(queries) :]).sum(axis=1)


@dataclass
class TrainingSets:
    """The examples of both architectures, built from the same (query, passage) judgements."""

    pairs: pd.DataFrame  # query, passage, label (0/1), teacher_cosine, teacher_logit
    triplets: pd.DataFrame  # query, positive, negative
    calibration: tuple[float, float]
    notes: tuple[str, ...] = field(default_factory=tuple)
    files: tuple[Any, ...] = ()  # local data files behind the examples (hashed into provenance)

    def siamese(self) -> DataTable:
        """``(query, passage, label = teacher logit)`` rows for the ``ce_score`` objective."""
        table = self.pairs[["query", "passage", "teacher_logit"]].rename(
            columns={"teacher_logit": "label"}
        )
        return self._data(table, "pairs with teacher logits")

    def triplet(self) -> DataTable:
        """``(query, positive, negative)`` rows for the ``triplet`` objective."""
        return self._data(self.triplets, "triplets")

    def _data(self, table: pd.DataFrame, kind: str) -> DataTable:
        return DataTable(
            table.reset_index(drop=True),
            source=f"distance-dilemma {kind}: " + "; ".join(self.notes),
            files=tuple(str(f) for f in self.files),
        )


def build_training_sets(
    data: DilemmaData, teacher: Encoder, negatives_per_query: int | None = 4
) -> TrainingSets:
    r"""Pairs with teacher scores (Siamese) and triplets (Triplet) from the same judgements.

    Per training query: every positive :math:`p`, and the ``negatives_per_query`` best-ranked
    BM25 negatives :math:`n_1, n_2, \dots` (``None``: all). Siamese pairs are :math:`(q, p)` and
    :math:`(q, n_j)`; triplets pair each positive with each negative, :math:`(q, p, n_j)`, so
    both architectures see the same passages. The teacher's cosines are calibrated on these
    pairs' labels (:func:`platt_scale`) into logits :math:`z = a c + b`.
    """
    if negatives_per_query is not None and negatives_per_query < 1:
        raise ValueError(f"negatives_per_query must be >= 1 or None, got {negatives_per_query}")
    rows, triples = [], []
    for qid, query in data.train_queries.items():
        negs = data.negatives[qid][:negatives_per_query]
        for pid in data.positives[qid]:
            rows.append((query, data.passages[pid], 1))
            triples += [(query, data.passages[pid], data.passages[n]) for n in negs]
        rows += [(query, data.passages[n], 0) for n in negs]
    pairs = pd.DataFrame(rows, columns=["query", "passage", "label"])
    pairs["teacher_cosine"] = pair_cosines(teacher, pairs["query"], pairs["passage"])
    a, b = platt_scale(pairs["teacher_cosine"], pairs["label"])
    pairs["teacher_logit"] = a * pairs["teacher_cosine"] + b
    note = (
        f"teacher: {getattr(teacher, 'name', TEACHER)} cosine c, calibrated "
        f"y = sigmoid({a:.2f} c {b:+.2f}) on {len(pairs):,} training pairs (in place of the "
        "paper's cross-encoder scores)"
    )
    return TrainingSets(
        pairs=pairs,
        triplets=pd.DataFrame(triples, columns=["query", "positive", "negative"]),
        calibration=(a, b),
        notes=(*data.notes, note),
        files=tuple(data.files),
    )


def teacher_summary(sets: TrainingSets) -> pd.DataFrame:
    """Mean teacher cosine and probability for positives and negatives (and their counts)."""
    frame = sets.pairs.assign(
        teacher_probability=1 / (1 + np.exp(-sets.pairs["teacher_logit"])),
        kind=sets.pairs["label"].map({1: "positive", 0: "BM25 negative"}),
    )
    out = frame.groupby("kind")[["teacher_cosine", "teacher_probability"]].mean()
    out.insert(0, "pairs", frame.groupby("kind").size())
    return out


def setup_score(loss: str, options: Mapping[str, Any]) -> str:
    """The ranking score matching a setup's training geometry: the ``similarity`` of a Siamese
    setup or the ``distance`` of a triplet one (``"cosine"`` or ``"euclidean"``). The study's
    thresholded cosine distance ``"cosine_relu"`` ranks by the cosine (the ReLU would only add
    ties at 0)."""
    key = options.get("similarity", options.get("distance"))
    key = "cosine" if key == "cosine_relu" else key
    if key not in ("cosine", "euclidean"):
        raise ValueError(f"no ranking score for {loss} with {dict(options)}")
    return str(key)


def evaluate_setup(
    encoder: Encoder,
    test: MSMarcoData,
    scores: Sequence[str],
    ks: Sequence[int] = (1, 5, 10),
) -> dict[str, RetrievalResult]:
    """Retrieval metrics of one encoder on the test collection, for each ranking score.

    The corpus is encoded once (:func:`~sbert_tutor.evaluation.retrieval.encode_corpus`) and
    searched once per score with :func:`~sbert_tutor.evaluation.retrieval.evaluate_retrieval`.
    """
    corpus = encode_corpus(encoder, test.corpus, show_progress_bar=False)
    return {
        score: evaluate_retrieval(
            encoder,
            test.queries,
            corpus,
            test.qrels,
            ks=ks,
            score=score,
            show_progress_bar=False,
            relevance_threshold=test.relevance_threshold,
        )
        for score in scores
    }


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class DilemmaRun(Result):
    """Results of :func:`run_dilemma`.

    Attributes:
        table: one row per (setup, measure, k): ``setup``, ``architecture``, ``distance``,
            ``measure``, ``k``, ``value``.
        per_query: setup -> one row per test query, one column a ``measure@k``.
        runs: setup -> its ranked run (query -> passage -> score), as evaluated.
        records, logs: each training run's loss curve and log (with its provenance).
        encoders: the start model and the trained encoders (when kept).
        seconds: training time of each setup.
    """

    per_query: dict[str, pd.DataFrame]
    runs: dict[str, Run]
    records: dict[str, TrainingRecord]
    logs: dict[str, dict[str, Any]]
    encoders: dict[str, SentenceEncoder]
    seconds: dict[str, float]


def run_dilemma(
    model: Any,
    sets: TrainingSets,
    test: MSMarcoData,
    config: TrainingConfig,
    setups: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
    ks: Sequence[int] = (1, 5, 10),
    baseline: bool = True,
    keep_encoders: bool = True,
) -> DilemmaRun:
    """Train one fresh ``model`` per setup on ``sets`` and evaluate each on ``test``.

    ``model`` is the start: a hub name or folder, or a start with a ``load()`` such as a
    :class:`~sbert_tutor.book.weak_start.WeakStart` (read by
    :func:`~sbert_tutor.book.weak_start.load_start`).

    Every run shares ``config`` (steps, batch size, learning rate, seed). The start model is
    evaluated first (``baseline``) with both scores. Returns a long table with columns
    ``setup``, ``architecture``, ``distance``, ``measure``, ``k``, ``value``.
    """
    setups = SETUPS if setups is None else setups
    rows: list[dict[str, Any]] = []
    records, logs, encoders, seconds, per_query, runs = {}, {}, {}, {}, {}, {}

    def add(name: str, arch: str, distance: str, result: RetrievalResult) -> None:
        runs[name] = result.run
        per_query[name] = pd.DataFrame.from_dict(
            evaluate_run_per_query(result.run, test.qrels, ks, test.relevance_threshold),
            orient="index",
        )
        for measure in MEASURES:
            for k in ks:
                rows.append(
                    {
                        "setup": name,
                        "architecture": arch,
                        "distance": distance,
                        "measure": measure,
                        "k": int(k),
                        "value": float(result.table.loc[measure, k]),
                    }
                )

    if baseline:
        start = load_start(model)
        tables = evaluate_setup(start, test, ("cosine", "euclidean"), ks)
        for distance, result in tables.items():
            add(f"start model / {distance}", "start model", distance, result)
        if keep_encoders:
            encoders["start model"] = start
    for name, (loss, options) in setups.items():
        score = setup_score(loss, options)
        siamese = loss == "ce_score"
        train = sets.siamese() if siamese else sets.triplet()
        encoder = load_start(model)
        begin = time.perf_counter()
        run = fit(encoder, loss, train, config, objective_options=dict(options))
        seconds[name] = time.perf_counter() - begin
        records[name], logs[name] = run.record, run.log
        arch = "Siamese" if siamese else "Triplet"
        add(name, arch, score, evaluate_setup(run.model, test, (score,), ks)[score])
        if keep_encoders:
            encoders[name] = run.model
        del run
    return DilemmaRun(
        table=pd.DataFrame(rows),
        note=f"fractions in [0, 1]; {len(test.queries)} test queries",
        per_query=per_query,
        runs=runs,
        records=records,
        logs=logs,
        encoders=encoders,
        seconds=seconds,
    )


def results_grid(table: pd.DataFrame, measures: Sequence[str] = MEASURES) -> pd.DataFrame:
    """Wide view: one row per setup, one column per ``measure@k`` (as in Rygaard et al.'s tables)."""
    sub = table[table["measure"].isin(measures)].copy()
    sub["column"] = sub["measure"] + "@" + sub["k"].astype(str)
    order = [f"{m}@{k}" for m in measures for k in sorted(sub["k"].unique())]
    wide = sub.pivot_table(index="setup", columns="column", values="value", sort=False)
    return wide[[c for c in order if c in wide.columns]]


def best_setup(table: pd.DataFrame, measure: str = "mrr", k: int = 10) -> pd.Series:
    """Each trained setup's ``measure@k`` minus the start model's (same distance), sorted."""
    sub = table[(table["measure"] == measure) & (table["k"] == k)]
    base = sub[sub["architecture"] == "start model"].set_index("distance")["value"]
    trained = sub[sub["architecture"] != "start model"]
    delta = trained.set_index("setup")["value"] - trained["distance"].map(base).to_numpy()
    return delta.sort_values(ascending=False).rename(f"{measure}@{k} change")


def bootstrap_changes(
    per_query: Mapping[str, pd.DataFrame],
    baseline: str,
    metric: str = "mrr@10",
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Each setup's mean ``metric`` change over ``baseline`` on the same test queries, with a 95%
    paired bootstrap interval (:func:`sbert_tutor.book.bootstrap.paired_bootstrap`), one row a setup.

    Columns: ``<metric> change``, ``95% low``, ``95% high``, ``queries better``, ``queries
    worse``. Queries are matched by id, whatever the order of the frames.
    """
    if baseline not in per_query:
        raise KeyError(f"no per-query results for {baseline!r}; have {list(per_query)}")
    base = per_query[baseline][metric]
    rows = {}
    for name, frame in per_query.items():
        if name == baseline:
            continue
        boot = paired_bootstrap(frame[metric], base, n_resamples, seed)
        rows[name] = {
            f"{metric} change": boot.change,
            "95% low": boot.low,
            "95% high": boot.high,
            "queries better": boot.better,
            "queries worse": boot.worse,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def bootstrap_vs_start(run: DilemmaRun, metric: str = "mrr@10", **options: Any) -> pd.DataFrame:
    """:func:`bootstrap_changes` of every trained setup against the start model ranked with the
    same distance (cosine setups against ``start model / cosine``, and so on)."""
    parts = []
    for distance in ("cosine", "euclidean"):
        group = {k: v for k, v in run.per_query.items() if k.endswith(f"/ {distance}")}
        if len(group) > 1:
            parts.append(bootstrap_changes(group, f"start model / {distance}", metric, **options))
    return pd.concat(parts)


def bootstrap_sentence(boot: pd.DataFrame, metric: str = "mrr@10") -> str:
    """A :func:`bootstrap_vs_start` table in words: the setups whose 95% interval of the
    ``metric`` change lies above 0 (better than the start model), below 0 (worse), or holds 0
    (these test queries cannot tell them from the start model).

    Example:
        >>> boot = pd.DataFrame(
        ...     {"mrr@10 change": [0.05, -0.03], "95% low": [0.02, -0.06], "95% high": [0.08, 0.01]},
        ...     index=["A", "B"],
        ... )
        >>> bootstrap_sentence(boot)
        'better than the start model beyond chance: A (+0.050); within chance: B (-0.030)'
    """
    change = f"{metric} change"
    verdicts = {
        name: interval_verdict(boot.loc[name, "95% low"], boot.loc[name, "95% high"])
        for name in boot.index
    }
    words = {
        "higher": "better than the start model beyond chance",
        "lower": "worse than the start model beyond chance",
        "no difference": "within chance",
    }
    parts = []
    for verdict, said in words.items():
        names = [name for name in boot.index if verdicts[name] == verdict]
        if names:
            parts.append(
                f"{said}: " + ", ".join(f"{n} ({boot.loc[n, change]:+.3f})" for n in names)
            )
    return "; ".join(parts)


def target_shift(sets: TrainingSets) -> pd.DataFrame:
    """Mean teacher cosine :math:`c` of the training pairs and the mean cosine each Siamese loss
    pulls them to (:func:`target_cosines`), positives vs negatives."""
    y = 1 / (1 + np.exp(-sets.pairs["teacher_logit"].to_numpy()))
    targets = target_cosines(y).reset_index(drop=True)
    frame = pd.concat(
        [
            sets.pairs[["label", "teacher_cosine"]].reset_index(drop=True),
            targets.add_prefix("target: "),
        ],
        axis=1,
    )
    frame["kind"] = frame["label"].map({1: "positive", 0: "BM25 negative"})
    return frame.drop(columns="label").groupby("kind").mean()


def _margin_user(distance: str, margin: float) -> str:
    """Which runs train a (distance, margin): this chapter's (:data:`SETUPS`), the study's
    (:data:`STUDY_MARGIN_SETUPS`) or neither."""
    for label, setups in (("this chapter", SETUPS), ("the study", STUDY_MARGIN_SETUPS)):
        for loss, options in setups.values():
            if loss == "triplet" and (options["distance"], options["margin"]) == (distance, margin):
                return label
    return ""


#: The largest distance gap delta(q, n) - delta(q, p) of unit vectors, per distance: each distance
#: of two unit vectors lies in [0, 2], except the study's thresholded cosine distance, in [0, 1].
_MAX_GAP = {"cosine": 2.0, "euclidean": 2.0, "cosine_relu": 1.0}


def margin_activity(
    sets: TrainingSets,
    margins: Sequence[tuple[str, float]] = (
        ("cosine", 0.5),
        ("euclidean", 1.0),
        ("cosine_relu", 5.0),
        ("euclidean", 5.0),
        ("cosine_relu", 1.0),
    ),
) -> pd.DataFrame:
    r"""How each triplet margin acts on the training triplets, under the teacher's unit vectors.

    For a triplet with teacher cosines :math:`c_p` (query, positive) and :math:`c_n` (query,
    negative), the hinge argument is :math:`\delta(q, p) - \delta(q, n) + \varepsilon` with

    * ``"cosine"``, :math:`\delta_c = 1 - \cos \in [0, 2]`: :math:`c_n - c_p + \varepsilon`;
    * ``"cosine_relu"``, the study's :math:`\delta_c^{+} = 1 - \operatorname{ReLU}(\cos) \in
      [0, 1]`: :math:`\operatorname{ReLU}(c_n) - \operatorname{ReLU}(c_p) + \varepsilon`;
    * ``"euclidean"``, for unit vectors :math:`\lVert q - d \rVert = \sqrt{2 - 2 \cos(q, d)}
      \in [0, 2]`.

    So the argument is at least :math:`\varepsilon - 2` (:math:`\varepsilon - 1` for
    :math:`\delta_c^{+}`): a larger margin keeps every hinge active for ever, and the loss can
    never reach 0.

    Returns:
        One row per (distance, margin), with which runs use it (``this chapter``, ``the study``), the
        share of triplets whose hinge is active now (%), the mean loss now, and the lowest loss
        any unit vectors could reach, :math:`\max(\varepsilon - 2, 0)`
        (:math:`\max(\varepsilon - 1, 0)` for ``"cosine_relu"``).
    """
    pairs = sets.pairs
    keys = zip(pairs["query"], pairs["passage"], strict=True)
    cosine = dict(zip(keys, pairs["teacher_cosine"], strict=True))
    t = sets.triplets
    c_p = np.array([cosine[k] for k in zip(t["query"], t["positive"], strict=True)], dtype=float)
    c_n = np.array([cosine[k] for k in zip(t["query"], t["negative"], strict=True)], dtype=float)
    rows = []
    for distance, margin in margins:
        if distance == "cosine":
            gap = c_n - c_p
        elif distance == "cosine_relu":
            gap = np.maximum(c_n, 0) - np.maximum(c_p, 0)
        elif distance == "euclidean":
            gap = np.sqrt(np.clip(2 - 2 * c_p, 0, None)) - np.sqrt(np.clip(2 - 2 * c_n, 0, None))
        else:
            raise ValueError(
                f"distance must be 'cosine', 'cosine_relu' or 'euclidean', got {distance!r}"
            )
        hinge = gap + float(margin)
        rows.append(
            {
                "distance": distance,
                "margin ε": float(margin),
                "used by": _margin_user(distance, float(margin)),
                "active hinges %": 100.0 * float((hinge > 0).mean()),
                "mean loss now": float(np.maximum(hinge, 0).mean()),
                "lowest reachable loss": max(float(margin) - _MAX_GAP[distance], 0.0),
            }
        )
    return pd.DataFrame(rows).set_index(["distance", "margin ε"])


def held_out_triplets(
    test: MSMarcoData, n: int, candidates: Mapping[str, Sequence[str]] | None = None
) -> list[tuple[str, str, str]]:
    """``n`` (query, positive, hardest BM25 negative) text triplets from the test collection."""
    ranked = candidates if candidates is not None else load_bm25_candidates()
    out = []
    for qid, query in test.queries.items():
        rel = [p for p, g in test.qrels[qid].items() if g >= test.relevance_threshold]
        neg = [p for p in ranked.get(qid, ()) if p not in test.qrels[qid] and p in test.corpus]
        if rel and neg and rel[0] in test.corpus:
            out.append((query, test.corpus[rel[0]], test.corpus[neg[0]]))
        if len(out) == n:
            break
    return out


def triplet_geometry(
    encoders: Mapping[str, Encoder], triplets: Sequence[tuple[str, str, str]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Embed (query, positive, negative) triplets with each encoder: PCA points and a summary.

    Returns:
        ``points``: model, triplet, role, pc1, pc2 (PCA fitted per model on its 3n vectors, as
        they are, not normalised; Rygaard et al. fit theirs on 70k normalised embeddings).
        ``summary``: per model, mean :math:`\\cos(q, p)`, mean :math:`\\cos(q, n)`, their gap,
        the share of triplets with :math:`\\cos(q, p) > \\cos(q, n)` and the variance the two
        components explain (the picture hides the rest).
    """
    roles = ("query", "positive", "negative")
    texts = [t for triple in triplets for t in triple]
    points, rows = [], []
    for name, encoder in encoders.items():
        emb = np.asarray(encoder.encode(texts, batch_size=64), dtype=np.float64)
        coords, ratio = pca_2d(emb)
        unit = _unit(emb).reshape(len(triplets), 3, -1)
        cos_pos = (unit[:, 0] * unit[:, 1]).sum(-1)
        cos_neg = (unit[:, 0] * unit[:, 2]).sum(-1)
        for i, (x, y) in enumerate(coords):
            points.append(
                {"model": name, "triplet": i // 3, "role": roles[i % 3], "pc1": x, "pc2": y}
            )
        rows.append(
            {
                "model": name,
                "cos(q, positive)": cos_pos.mean(),
                "cos(q, negative)": cos_neg.mean(),
                "gap": (cos_pos - cos_neg).mean(),
                "positive closer": (cos_pos > cos_neg).mean(),
                "PCA variance shown": ratio.sum(),
            }
        )
    return pd.DataFrame(points), pd.DataFrame(rows).set_index("model")


def plot_teacher_scores(sets: TrainingSets, ax=None, bins: int = 30):
    """Histograms of the teacher cosine for positive and BM25-negative training pairs."""
    ax = new_axes(ax, figsize=(6, 3.5))
    for label, name in ((1, "positive"), (0, "BM25 negative")):
        values = sets.pairs.loc[sets.pairs["label"] == label, "teacher_cosine"]
        ax.hist(values, bins=bins, alpha=0.6, label=name, density=True)
    ax.set_xlabel("teacher cosine c")
    ax.set_ylabel("density")
    ax.set_title("Teacher scores of the training pairs")
    ax.legend()
    return ax


def plot_training_curves(run: DilemmaRun, axes=None, window: int = 5):
    """Loss curves, one panel per architecture (a squared error and a hinge have other scales)."""
    axes = new_panels(axes, 2, (11, 3.8))
    for ax, arch in zip(axes, ("Siamese", "Triplet"), strict=True):
        records = {k: v for k, v in run.records.items() if k.startswith(arch)}
        if records:
            plot_loss_curves(records, ax=ax, window=window)
        ax.set_title(f"{arch} objectives")
    return axes


def plot_results(table: pd.DataFrame, measures: Sequence[str] = MEASURES, axes=None):
    """Each measure against k, one line per setup (start model dashed)."""
    axes = new_panels(axes, len(measures), (3.6 * len(measures), 3.4))
    for ax, measure in zip(axes, measures, strict=True):
        sub = table[table["measure"] == measure]
        for setup, rows in sub.groupby("setup", sort=False):
            dashed = rows["architecture"].iloc[0] == "start model"
            ax.plot(rows["k"], rows["value"], marker="o", ls="--" if dashed else "-", label=setup)
        ax.set_title(measure)
        ax.set_xlabel("k")
        ax.set_xticks(sorted(sub["k"].unique()))
    axes[0].legend(fontsize=7)
    return axes


def plot_triplet_pca(points: pd.DataFrame, n_lines: int = 15, axes=None):
    """One panel per model: queries, positives and negatives in PCA space (as in Rygaard et al.'s
    Fig. 2B).

    Thin lines join each of the first ``n_lines`` queries to its positive (green) and its
    negative (red).
    """
    models = list(dict.fromkeys(points["model"]))
    if axes is None:
        cols = min(3, len(models))
        rows = math.ceil(len(models) / cols)
        axes = new_panels(None, cols, (4.2 * cols, 3.8 * rows), rows=rows)
    style = {
        "query": ("o", "tab:blue"),
        "positive": ("^", "tab:green"),
        "negative": ("x", "tab:red"),
    }
    for ax, model in zip(axes, models, strict=False):
        sub = points[points["model"] == model]
        wide = sub.pivot(index="triplet", columns="role", values=["pc1", "pc2"])
        for i in wide.index[:n_lines]:
            for role, colour in (("positive", "tab:green"), ("negative", "tab:red")):
                ax.plot(
                    [wide.loc[i, ("pc1", "query")], wide.loc[i, ("pc1", role)]],
                    [wide.loc[i, ("pc2", "query")], wide.loc[i, ("pc2", role)]],
                    color=colour,
                    lw=0.6,
                    alpha=0.5,
                )
        for role, (marker, colour) in style.items():
            r = sub[sub["role"] == role]
            ax.scatter(r["pc1"], r["pc2"], marker=marker, color=colour, s=16, label=role)
        ax.set_title(model, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in list(axes)[len(models) :]:
        ax.axis("off")
    axes[0].legend(fontsize=8, loc="best")
    return axes


def platt_scale(
    scores: Sequence[float], labels: Sequence[int], iterations: int = 100
) -> tuple[float, float]:
    r"""Fit :math:`P(\text{relevant} \mid s) = \sigma(a s + b)` by Platt's method (Platt, 1999).

    Minimises the cross-entropy against Platt's smoothed targets
    :math:`t_+ = \frac{N_+ + 1}{N_+ + 2}`, :math:`t_- = \frac{1}{N_- + 2}` (which keeps
    :math:`a` finite on separable data) by Newton's method on :math:`(a, b)`.

    Returns:
        ``(a, b)`` as floats.

    Raises:
        ValueError: lengths differ, non-finite scores, or a class is missing.

    Reference:
        Platt (1999), "Probabilistic Outputs for Support Vector Machines and Comparisons to
        Regularized Likelihood Methods".
    """
    c = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if c.shape != y.shape or c.ndim != 1:
        raise ValueError(f"scores {c.shape} and labels {y.shape} must be equal-length vectors")
    if not np.isfinite(c).all():
        raise ValueError("scores contain NaN or infinity")
    n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
    if n_pos + n_neg != len(y):
        raise ValueError("labels must be 0 or 1")
    if not n_pos or not n_neg:
        raise ValueError(f"need both classes to calibrate, got {n_pos} positive, {n_neg} negative")
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    x = np.stack([c, np.ones_like(c)], axis=1)
    w = np.array([0.0, math.log((n_pos + 1) / (n_neg + 1))])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - t)
        hess = (x * (p * (1 - p))[:, None]).T @ x + 1e-12 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-12:
            break
    return float(w[0]), float(w[1])
