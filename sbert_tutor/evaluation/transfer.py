r"""Transfer evaluation: are sentence embeddings useful *features*? (book chapter 11a)

SentEval's protocol as the SBERT paper used it (Reimers & Gurevych 2019, Table 5; Conneau & Kiela
2018): the encoder is frozen, each sentence becomes :math:`u \in \mathbb{R}^d`, and a logistic
regression (a *linear probe*) is trained on the embeddings. With classes :math:`c = 1..K`,
weights :math:`W \in \mathbb{R}^{K \times d}` and bias :math:`b`, it predicts
:math:`\hat y = \arg\max_c (W u + b)_c` and is fitted by minimising, over :math:`n` training items,

.. math::

    \frac{1}{n} \sum_{i=1}^{n} -\log \operatorname{softmax}(W u_i + b)_{y_i}
    \;+\; \frac{\lambda}{2} \lVert W \rVert^2 ,

(for two classes scikit-learn keeps one vector :math:`w`, logit :math:`w^\top u + b`, with the
penalty :math:`\tfrac{\lambda}{2}\lVert w \rVert^2`). :math:`\lambda` is the L2 strength per item,
SentEval's weight-decay grid; in scikit-learn's terms :math:`C = 1 / (\lambda n)`. It is chosen
from :data:`L2_GRID` by validation, never on test data:

* **MR, CR, SUBJ, MPQA** (no standard split): 10-fold cross-validation; inside each training fold,
  a second (inner) 10-fold cross-validation picks :math:`\lambda`; the model refitted on the whole
  training fold is scored on the held-out fold. Accuracy is the mean over the 10 folds.
* **SST-2**: fit on train for each :math:`\lambda`, pick the best on dev, score it on test.
* **TREC**: 10-fold cross-validation on train picks :math:`\lambda`; refit on train, score on test.
* **MRPC**: as TREC, on the pair features :math:`(|u - v|, u \odot v)` (SentEval's order);
  accuracy and F1 of the paraphrase class on test.

Folds are stratified and seeded (SentEval's seed 1111). Items are first put in SentEval's order
(sorted by word count, then label), so the folds are the ones SentEval draws from the same items.

Two classifiers fit the logistic regression:

* ``classifier="senteval"`` (the default): SentEval's own training, :mod:`.linear_probe` -- a
  PyTorch linear layer trained with Adam in batches of 64 and stopped early on validation items
  (the inner fold; for the final fit of a fold, 5% of its training items; SST-2's dev split);
  :math:`\lambda` is Adam's weight decay and also shrinks the bias. Validation accuracies are
  compared as SentEval does, as percentages rounded to two decimals, ties to the weaker
  :math:`\lambda`. Its numbers are SentEval's numbers.
* ``classifier="lbfgs"``: scikit-learn's ``LogisticRegression`` (L-BFGS) solves the objective
  above to a gradient tolerance of ``TOL`` (the bias unpenalised, each :math:`\lambda` of a fold
  starting from the previous one's solution). It is the converged optimum that Adam with early
  stopping only approaches, and scores up to ~2 points higher than SentEval on some tasks (CR).

Every distinct sentence of a task is encoded once (the encoder sorts by length); an empty line
(CR, MPQA have a few) gets a zero feature vector.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sbert_tutor.data.senteval import (
    DISPLAY_NAMES,
    TransferSplit,
    TransferTask,
    load_transfer,
    parse_transfer_tasks,
)
from sbert_tutor.encoders.protocol import encode_texts
from sbert_tutor.results import Result
from sbert_tutor.validation import OptionError, check_choice

__all__ = [
    "FoldResult",
    "L2_GRID",
    "TaskResult",
    "TransferResult",
    "evaluate_transfer",
    "fit_logistic",
    "nested_cross_validation",
    "outer_fold",
    "pair_features",
    "senteval_choice",
]

#: L2 strengths per training item tried by validation: SentEval's weight-decay grid.
L2_GRID: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2)
#: SentEval's seed and number of folds.
_SEED = 1111
_KFOLD = 10
#: L-BFGS stops when the largest gradient entry of the mean objective is below this; ten times
#: tighter than scikit-learn's default, which let the weakest penalties stop early (and be chosen
#: for it) on these unit-length features.
TOL = 1e-5
_MAX_ITER = 5000
#: The classifiers that fit the probe (module docstring).
_CLASSIFIERS = ("senteval", "lbfgs")
#: Each task's protocol in words; ``{k}`` is the number of folds (``protocol``).
_PROTOCOLS = {
    "mr": "{k}-fold CV, inner {k}-fold CV for L2",
    "cr": "{k}-fold CV, inner {k}-fold CV for L2",
    "subj": "{k}-fold CV, inner {k}-fold CV for L2",
    "mpqa": "{k}-fold CV, inner {k}-fold CV for L2",
    "sst2": "train, L2 on dev, test",
    "trec": "{k}-fold CV on train for L2, test",
    "mrpc": "(|u-v|, u*v); {k}-fold CV on train for L2, test",
}


def protocol(task: str, k: int = _KFOLD) -> str:
    """A task's protocol in words with the folds it ran, e.g. ``"5-fold CV, inner 5-fold CV for
    L2"`` for ``protocol("mr", 5)``."""
    return _PROTOCOLS[task].format(k=k)


# ------------------------------------------------------------------------------ the protocol
def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    r"""SentEval's MRPC features :math:`[\,|u - v|,\; u \odot v\,]` (shape ``[n, 2d]``)."""
    u = np.asarray(u)
    v = np.asarray(v)
    if u.shape != v.shape or u.ndim != 2:
        raise ValueError(f"u and v must be [n, d] arrays of one shape, got {u.shape} and {v.shape}")
    return np.concatenate([np.abs(u - v), u * v], axis=1)


def senteval_order(
    sentences: Sequence[str], labels: np.ndarray, sentences2: Sequence[str] | None = None
) -> np.ndarray:
    """The permutation that sorts items as SentEval does before drawing folds.

    SentEval sorts by (word count, label) (MRPC: word counts of both sentences, then label), a
    stable sort, so equal keys keep file order.
    """
    if sentences2 is None:
        keys = [(len(s.split()), int(y)) for s, y in zip(sentences, labels, strict=True)]
    else:
        keys = [
            (len(a.split()), len(b.split()), int(y))
            for a, b, y in zip(sentences, sentences2, labels, strict=True)
        ]
    return np.asarray(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def stratified_folds(
    labels: np.ndarray, k: int = _KFOLD, seed: int = _SEED
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` (train, test) index pairs: stratified by label, shuffled with ``seed``.

    Every item is in exactly one test fold. Raises ``ValueError`` when a class has fewer than
    ``k`` items (it could not appear in every fold).
    """
    from sklearn.model_selection import StratifiedKFold

    labels = np.asarray(labels)
    counts = np.unique(labels, return_counts=True)[1]
    if k < 2 or counts.min() < k:
        raise ValueError(
            f"{k}-fold cross-validation needs k >= 2 and at least k items per class; the smallest "
            f"class has {counts.min()}"
        )
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(labels)), labels))


def _one_blas_thread():
    """Classifier fits run with one BLAS thread: the problems are small (at most 67k x 768), and
    threads that wait for each other on a busy machine made a fit ~10x slower, never faster."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _check_classifier(classifier: str) -> str:
    return check_choice(classifier, _CLASSIFIERS, "classifier", key=classifier)


def _describe_classifier(classifier: str) -> str:
    if classifier == "lbfgs":
        from sklearn import __version__ as sklearn_version

        return (
            f"scikit-learn {sklearn_version} LogisticRegression (lbfgs, tol {TOL}), "
            "C = 1 / (l2 * n_train)"
        )
    import torch

    from sbert_tutor.evaluation import linear_probe as lp

    return (
        f"SentEval's: torch {torch.__version__} linear layer, Adam lr {lp.LEARNING_RATE}, weight "
        f"decay = l2, batch {lp.BATCH_SIZE}, epoch size {lp.EPOCH_SIZE}, tenacity {lp.TENACITY}, "
        f"max epoch {lp.MAX_EPOCH}, final fits stop early on {lp.VALIDATION_SPLIT:.0%} of train"
    )


def _check_grid(l2_grid: Iterable[float]) -> tuple[float, ...]:
    grid = tuple(sorted({float(x) for x in l2_grid}, reverse=True))  # strongest first
    if not grid or min(grid) <= 0:
        raise ValueError(f"l2_grid must hold positive L2 strengths, got {tuple(l2_grid)}")
    return grid


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float, warm: Any = None, tol: float = TOL):
    r"""Logistic regression minimising mean cross-entropy + :math:`\tfrac{\lambda}{2}\lVert W\rVert^2`.

    scikit-learn's ``LogisticRegression`` (L-BFGS) with :math:`C = 1 / (\lambda n)`, run until the
    largest gradient entry is below ``tol``. ``warm``: a fitted model of the same data shape whose
    coefficients start the optimiser (the optimum is the same, it is reached in fewer steps).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    clf = (
        warm
        if warm is not None
        else LogisticRegression(tol=tol, max_iter=_MAX_ITER, warm_start=True)
    )
    clf.set_params(C=1.0 / (l2 * len(y)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    return clf


def _validation_scores(
    X: np.ndarray,
    y: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    l2_grid: Iterable[float] = L2_GRID,
) -> dict[float, float]:
    """Validation accuracy of a model fitted on ``(X, y)`` for each L2 strength.

    The strengths are fitted strongest first, each starting from the previous solution.
    """
    scores = {}
    clf = None
    with _one_blas_thread():
        for l2 in _check_grid(l2_grid):
            clf = fit_logistic(X, y, l2, warm=clf)
            scores[l2] = float(clf.score(X_val, y_val))
    return scores


def _fold_scores(X, y, train, test, grid) -> dict[float, float]:
    return _validation_scores(X[train], y[train], X[test], y[test], grid)


def _parallel(n_jobs: int | None, calls: list) -> list:
    """Run ``calls`` (``(function, args)`` pairs) in ``n_jobs`` processes (``None``/1: in order here)."""
    if not n_jobs or n_jobs == 1 or len(calls) < 2:
        return [function(*args) for function, args in calls]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs)(delayed(function)(*args) for function, args in calls)


def choose_l2(
    X: np.ndarray,
    y: np.ndarray,
    l2_grid: Iterable[float] = L2_GRID,
    k: int = _KFOLD,
    seed: int = _SEED,
    n_jobs: int | None = None,
) -> tuple[float, dict[float, float]]:
    """The L2 strength with the best mean ``k``-fold cross-validated accuracy on ``(X, y)``.

    Returns ``(best, {l2: mean accuracy})``. Ties go to the weakest strength (SentEval's rule: the
    first of its ascending grid). ``n_jobs`` processes share the folds; the result does not depend
    on it.
    """
    grid = _check_grid(l2_grid)
    folds = stratified_folds(y, k, seed)
    per_fold = _parallel(n_jobs, [(_fold_scores, (X, y, tr, te, grid)) for tr, te in folds])
    total = {l2: float(np.mean([scores[l2] for scores in per_fold])) for l2 in grid}
    best = max(sorted(grid), key=lambda l2: (round(total[l2], 6), -l2))
    return best, total


@dataclass(frozen=True)
class FoldResult:
    """One outer fold of a cross-validated task: chosen L2, its inner accuracy, test accuracy."""

    fold: int
    l2: float
    inner_accuracy: float
    accuracy: float
    n_train: int
    n_test: int


@dataclass(frozen=True)
class TaskResult:
    """Everything one task's evaluation produced (accuracies x100)."""

    task: str
    protocol: str
    accuracy: float
    dev_accuracy: float
    n_train: int
    n_dev: int
    n_test: int
    l2: float | None
    l2_scores: dict[float, float] = field(default_factory=dict)
    folds: tuple[FoldResult, ...] = ()
    f1: float | None = None
    n_sentences: int = 0
    n_empty: int = 0
    encode_seconds: float = 0.0
    classifier_seconds: float = 0.0
    source: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["l2_scores"] = {str(k): v for k, v in self.l2_scores.items()}
        return out


def outer_fold(
    X: np.ndarray,
    y: np.ndarray,
    i: int,
    train: np.ndarray,
    test: np.ndarray,
    grid: Sequence[float],
    k: int = _KFOLD,
    seed: int = _SEED,
) -> FoldResult:
    r"""Outer fold ``i`` of :func:`nested_cross_validation`: choose :math:`\lambda` from ``grid``
    by a ``k``-fold cross-validation inside the training rows ``train`` only
    (``choose_l2``), refit on all of them (:func:`fit_logistic`), and score once on the
    held-out rows ``test``, which never took part in the choice."""
    with _one_blas_thread():
        l2, scores = choose_l2(X[train], y[train], grid, k, seed)
        clf = fit_logistic(X[train], y[train], l2)
        accuracy = 100 * float(clf.score(X[test], y[test]))
    return FoldResult(
        fold=i,
        l2=l2,
        inner_accuracy=100 * scores[l2],
        accuracy=accuracy,
        n_train=len(train),
        n_test=len(test),
    )


def nested_cross_validation(
    X: np.ndarray,
    y: np.ndarray,
    l2_grid: Iterable[float] = L2_GRID,
    k: int = _KFOLD,
    seed: int = _SEED,
    n_jobs: int | None = None,
) -> tuple[float, float, tuple[FoldResult, ...]]:
    """MR/CR/SUBJ/MPQA: ``k``-fold CV with L2 chosen by an inner ``k``-fold CV on each train fold.

    Returns (mean test accuracy x100, mean inner accuracy x100, per-fold results). ``n_jobs``
    processes share the outer folds; the result does not depend on it.
    """
    grid = _check_grid(l2_grid)
    calls = [
        (outer_fold, (X, y, i, train, test, grid, k, seed))
        for i, (train, test) in enumerate(stratified_folds(y, k, seed))
    ]
    folds = tuple(_parallel(n_jobs, calls))
    return (
        float(np.mean([f.accuracy for f in folds])),
        float(np.mean([f.inner_accuracy for f in folds])),
        folds,
    )


# ------------------------------------------------------------------- SentEval's own classifier
def senteval_choice(scores: dict[float, float]) -> float:
    """SentEval's pick from ``{l2: validation accuracy}`` (fractions): the best accuracy as a
    percentage rounded to two decimals, ties to the weakest L2 (the first of its ascending grid)."""
    grid = sorted(scores)
    rounded = [round(100 * scores[l2], 2) for l2 in grid]
    return grid[int(np.argmax(rounded))]


def _cv_jobs(pool: np.ndarray, y: np.ndarray, grid, k: int, seed: int):
    """Jobs of a ``k``-fold CV over the rows ``pool``: one per (L2, fold), early stopping on the fold."""
    from sbert_tutor.evaluation.linear_probe import ProbeJob

    folds = stratified_folds(y[pool], k, seed)
    return [(l2, ProbeJob(pool[tr], l2, pool[te])) for l2 in grid for tr, te in folds]


def _cv_scores(keys, accuracies) -> dict[float, float]:
    out: dict[float, list[float]] = {}
    for l2, acc in zip(keys, accuracies, strict=True):
        out.setdefault(l2, []).append(float(acc))
    return {l2: float(np.mean(v)) for l2, v in out.items()}


def senteval_choose_l2(
    X: np.ndarray,
    y: np.ndarray,
    l2_grid: Iterable[float] = L2_GRID,
    k: int = _KFOLD,
    seed: int = _SEED,
    n_jobs: int | None = None,
) -> tuple[float, dict[float, float]]:
    """``choose_l2`` with SentEval's classifier: ``(best, {l2: mean CV accuracy})``.

    Each model stops early on its own held-out fold and is scored by its best accuracy there.
    ``n_jobs``: processes (``train_probes``).
    """
    from sbert_tutor.evaluation.linear_probe import train_probes

    pairs = _cv_jobs(np.arange(len(y)), y, _check_grid(l2_grid), k, seed)
    fit = train_probes(X, y, [job for _, job in pairs], int(y.max()) + 1, seed, n_jobs=n_jobs)
    scores = _cv_scores([l2 for l2, _ in pairs], fit.val_accuracy)
    return senteval_choice(scores), scores


def _senteval_final_fit(X: np.ndarray, y: np.ndarray, l2: float, seed: int = _SEED):
    """SentEval's final fit: all of ``(X, y)`` with 5% held out for early stopping.

    Returns a ``ProbeFit`` of one model.
    """
    from sbert_tutor.evaluation.linear_probe import ProbeJob, train_probes

    return train_probes(X, y, [ProbeJob(np.arange(len(y)), l2)], int(y.max()) + 1, seed)


def senteval_cross_validation(
    X: np.ndarray,
    y: np.ndarray,
    l2_grid: Iterable[float] = L2_GRID,
    k: int = _KFOLD,
    seed: int = _SEED,
    n_jobs: int | None = None,
) -> tuple[float, float, tuple[FoldResult, ...]]:
    """:func:`nested_cross_validation` with SentEval's classifier (its ``InnerKFoldClassifier``).

    All inner models of all outer folds train together, then the ``k`` final fits (each on its
    training fold, 5% held out for early stopping). Per-fold accuracies are rounded to two
    decimals before the mean, as SentEval reports them. ``n_jobs``: processes sharing the
    models (the result does not depend on it).
    """
    from sbert_tutor.evaluation.linear_probe import ProbeJob, train_probes

    grid = _check_grid(l2_grid)
    n_classes = int(y.max()) + 1
    outer = stratified_folds(y, k, seed)
    pairs = [_cv_jobs(train, y, grid, k, seed) for train, _ in outer]
    fit = train_probes(X, y, [job for p in pairs for _, job in p], n_classes, seed, n_jobs=n_jobs)
    chosen = []
    start = 0
    for p in pairs:
        scores = _cv_scores([l2 for l2, _ in p], fit.val_accuracy[start : start + len(p)])
        start += len(p)
        l2 = senteval_choice(scores)
        chosen.append((l2, round(100 * scores[l2], 2)))
    final = train_probes(
        X,
        y,
        [ProbeJob(train, l2) for (train, _), (l2, _) in zip(outer, chosen, strict=True)],
        n_classes,
        seed,
        n_jobs=n_jobs,
    )
    folds = []
    for i, ((train, test), (l2, inner)) in enumerate(zip(outer, chosen, strict=True)):
        accuracy = round(100 * float(np.mean(final.predict(X[test], i) == y[test])), 2)
        folds.append(FoldResult(i, l2, inner, accuracy, len(train), len(test)))
    return (
        float(np.mean([f.accuracy for f in folds])),
        float(np.mean([f.inner_accuracy for f in folds])),
        tuple(folds),
    )


# ------------------------------------------------------------------------------- the encoder
def encode_once(
    encoder: Any,
    sentences: Iterable[str],
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
) -> tuple[dict[str, int], np.ndarray, int]:
    """Encode each distinct non-empty sentence once.

    Returns (sentence -> row, embeddings, number of empty sentences seen). The empty sentence maps
    to a final all-zero row.
    """
    items = list(sentences)
    unique = list(dict.fromkeys(s for s in items if s))
    emb = encode_texts(encoder, unique, batch_size=batch_size, show_progress_bar=show_progress_bar)
    emb = np.asarray(emb, dtype=np.float32)
    index = {s: i for i, s in enumerate(unique)}
    index[""] = len(unique)
    emb = np.concatenate([emb, np.zeros((1, emb.shape[1]), dtype=emb.dtype)])
    return index, emb, sum(1 for s in items if not s)


def _features(split: TransferSplit, index: dict[str, int], emb: np.ndarray) -> np.ndarray:
    u = emb[[index[s] for s in split.sentences]]
    if split.sentences2 is None:
        return u
    return pair_features(u, emb[[index[s] for s in split.sentences2]])


def _ordered(split: TransferSplit) -> TransferSplit:
    order = senteval_order(split.sentences, split.labels, split.sentences2)
    return TransferSplit(
        [split.sentences[i] for i in order],
        split.labels[order],
        None if split.sentences2 is None else [split.sentences2[i] for i in order],
    )


def _classify(
    name: str,
    X: dict[str, np.ndarray],
    y: dict[str, np.ndarray],
    grid: tuple[float, ...],
    k: int,
    seed: int,
    n_jobs: int | None,
    classifier: str = "senteval",
) -> dict[str, Any]:
    """The classifier part of one task's protocol (module docstring), on features ``X``."""
    from sklearn.metrics import f1_score

    senteval = classifier == "senteval"
    if "all" in X:
        if senteval:
            accuracy, dev, folds = senteval_cross_validation(
                X["all"], y["all"], grid, k, seed, n_jobs
            )
        else:
            accuracy, dev, folds = nested_cross_validation(
                X["all"], y["all"], grid, k, seed, n_jobs
            )
        l2s = [f.l2 for f in folds]
        return dict(
            accuracy=accuracy,
            dev_accuracy=dev,
            n_train=len(y["all"]),
            n_dev=0,
            n_test=len(y["all"]),
            l2=max(set(l2s), key=l2s.count),
            folds=folds,
        )
    if "dev" in X and senteval:
        # SentEval trains one model per L2 stopping early on dev; the best one is scored on test
        from sbert_tutor.evaluation.linear_probe import ProbeJob, train_probes

        n_train, n_dev = len(y["train"]), len(y["dev"])
        rows = np.arange(n_train + n_dev)
        fit = train_probes(
            np.concatenate([X["train"], X["dev"]]),
            np.concatenate([y["train"], y["dev"]]),
            [ProbeJob(rows[:n_train], l2, rows[n_train:]) for l2 in grid],
            int(max(y["train"].max(), y["dev"].max())) + 1,
            seed,
            n_jobs=n_jobs,
        )
        scores = dict(zip(grid, map(float, fit.val_accuracy), strict=True))
        l2 = senteval_choice(scores)
        predicted = fit.predict(X["test"], grid.index(l2))
    elif "dev" in X:
        scores = _validation_scores(X["train"], y["train"], X["dev"], y["dev"], grid)
        l2 = max(sorted(grid), key=lambda v: (round(scores[v], 6), -v))
    elif senteval:
        l2, scores = senteval_choose_l2(X["train"], y["train"], grid, k, seed, n_jobs)
        predicted = _senteval_final_fit(X["train"], y["train"], l2, seed).predict(X["test"], 0)
    else:
        l2, scores = choose_l2(X["train"], y["train"], grid, k, seed, n_jobs)
    if not senteval:
        with _one_blas_thread():
            clf = fit_logistic(X["train"], y["train"], l2)
            predicted = clf.predict(X["test"])
    result = dict(
        accuracy=100 * float(np.mean(predicted == y["test"])),
        dev_accuracy=100 * scores[l2],
        n_train=len(y["train"]),
        n_dev=len(y.get("dev", ())),
        n_test=len(y["test"]),
        l2=l2,
        l2_scores={v: 100 * sc for v, sc in scores.items()},
    )
    if name == "mrpc":
        result["f1"] = 100 * float(f1_score(y["test"], predicted))
    return result


def _check_folds(task: str, y: dict[str, np.ndarray], k: int) -> None:
    """Refuse, naming the task, a ``k``-fold cross-validation its items cannot fill: every class
    of the cross-validated split needs ``k`` items (a small ``max_items`` can leave fewer)."""
    split = "all" if "all" in y else "train" if "dev" not in y else None
    if split is None:  # SST-2: a dev split, no cross-validation
        return
    classes, counts = np.unique(y[split], return_counts=True)
    if k < 2 or counts.min() < k:
        smallest = classes[int(counts.argmin())]
        raise OptionError(
            f"task {task!r}: {k}-fold cross-validation needs k >= 2 and at least k items of "
            f"every class in its {split!r} split, but class {smallest} has {counts.min()} "
            f"({len(y[split])} items): keep more items, e.g. {{max_items}}, or use fewer folds, "
            "e.g. {k}",
            {
                "max_items": int(np.ceil(k * len(y[split]) / max(1, counts.min()))),
                "k": max(2, min(k, int(counts.min()))),
            },
        )


def evaluate_task(
    encoder: Any,
    data: TransferTask,
    l2_grid: Iterable[float] = L2_GRID,
    k: int = _KFOLD,
    seed: int = _SEED,
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
    n_jobs: int | None = None,
    classifier: str = "senteval",
) -> TaskResult:
    """Run one task's protocol (module docstring) with ``encoder``; return its :class:`TaskResult`."""
    grid = _check_grid(l2_grid)
    _check_classifier(classifier)
    splits = {name: _ordered(split) for name, split in data.splits.items()}
    _check_folds(data.name, {name: np.asarray(split.labels) for name, split in splits.items()}, k)
    texts = [s for split in splits.values() for s in split.sentences + (split.sentences2 or [])]
    start = time.perf_counter()
    index, emb, n_empty = encode_once(encoder, texts, batch_size, show_progress_bar)
    encoded = time.perf_counter()
    X = {name: _features(split, index, emb) for name, split in splits.items()}
    y = {name: split.labels for name, split in splits.items()}
    common = {
        "task": data.name,
        "protocol": protocol(data.name, k),
        "n_sentences": len(index) - 1,
        "n_empty": n_empty,
        "source": data.source,
        "note": data.note,
    }
    result = _classify(data.name, X, y, grid, k, seed, n_jobs, classifier)
    done = time.perf_counter()
    return TaskResult(
        **common,
        **result,
        encode_seconds=encoded - start,
        classifier_seconds=done - encoded,
    )


# ----------------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class TransferResult(Result):
    """The seven-task table with the details and provenance that made it.

    Attributes:
        table: one row a task: ``task``, ``accuracy``, ``f1`` (MRPC), ``dev_accuracy`` (the
            validation accuracy L2 was chosen on), ``n_train``, ``n_dev``, ``n_test``,
            ``protocol``; an ``avg`` row (mean accuracy) when several tasks.
        tasks: per-task :class:`TaskResult` (chosen L2 per fold, timings, sources).
        note: what the numbers are (accuracy x100, which probe).
        provenance: how the numbers were made (:func:`sbert_tutor.provenance.provenance`).
    """

    tasks: dict[str, TaskResult] = field(default_factory=dict)

    primary_metric: ClassVar[str | None] = "accuracy"

    @property
    def main_score(self) -> float:
        """The test accuracy (x100) of the one task, or the ``avg`` row's mean accuracy."""
        return float(self.table.iloc[-1]["accuracy"])

    def timing(self) -> pd.DataFrame:
        """Seconds per task: encoding and classifier, with the number of sentences encoded."""
        return pd.DataFrame(
            [
                {
                    "task": DISPLAY_NAMES[t.task],
                    "sentences encoded": t.n_sentences,
                    "encode_s": t.encode_seconds,
                    "classifier_s": t.classifier_seconds,
                    "total_s": t.encode_seconds + t.classifier_seconds,
                }
                for t in self.tasks.values()
            ]
        )

    def folds(self) -> pd.DataFrame:
        """Per-fold chosen L2 and accuracies of the cross-validated tasks."""
        return pd.DataFrame(
            [
                {"task": DISPLAY_NAMES[t.task], **asdict(f)}
                for t in self.tasks.values()
                for f in t.folds
            ]
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the table's rows, the per-task details and the provenance."""
        rows = self.table.astype(object).where(self.table.notna(), None).to_dict("records")
        return {
            "table": rows,
            "tasks": {name: t.to_dict() for name, t in self.tasks.items()},
            "provenance": self.provenance,
        }


def transfer_results_table(tasks: dict[str, TaskResult]) -> pd.DataFrame:
    """The tidy table of :class:`TransferResult` from per-task results."""
    table = pd.DataFrame(
        [
            {
                "task": DISPLAY_NAMES[t.task],
                "accuracy": t.accuracy,
                "f1": t.f1 if t.f1 is not None else np.nan,
                "dev_accuracy": t.dev_accuracy,
                "n_train": t.n_train,
                "n_dev": t.n_dev,
                "n_test": t.n_test,
                "protocol": t.protocol,
            }
            for t in tasks.values()
        ]
    )
    if len(table) > 1:
        table.loc[len(table)] = {
            "task": "avg",
            "accuracy": table["accuracy"].mean(),
            "f1": np.nan,
            "dev_accuracy": table["dev_accuracy"].mean(),
            "n_train": int(table["n_train"].sum()),
            "n_dev": int(table["n_dev"].sum()),
            "n_test": int(table["n_test"].sum()),
            "protocol": "mean accuracy",
        }
    return table


def evaluate_transfer(
    encoder: Any,
    tasks: str | Sequence[str] = "all",
    l2_grid: Iterable[float] | None = L2_GRID,
    k: int = _KFOLD,
    seed: int = _SEED,
    batch_size: int = 64,
    max_items: int | None = None,
    show_progress_bar: bool | None = None,
    n_jobs: int | None = None,
    classifier: str = "senteval",
) -> TransferResult:
    """Accuracy of a logistic regression on frozen embeddings, SentEval's seven tasks.

    Args:
        encoder: anything with ``encode(list[str], batch_size=..., show_progress_bar=...) -> array``.
        tasks: ``"all"`` (MR, CR, SUBJ, MPQA, SST2, TREC, MRPC), a comma-separated string or a list.
        l2_grid: L2 strengths per item to choose from (``None``: :data:`L2_GRID`, SentEval's).
        k: folds of every cross-validation (SentEval: 10); seed: fold shuffling (SentEval: 1111).
        batch_size: sentences per forward pass.
        max_items: keep at most this many items of every split (a stratified, seeded subsample,
            ``sbert_tutor.data.senteval.subsample``) for quick runs; ``None`` = all.
        n_jobs: processes for the classifiers (``None``: one, here): the cross-validation
            folds with ``"lbfgs"``, the models of each grid with ``"senteval"``. The numbers do
            not depend on it; on a machine with several cores it divides the classifier time.
        classifier: ``"senteval"`` (default; SentEval's Adam-trained linear layer with early
            stopping, its numbers) or ``"lbfgs"`` (scikit-learn, the converged optimum); see the
            module docstring.

    Returns:
        :class:`TransferResult` (``.table``, ``.tasks``, ``.provenance``); accuracies x100.
    """
    from tqdm.auto import tqdm

    from sbert_tutor.data.senteval import subsample
    from sbert_tutor.provenance import provenance

    names = parse_transfer_tasks(tasks)
    _check_classifier(classifier)
    grid = _check_grid(L2_GRID if l2_grid is None else l2_grid)
    results: dict[str, TaskResult] = {}
    files: list[str] = []
    for name in tqdm(
        names, desc="transfer tasks", disable=show_progress_bar is False or len(names) < 2
    ):
        data = load_transfer(name)
        if max_items is not None:
            data = subsample(data, max_items, seed)
        results[name] = evaluate_task(
            encoder, data, grid, k, seed, batch_size, show_progress_bar, n_jobs, classifier
        )
        files.extend(str(f) for f in data.files)
    describe = getattr(encoder, "describe", None)
    record = provenance(
        profile="paper" if max_items is None else "quick",
        data_files=files,
        model=describe() if callable(describe) else None,
        extra={
            "data_sources": {n: r.source for n, r in results.items()},
            "tasks": names,
            "protocol": {
                "l2_grid": sorted(grid),
                "kfold": k,
                "seed": seed,
                "max_items": max_items,
                "classifier": _describe_classifier(classifier),
                "n_jobs": n_jobs,
            },
        },
    )
    note = (
        "accuracy x100 of a logistic regression on frozen embeddings, SentEval's protocol; probe: "
        + ("SentEval's (Adam, early stopping)" if classifier == "senteval" else "L-BFGS, converged")
    )
    return TransferResult(
        table=transfer_results_table(results), tasks=results, note=note, provenance=record
    )
