"""Chapter 11a, transfer tasks: the published rows beside our recorded runs, and the chapter's own
experiment (pooling and normalisation vs transfer accuracy).

The published numbers themselves (SBERT Table 5, SupMPN's Table 3) live with every other published
number in :mod:`sbert_tutor.book.published`; the chapter's sizes in :mod:`sbert_tutor.book.sizes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book.published import (
    SBERT_TABLE5,
    SBERT_TABLE5_SOURCE,
    SUPMPN_TABLE3,
    SUPMPN_TABLE3_SOURCE,
)
from sbert_tutor.book.recorded import how_recorded
from sbert_tutor.book.sizes import ChapterSizes, register_sizes

__all__ = [
    "RECORDED_RUN",
    "RECORDED_SENTEVAL",
    "SIZES",
    "SharedEncoding",
    "TASK_COLUMNS",
    "TASK_DESCRIPTIONS",
    "TransferSizes",
    "beside_published",
    "experiment_wide",
    "how_recorded_table",
    "ours_minus_senteval",
    "plot_experiment",
    "pooling_normalisation_experiment",
    "published_transfer",
    "task_overview",
]


@dataclass(frozen=True, kw_only=True)
class TransferSizes(ChapterSizes):
    """Chapter 11a (transfer tasks): what the chapter computes when it runs.

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


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, TransferSizes] = register_sizes(
    "11a_transfer_tasks",
    {
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
)

TASK_COLUMNS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")


#: Results files of the recorded full runs (in ``sbert_tutor/book/results``).
RECORDED_RUN = "transfer_minilm_cpu"


RECORDED_SENTEVAL = "transfer_minilm_senteval_reference"


def published_transfer() -> pd.DataFrame:
    """SBERT Table 5 and SupMPN's own rows: one row a model, columns the tasks, ``avg``, ``kind``."""

    rows = []
    for table, source in (
        (SBERT_TABLE5, SBERT_TABLE5_SOURCE),
        (SUPMPN_TABLE3, SUPMPN_TABLE3_SOURCE),
    ):
        for model, values in table.items():
            rows.append(
                {
                    "model": model,
                    **dict(zip((*TASK_COLUMNS, "avg"), values, strict=True)),
                    "kind": f"published: {source}",
                }
            )
    return pd.DataFrame(rows).set_index("model")


#: What each task's items are and what the label says.
TASK_DESCRIPTIONS = {
    "mr": ("movie review snippets", "sentiment"),
    "cr": ("product review sentences", "sentiment"),
    "subj": ("movie review and plot sentences", "subjective or objective"),
    "mpqa": ("short news phrases", "opinion polarity"),
    "sst2": ("movie review phrases (train), sentences (dev, test)", "sentiment"),
    "trec": ("questions", "answer type: 6 classes"),
    "mrpc": ("news sentence pairs", "paraphrase or not"),
}


def task_overview(tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """One row a task: items, splits, classes, the majority-class accuracy and words per item."""
    from sbert_tutor.data.senteval import TRANSFER_TASKS, load_transfer

    rows = []
    for name in tasks or TRANSFER_TASKS:
        task = load_transfer(name)
        scored = task.splits.get("test", task.splits.get("all"))
        train = task.splits.get("train", task.splits.get("all"))
        majority = np.bincount(train.labels).argmax()
        words = [len(s.split()) for split in task.splits.values() for s in split.sentences]
        what, label = TASK_DESCRIPTIONS[name]
        rows.append(
            {
                "task": task.display_name,
                "items": what,
                "label": label,
                "sizes": " / ".join(f"{n:,}" for n in task.sizes().values()),
                "classes": len(task.label_names),
                "majority class accuracy": 100 * float(np.mean(scored.labels == majority)),
                "words per item": float(np.mean(words)),
            }
        )
    return pd.DataFrame(rows).set_index("task")


def _task_accuracies(record: Mapping[str, Any]) -> dict[str, float]:
    """A recorded run's accuracy per task it finished, in :data:`TASK_COLUMNS` order."""
    if "table" in record:  # sbert-tutor eval-transfer --json
        by_task = {row["task"]: row["accuracy"] for row in record["table"]}
    else:  # benchmarks/senteval_reference.py --json
        by_task = {task: out["acc"] for task, out in record["results"].items()}
    return {task: float(by_task[task]) for task in TASK_COLUMNS if task in by_task}


def _accuracy_row(record: Mapping[str, Any]) -> dict[str, float]:
    """The run's accuracies and ``avg``, the seven-task mean the published rows print; ``NaN``
    when the run did not finish all seven (a mean of fewer tasks is another number)."""
    row = _task_accuracies(record)
    row["avg"] = float(np.mean(list(row.values()))) if len(row) == len(TASK_COLUMNS) else np.nan
    return row


def _run_label(record: Mapping[str, Any], engine: str) -> str:
    """``all-MiniLM-L6-v2 (recorded run: SentEval engine, CR/SST2/TREC/MRPC only)``: the model,
    which engine made the run, and the tasks it finished when it did not finish all seven."""
    model = record.get("model", "model").rsplit("/", 1)[-1]
    tasks = list(_task_accuracies(record))
    only = "" if len(tasks) == len(TASK_COLUMNS) else f", {'/'.join(tasks)} only"
    return f"{model} (recorded run: {engine}{only})"


def beside_published(
    ours: Mapping[str, Any] | None,
    senteval: Mapping[str, Any] | None = None,
    published: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Our recorded run, SentEval's engine on the same embeddings, and the published rows.

    Columns: the seven tasks and ``avg`` (accuracy x100; MRPC accuracy, not F1), ``kind``. A run
    that did not finish every task has no value for the others, no ``avg`` (the column holds
    seven-task means), and its row label names the tasks it finished.
    """
    frames = []
    if ours is not None:
        frames.append(
            pd.DataFrame(
                [{**_accuracy_row(ours), "kind": "this project: sbert-tutor eval-transfer"}],
                index=[_run_label(ours, "sbert-tutor")],
            )
        )
    if senteval is not None:
        frames.append(
            pd.DataFrame(
                [{**_accuracy_row(senteval), "kind": "SentEval's engine, same embeddings"}],
                index=[_run_label(senteval, "SentEval engine")],
            )
        )
    frames.append(published_transfer() if published is None else published)
    table = pd.concat(frames)
    table.index.name = "model"
    return table


def how_recorded_table(runs: Mapping[str, Mapping[str, Any] | None]) -> pd.DataFrame:
    """:func:`how_recorded` of each named run, one column a run (absent runs are skipped).

    A record merged from several runs of a few tasks each (``benchmarks/senteval_reference.py
    --merge``) gets one column per run, named after the tasks it made, with the seconds those
    tasks took."""
    columns = {}
    for name, record in runs.items():
        if record is None:
            continue
        for label, part in _parts(name, record):
            columns[label] = how_recorded(part)
    return pd.DataFrame(columns)


def _parts(name: str, record: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``record`` itself, or each run of a merged record as a record of its own."""
    if "runs" not in record:
        return [(name, record)]
    return [
        (
            f"{name}: {'/'.join(run['tasks'])}",
            {
                "model": record.get("model"),
                "provenance": run["provenance"],
                "seconds": sum(record["results"][t]["seconds"] for t in run["tasks"]),
            },
        )
        for run in record["runs"]
    ]


def _task_items(record: Mapping[str, Any]) -> dict[str, int]:
    """The items a recorded run evaluated per task (its test items; a cross-validated task's test
    folds cover every item), where the record says."""
    if "table" in record:
        return {row["task"]: int(row["n_test"]) for row in record["table"] if "n_test" in row}
    return {task: int(out["ntest"]) for task, out in record["results"].items() if "ntest" in out}


def ours_minus_senteval(
    ours: Mapping[str, Any] | None, senteval: Mapping[str, Any] | None
) -> pd.DataFrame | None:
    """Per task both runs finished: our accuracy, SentEval's engine's, the difference (points)
    and the items each run evaluated, then the accuracies' means over those same tasks (``avg
    of the N common tasks``); ``None`` when a run is missing.

    The item counts differ where SentEval's own loader reads a file differently from
    :mod:`sbert_tutor.data.senteval` (MR and SUBJ: it cuts lines at the byte 0x85); there the two
    runs classify different items and agree only roughly."""
    if ours is None or senteval is None:
        return None
    a, b = _task_accuracies(ours), _task_accuracies(senteval)
    tasks = [t for t in TASK_COLUMNS if t in a and t in b]
    mine = [a[t] for t in tasks]
    theirs = [b[t] for t in tasks]
    mine.append(float(np.mean(mine)))
    theirs.append(float(np.mean(theirs)))
    items_a, items_b = _task_items(ours), _task_items(senteval)
    return pd.DataFrame(
        {
            "sbert-tutor": mine,
            "SentEval engine": theirs,
            "difference": [x - y for x, y in zip(mine, theirs, strict=True)],
            "items (sbert-tutor)": pd.array([items_a.get(t) for t in tasks] + [None], "Int64"),
            "items (SentEval engine)": pd.array([items_b.get(t) for t in tasks] + [None], "Int64"),
        },
        index=pd.Index([*tasks, f"avg of the {len(tasks)} common tasks"], name="task"),
    )


class SharedEncoding:
    """Encodes each sentence once without normalisation; the normalised variant divides the same
    vectors by their length (the experiment's two views of one pooling)."""

    def __init__(self, encoder: Any):
        self.encoder = encoder  # a pooling of the model, built with normalize=False
        self.cache: dict[str, np.ndarray] = {}

    def encode(self, sentences: Sequence[str], normalize: bool, batch_size: int) -> np.ndarray:
        todo = [s for s in dict.fromkeys(sentences) if s not in self.cache]
        if todo:
            new = self.encoder.encode(todo, batch_size=batch_size)
            self.cache.update(zip(todo, new, strict=True))
        out = np.stack([self.cache[s] for s in sentences])
        if normalize:
            out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


class _View:
    def __init__(self, shared: SharedEncoding, normalize: bool):
        self.shared = shared
        self.normalize = normalize

    def encode(self, sentences, batch_size=64, show_progress_bar=None):
        return self.shared.encode(sentences, self.normalize, batch_size)

    def describe(self) -> dict[str, Any]:
        return {**self.shared.encoder.describe(), "normalize": self.normalize}


def pooling_normalisation_experiment(
    encoder: Any,
    sizes: TransferSizes,
    batch_size: int = 64,
    seed: int = 1111,
) -> pd.DataFrame:
    """Transfer accuracy of one model's embeddings under each pooling, with and without L2
    normalisation (the protocol of :func:`sbert_tutor.evaluation.transfer.evaluate_transfer`,
    with the probe ``sizes.classifier``).

    Each pooling's embeddings are computed once and normalised afterwards for the second variant
    (:class:`SharedEncoding`). Returns a tidy table: ``pooling``, ``normalised``, ``task``,
    ``accuracy``, ``mean_norm`` (the average length of the unnormalised embeddings) and an ``avg``
    row per variant. ``frame.attrs["provenance"]`` is the first evaluation's record (git,
    hardware, data files and their sources, protocol), with the model as given and the variants.
    """
    from sbert_tutor.evaluation.transfer import evaluate_transfer

    rows = []
    record: dict[str, Any] = {}
    for pooling in sizes.poolings:
        shared = SharedEncoding(encoder.with_pooling(pooling, normalize=False))
        for normalise in (True, False):
            result = evaluate_transfer(
                _View(shared, normalise),
                tasks=sizes.experiment_tasks,
                max_items=sizes.experiment_max_items,
                k=sizes.kfold,
                batch_size=batch_size,
                seed=seed,
                show_progress_bar=False,
                classifier=sizes.classifier,
            )
            record = record or dict(result.provenance)
            for row in result.table.itertuples():
                rows.append(
                    {
                        "pooling": pooling,
                        "normalised": normalise,
                        "task": row.task,
                        "accuracy": row.accuracy,
                    }
                )
        norms = np.linalg.norm(np.stack(list(shared.cache.values())), axis=1)
        for row in rows:
            if row["pooling"] == pooling:
                row["mean_norm"] = float(norms.mean())
    frame = pd.DataFrame(rows)
    describe = getattr(encoder, "describe", None)
    frame.attrs["provenance"] = {
        **record,
        "model": describe() if callable(describe) else None,
        "variants": [
            f"{p}, {'normalised' if n else 'raw'}" for p in sizes.poolings for n in (1, 0)
        ],
    }
    return frame


def experiment_wide(frame: pd.DataFrame) -> pd.DataFrame:
    """The experiment as one row a (pooling, normalised) variant, one column a task (and avg)."""
    wide = frame.pivot_table(
        index=["pooling", "normalised"], columns="task", values="accuracy", sort=False
    )
    columns = [c for c in (*TASK_COLUMNS, "avg") if c in wide.columns]
    return wide[columns]


def plot_experiment(frame: pd.DataFrame, ax=None):
    """Accuracy per task, one bar group a task, one bar a (pooling, normalised) variant."""
    import matplotlib.pyplot as plt

    wide = experiment_wide(frame).T
    wide.columns = [f"{p}, {'normalised' if n else 'raw'}" for p, n in wide.columns]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.8))
    wide.plot.bar(ax=ax, width=0.8, rot=0)
    low = float(np.nanmin(wide.to_numpy()))
    ax.set_ylim(max(0.0, low - 10), 100)
    ax.set_ylabel("accuracy x100")
    ax.set_xlabel("")
    ax.legend(fontsize=8, ncol=4, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    return ax
