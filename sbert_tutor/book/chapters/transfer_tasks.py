"""Chapter 11a, transfer tasks: its sizes, the published rows (:func:`published_transfer`), the
provenance of the recorded runs (:func:`how_recorded_table`) and the figure and table of the
chapter's experiment, pooling and normalisation vs transfer accuracy (:func:`plot_experiment`,
:func:`experiment_wide`). The task overview, the recorded runs beside the published rows and
beside SentEval's engine, and the experiment itself are on the chapter's page.

The published numbers themselves (SBERT Table 5, SupMPN's Table 3) live with every other published
number in :mod:`sbert_tutor.book.published`.
"""

from __future__ import annotations

from collections.abc import Mapping
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
