"""Chapter 11a, transfer tasks: its sizes, the published rows (SBERT Table 5, SupMPN's Table 3),
the recorded runs' provenance, and the figure and table of the chapter's experiment, pooling and
normalisation vs transfer accuracy, which runs on the page."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book import published
from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.recorded import how_recorded
from sbert_tutor.book.sizes import ChapterSizes, register_sizes

__all__ = [
    "RECORDED_RUN",
    "RECORDED_SENTEVAL",
    "SIZES",
    "TASK_COLUMNS",
    "TransferSizes",
    "experiment_wide",
    "how_recorded_table",
    "plot_experiment",
    "published_transfer",
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


_QUICK = TransferSizes(
    experiment_tasks=("mr", "subj", "trec", "mrpc"),
    experiment_max_items=400,
    poolings=("mean", "cls"),
    kfold=5,
)
#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, TransferSizes] = register_sizes(
    "11a_transfer_tasks",
    {
        "quick": _QUICK,
        # the logistic regressions run on the CPU, which a T4 does not speed up: quick's sizes
        "t4": _QUICK,
        "paper": TransferSizes(
            experiment_tasks=("mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc"),
            experiment_max_items=None,
            poolings=("mean", "cls", "max"),
        ),
    },
)

TASK_COLUMNS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")

#: Results files of the recorded full runs (in ``sbert_tutor/book/results``): the library's
#: and SentEval's engine's.
RECORDED_RUN = "transfer_minilm_cpu"
RECORDED_SENTEVAL = "transfer_minilm_senteval_reference"


def published_transfer() -> pd.DataFrame:
    """SBERT Table 5 and SupMPN's own rows: a row a model, columns the tasks, ``avg``, ``kind``."""
    columns = (*TASK_COLUMNS, "avg")
    tables = (
        (published.SBERT_TABLE5, published.SBERT_TABLE5_SOURCE),
        (published.SUPMPN_TABLE3, published.SUPMPN_TABLE3_SOURCE),
    )
    rows = [
        {"model": model, **dict(zip(columns, values, strict=True)), "kind": f"published: {source}"}
        for table, source in tables
        for model, values in table.items()
    ]
    return pd.DataFrame(rows).set_index("model")


def how_recorded_table(runs: Mapping[str, Mapping[str, Any] | None]) -> pd.DataFrame:
    """:func:`how_recorded` of each named run, one column a run (absent runs are skipped); a record
    merged from runs of a few tasks each (``benchmarks/senteval_reference.py --merge``) gets one
    column per run, named after its tasks, with the seconds those tasks took."""
    columns = {}
    for name, record in runs.items():
        if record is None:
            continue
        if "runs" not in record:
            columns[name] = how_recorded(record)
        for run in record.get("runs", []):  # a merged record: each run a record of its own
            seconds = sum(record["results"][t]["seconds"] for t in run["tasks"])
            part = dict(model=record.get("model"), provenance=run["provenance"], seconds=seconds)
            columns[f"{name}: {'/'.join(run['tasks'])}"] = how_recorded(part)
    return pd.DataFrame(columns)


def experiment_wide(frame: pd.DataFrame) -> pd.DataFrame:
    """The experiment as one row a (pooling, normalised) variant, one column a task (and avg)."""
    wide = frame.pivot_table(
        index=["pooling", "normalised"], columns="task", values="accuracy", sort=False
    )
    return wide[[c for c in (*TASK_COLUMNS, "avg") if c in wide.columns]]


def plot_experiment(frame: pd.DataFrame, ax=None):
    """Accuracy per task, one bar group a task, one bar a (pooling, normalised) variant."""
    wide = experiment_wide(frame).T
    wide.columns = [f"{p}, {'normalised' if n else 'raw'}" for p, n in wide.columns]
    ax = new_axes(ax, figsize=(8, 3.8))
    wide.plot.bar(ax=ax, width=0.8, rot=0)
    ax.set_ylim(max(0.0, float(np.nanmin(wide.to_numpy())) - 10), 100)
    ax.set_ylabel("accuracy x100")
    ax.set_xlabel("")
    ax.legend(fontsize=8, ncol=4, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    return ax
