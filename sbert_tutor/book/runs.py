r"""Short training runs and their before/after tables (chapters 6 to 11).

* :func:`train_variants` trains one fresh encoder per variant (an objective with its options) and
  scores each on the same STS pairs; :func:`feature_ablation` is SBERT's concatenation ablation
  (Table 6) built on it (chapters 6 and 8);
* :func:`before_after` evaluates one run before and after training (chapter 7);
* :func:`runs_table` puts runs beside the start model on STSb test (chapters 9-11);
* :func:`variant_rows`, :func:`before_after_rows` and :func:`measured_rows` turn each into rows
  for :func:`~sbert_tutor.book.reporting.measured_vs_published`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sbert_tutor.book.published import STSB_METRIC
from sbert_tutor.data import STSData
from sbert_tutor.embedding import Encoder
from sbert_tutor.encoder import SentenceEncoder
from sbert_tutor.evaluation import STSResult, evaluate_sts
from sbert_tutor.losses import check_features, feature_label
from sbert_tutor.results import Result
from sbert_tutor.training import STSEvaluator, TrainingConfig, TrainingRecord
from sbert_tutor.training.recipe import TrainRun, fit


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class VariantRuns(Result):
    """:func:`train_variants`: one row a run (and the untrained start model).

    Attributes:
        records: variant -> loss curve; logs: variant -> training log (with provenance).
        eval_data: which STS pairs the runs are scored on, in words.
    """

    records: dict[str, TrainingRecord]
    logs: dict[str, dict[str, Any]]
    eval_data: str


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class BeforeAfter(Result):
    """:func:`before_after`: one row a task (``before``, ``after``, ``change``); the evaluation's
    ``provenance``, the ``split`` and the training ``run`` (its provenance in ``run.log``)."""

    split: str
    run: TrainRun


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class RunsTable(Result):
    """:func:`runs_table`: one row the start model and each run; ``after`` keeps each run's
    STS evaluation."""

    after: dict[str, STSResult]


def sts_spearman(encoder: Encoder, data: STSData) -> float:
    """Spearman x100 of :math:`\\cos(u, v)` against the gold scores of ``data`` (an ``STSData``)."""
    evaluator = STSEvaluator(data=data)
    return evaluator(encoder)[evaluator.primary_metric]


def train_variants(
    model: str,
    variants: Mapping[str, tuple[str, Mapping[str, Any]]],
    train: Any,
    config: TrainingConfig,
    eval_data: STSData,
    *,
    max_examples: int | None = None,
    baseline: bool = True,
) -> VariantRuns:
    """Train a fresh ``model`` once per variant and score each on the same STS pairs.

    Args:
        model: a hub name or folder, loaded anew for every run (``fit`` trains in place).
        variants: ``{name: (loss, objective_options)}``, e.g.
            ``{"euclidean": ("triplet", {"distance": "euclidean", "margin": 1.0})}``.
        train: a named training set or data (as :func:`~sbert_tutor.training.recipe.fit`).
        config: the :class:`~sbert_tutor.training.TrainingConfig` shared by every run.
        eval_data: an ``STSData`` (e.g. :func:`~sbert_tutor.book.fixed_embeddings.sts_sample`);
            Spearman x100 of cosine.
        max_examples: train on a seeded subset of this size.
        baseline: add a first row for the untrained model.

    Returns:
        A :class:`VariantRuns`: one row per run: ``variant``, ``loss``, ``options``,
        ``spearman``, ``change`` (vs the untrained model, when ``baseline``), ``final_loss``
        (mean of the last 10 steps) and ``seconds``; the runs' ``records``, ``logs`` and the
        ``eval_data`` description. The encoders are not kept.
    """
    rows: list[dict[str, Any]] = []
    records: dict[str, TrainingRecord] = {}
    logs: dict[str, dict[str, Any]] = {}
    if baseline:
        encoder = SentenceEncoder.from_pretrained(model)
        rows.append(
            {
                "variant": "untrained (start model)",
                "loss": None,
                "options": None,
                "spearman": sts_spearman(encoder, eval_data),
                "final_loss": float("nan"),
                "seconds": 0.0,
            }
        )
        del encoder
    for name, (loss, options) in variants.items():
        encoder = SentenceEncoder.from_pretrained(model)
        run = fit(
            encoder,
            loss,
            train,
            config,
            objective_options=dict(options),
            max_examples=max_examples,
        )
        rows.append(
            {
                "variant": name,
                "loss": loss,
                "options": dict(options),
                "spearman": sts_spearman(run.encoder, eval_data),
                "final_loss": run.record.final_loss(),
                "seconds": run.seconds,
            }
        )
        records[name] = run.record
        logs[name] = run.log
        del encoder, run
    table = pd.DataFrame(rows)
    if baseline:
        table.insert(4, "change", table["spearman"] - table["spearman"].iloc[0])
    return VariantRuns(
        table=table.set_index("variant"),
        records=records,
        logs=logs,
        eval_data=f"{eval_data.name}/{eval_data.split}: "
        + eval_data.meta.get("sample", f"all {len(eval_data)} pairs"),
    )


def feature_ablation(
    model: str, feature_sets: Sequence[Sequence[str]], *args: Any, **kwargs: Any
) -> VariantRuns:
    """SBERT Table 6's concatenation ablation: the softmax objective once per feature set.

    Each feature set trains a fresh ``model`` (and a fresh classifier head of ``len(features) *
    d`` inputs) with the same data, seed and settings; rows are named like ``"(u, v, |u-v|)"``.
    The other arguments (``train, config, eval_data``, ``max_examples=``, ``baseline=``) and the
    result are those of :func:`train_variants`.
    """
    return train_variants(model, feature_variants(feature_sets), *args, **kwargs)


def feature_variants(
    feature_sets: Sequence[Sequence[str]],
) -> dict[str, tuple[str, dict[str, Any]]]:
    """One softmax variant per feature set, named like ``"(u, v, |u-v|)"``: the ``variants``
    of :func:`train_variants` and :func:`~sbert_tutor.book.seeds.seeded_variants`."""
    return {feature_label(fs): ("softmax", {"features": check_features(fs)}) for fs in feature_sets}


def variant_rows(
    runs: VariantRuns,
    metric: str,
    setup_prefix: str = "",
    baseline_setup: str | None = None,
) -> list[dict[str, Any]]:
    """Rows ``{"setup", "metric", "value"}`` of a :func:`train_variants` table, for
    :func:`~sbert_tutor.book.reporting.measured_vs_published`.

    A trained variant's setup is ``setup_prefix`` + its name; the untrained baseline row (if
    any) is kept only when ``baseline_setup`` names it.
    """
    rows = []
    for name, row in runs.table.iterrows():
        trained = not pd.isna(row["loss"])
        if not trained and baseline_setup is None:
            continue
        setup = f"{setup_prefix}{name}" if trained else baseline_setup
        rows.append({"setup": setup, "metric": metric, "value": float(row["spearman"])})
    return rows


def before_after(
    model: str | SentenceEncoder,
    loss: str,
    train: Any,
    config: TrainingConfig,
    *,
    tasks: str = "stsb",
    split: str = "test",
    max_examples: int | None = None,
    objective_options: Mapping[str, Any] | None = None,
) -> BeforeAfter:
    """Evaluate on STS, train once, evaluate again.

    Args:
        model: a hub name / folder (loaded here) or an encoder (trained in place).
        loss, train, config, max_examples, objective_options: as
            :func:`~sbert_tutor.training.recipe.fit`.
        tasks, split: the STS evaluation (:func:`~sbert_tutor.evaluation.evaluate_sts`).

    Returns:
        A :class:`BeforeAfter`: one row per task with ``before``, ``after`` and ``change``
        (Spearman x100), the evaluation's ``provenance`` and the
        :class:`~sbert_tutor.training.recipe.TrainRun` (training provenance in
        ``run.log["provenance"]``).
    """
    encoder = SentenceEncoder.from_pretrained(model) if isinstance(model, str) else model
    before = evaluate_sts(encoder, tasks, split=split, show_progress=False)
    run = fit(
        encoder,
        loss,
        train,
        config,
        objective_options=dict(objective_options or {}),
        max_examples=max_examples,
    )
    after = evaluate_sts(run.encoder, tasks, split=split, show_progress=False)
    table = pd.DataFrame(
        {
            "before": before.table.set_index("task")["spearman"],
            "after": after.table.set_index("task")["spearman"],
        }
    )
    table["change"] = table["after"] - table["before"]
    return BeforeAfter(
        table=table,
        note=f"Spearman x100 of cosine similarity, {split} split, before/after training",
        provenance=after.provenance,
        split=split,
        run=run,
    )


def before_after_rows(
    result: BeforeAfter, model_name: str, task: str = "STSb"
) -> list[dict[str, Any]]:
    """The before and after rows of a :func:`before_after` result, for
    :func:`~sbert_tutor.book.reporting.measured_vs_published`; the setup names the training run."""
    table, run = result.table, result.run
    metric = f"{task} {result.split} Spearman x100"
    trained = (
        f"{model_name} + {run.log['loss']['name']} on {run.log['train_data']['examples']} "
        f"examples, {run.log['steps_done']} steps"
    )
    return [
        {
            "setup": f"{model_name}, before training",
            "metric": metric,
            "value": float(table.loc[task, "before"]),
        },
        {"setup": trained, "metric": metric, "value": float(table.loc[task, "after"])},
    ]


def stsb_spearman(result: STSResult) -> float:
    """The STSb Spearman x100 of an :func:`~sbert_tutor.evaluation.evaluate_sts` result."""
    return float(result.table.set_index("task").loc["STSb", "spearman"])


def runs_table(
    before: STSResult,
    runs: Mapping[str, TrainRun],
    start_label: str = "start model (no training)",
) -> RunsTable:
    """The start model and each training run on STSb test, one row each.

    Args:
        before: :func:`~sbert_tutor.evaluation.evaluate_sts` of the start model (``tasks="stsb"``).
        runs: name -> :class:`~sbert_tutor.training.recipe.TrainRun`; each run's encoder is
            evaluated here on STSb test.

    Columns: ``objective``, ``steps``, ``batch size``, ``examples``, ``texts per example``,
    ``train seconds``, ``final loss`` (mean of the last 10 steps), ``STSb test Spearman`` and
    ``change`` (vs the start model). ``after`` keeps each run's evaluation.
    """
    base = stsb_spearman(before)
    rows = [{"setup": start_label, "STSb test Spearman": base}]
    after = {}
    for name, run in runs.items():
        after[name] = evaluate_sts(run.encoder, tasks="stsb", show_progress=False)
        log = run.log
        rows.append(
            {
                "setup": name,
                "objective": log["loss"]["name"],
                "steps": log["steps_done"],
                "batch size": log["config"]["batch_size"],
                "examples": log["train_data"]["examples"],
                "texts per example": len(log["train_data"]["columns"]),
                "train seconds": round(float(run.seconds), 1),
                "final loss": run.record.final_loss(),
                "STSb test Spearman": stsb_spearman(after[name]),
            }
        )
    table = pd.DataFrame(rows).set_index("setup")
    for col in ("steps", "batch size", "examples", "texts per example"):
        if col in table:
            table[col] = table[col].astype("Int64")
    table["change"] = table["STSb test Spearman"] - base
    return RunsTable(table=table, after=after)


def measured_rows(
    runs: RunsTable, metric: str = STSB_METRIC, prefix: str = ""
) -> list[dict[str, Any]]:
    """Rows ``{"setup", "metric", "value"}`` of a :func:`runs_table` (setup = ``prefix`` + row
    name), for :func:`~sbert_tutor.book.reporting.measured_vs_published`."""
    return [
        {"setup": f"{prefix}{name}", "metric": metric, "value": float(v)}
        for name, v in runs.table["STSb test Spearman"].items()
    ]
