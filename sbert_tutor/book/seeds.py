r"""Each training variant run with several seeds: mean, spread, and whether a difference is real.

A short run's STSb score moves with its seed (batch order, dropout masks, a new head's weights),
so chapters 6-11 report over the :math:`n` seeds the mean :math:`\bar x`, the sample standard
deviation :math:`s = \sqrt{\sum_i (x_i - \bar x)^2 / (n - 1)}` (the "spread") and the range
:math:`[\min_i x_i, \max_i x_i]`. :func:`verdict` calls a difference **beyond the seed spread**
when the seed ranges do not overlap (every seed of one above every seed of the other): with
three seeds a coarse but honest test; anything else is *within the spread*, no winner named.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sbert_tutor.book.weak_start import WeakStart, load_start, start_label
from sbert_tutor.data import STSData
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.provenance import provenance
from sbert_tutor.results import Result
from sbert_tutor.training import STSEvaluator, TrainingConfig, TrainingRecord
from sbert_tutor.training.recipe import fit

__all__ = [
    "START",
    "SeededRuns",
    "Variant",
    "Verdict",
    "seeded_rows",
    "seeded_variants",
    "summarize",
    "verdict",
    "verdicts",
]

START = "start model (no training)"

#: A variant: ``(loss, objective_options)`` trained on the shared data, or
#: ``(loss, objective_options, train)`` with its own training data.
Variant = tuple[str, Mapping[str, Any]] | tuple[str, Mapping[str, Any], Any]


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class SeededRuns(Result):
    """:func:`seeded_variants`: ``table`` is :func:`summarize`'s; ``runs`` one row per (variant,
    seed) (``spearman``, ``final_loss``, ``seconds``); ``start`` the start model's score and
    ``start_model`` its name; ``records`` and ``logs`` the loss curve and training log (with
    provenance) of each variant's first seed; ``eval_data`` the STS pairs scored, in words."""

    runs: pd.DataFrame
    start: float
    start_model: str
    records: dict[str, TrainingRecord]
    logs: dict[str, dict[str, Any]]
    eval_data: str


@dataclass(frozen=True)
class Verdict:
    """:func:`verdict`: ``a`` minus ``b`` in means, whether the seed ranges are apart, and a
    sentence saying so (the chapters glue it into their prose)."""

    a: str
    b: str
    difference: float
    beyond_spread: bool
    sentence: str

    def __str__(self) -> str:
        return self.sentence


def _score(encoder: SentenceEncoder, data: STSData) -> float:
    evaluator = STSEvaluator(data=data)
    return float(evaluator(encoder)[evaluator.primary_metric])


def summarize(runs: pd.DataFrame, start: float | None = None) -> pd.DataFrame:
    """Per-variant ``mean``, ``spread`` (sample sd; NaN for one seed), ``min``, ``max`` and
    ``seeds`` of a long frame with ``variant`` and ``spearman`` columns; with ``start``, a first
    row for the start model and a ``change`` column (mean minus ``start``)."""
    grouped = runs.groupby("variant", sort=False)["spearman"]
    table = grouped.agg(["mean", "std", "min", "max", "size"])  # std: ddof=1
    table.columns = ["mean", "spread", "min", "max", "seeds"]
    if start is not None:
        first = pd.DataFrame(
            {"mean": [start], "spread": [0.0], "min": [start], "max": [start], "seeds": [0]},
            index=[START],
        )
        table = pd.concat([first, table])
        table["change"] = table["mean"] - start
    table.index.name = "variant"
    return table


def seeded_variants(
    model: str | WeakStart | SentenceEncoder,
    variants: Mapping[str, Variant],
    train: Any,
    config: TrainingConfig,
    eval_data: STSData,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    max_examples: int | None = None,
    eval_steps: int | None = None,
) -> SeededRuns:
    """Train every :data:`Variant` once per seed from a fresh copy of ``model`` (a start as
    :func:`~sbert_tutor.book.weak_start.load_start` takes, loaded once) on ``train`` (or the
    variant's own data), with ``config`` (its ``seed`` replaced) and ``max_examples`` drawn with
    the seed; score each on ``eval_data`` (Spearman x100 of cosine), also every ``eval_steps``
    steps when given (the first seed's points in ``records[variant].evals``). The result's
    provenance is the evaluation's (STS files, start model, seeds); each log keeps its own."""
    seeds = _checked(seeds, variants)
    base = load_start(model)
    base.eval()
    start = _score(base, eval_data)
    rows: list[dict[str, Any]] = []
    records: dict[str, TrainingRecord] = {}
    logs: dict[str, dict[str, Any]] = {}
    for name, (loss, options, *own_data) in variants.items():
        for seed in seeds:
            run = fit(
                copy.deepcopy(base),  # every run starts from the same weights
                loss,
                own_data[0] if own_data else train,
                dataclasses.replace(config, seed=seed, eval_steps=eval_steps),
                objective_options=dict(options),
                max_examples=max_examples,  # a subset drawn with the run's seed
                evaluator=STSEvaluator(data=eval_data) if eval_steps else None,
            )
            rows.append(
                {
                    "variant": name,
                    "seed": seed,
                    "spearman": _score(run.model, eval_data),
                    "final_loss": run.record.final_loss(),
                    "seconds": run.seconds,
                }
            )
            records.setdefault(name, run.record)  # the first seed's curve and log
            logs.setdefault(name, run.log)
            del run
    runs = pd.DataFrame(rows)
    sample = eval_data.meta.get("sample", f"all {len(eval_data)} pairs")
    return SeededRuns(
        table=summarize(runs, start),
        note=f"STSb Spearman x100 of cosine, {len(seeds)} seed(s) a variant; spread = sample sd",
        runs=runs,
        start=start,
        start_model=start_label(model) if not isinstance(model, SentenceEncoder) else model.name,
        records=records,
        logs=logs,
        eval_data=f"{eval_data.name}/{eval_data.split}: {sample}",
        provenance=provenance(
            data_files=eval_data.files, model=base.describe(), extra={"seeds": seeds}
        ),
    )


def _checked(seeds: Sequence[int], variants: Mapping[str, Variant]) -> list[int]:
    seeds = list(seeds)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct and at least one, got {seeds!r}")
    if not variants:
        raise ValueError("seeded_variants needs at least one variant")
    for name, variant in variants.items():
        if len(variant) not in (2, 3):
            raise ValueError(
                f"variant {name!r} must be (loss, options) or (loss, options, train), "
                f"got {len(variant)} items"
            )
    return seeds


def verdict(result: SeededRuns | pd.DataFrame, a: str, b: str = START) -> Verdict:
    """Is variant ``a`` above or below ``b`` (another variant, or the start model) beyond the seed
    spread (the seed ranges apart; one seed: no verdict)? ``result``: the runs, or their
    :func:`summarize` table (a recorded run's)."""
    table = result if isinstance(result, pd.DataFrame) else result.table
    for name in (a, b):
        if name not in table.index:
            raise KeyError(f"{name!r} is not a row of the runs; rows: {list(table.index)}")
    ra, rb = table.loc[a], table.loc[b]
    difference = float(ra["mean"] - rb["mean"])
    one_seed = int(ra["seeds"]) < 2 or (b != START and int(rb["seeds"]) < 2)
    apart = bool(ra["min"] > rb["max"] or ra["max"] < rb["min"])
    beyond = apart and not one_seed
    what = "above" if difference > 0 else "below"
    head = f"{a} scores {abs(difference):.2f} {what} {b} on average"
    if one_seed:
        tail = "with a single seed there is no spread to compare with, so this is no verdict"
    elif beyond and b == START:
        tail = f"every seed lies {what} the start model: beyond the seed spread"
    elif beyond:
        tail = f"every seed of it lies {what} every seed of the other: beyond the seed spread"
    else:
        tail = "the seed ranges overlap: the difference is within the run-to-run spread"
    return Verdict(a, b, difference, beyond, f"{head}; {tail}.")


def verdicts(result: SeededRuns | pd.DataFrame, pairs: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """:func:`verdict` for each ``(a, b)``: one row each (``a``, ``b``, ``difference``,
    ``beyond spread``, ``verdict``)."""
    found = [verdict(result, a, b) for a, b in pairs]
    return pd.DataFrame(
        [(v.a, v.b, v.difference, v.beyond_spread, v.sentence) for v in found],
        columns=["a", "b", "difference", "beyond spread", "verdict"],
    )


def seeded_rows(
    result: SeededRuns, metric: str, setup_prefix: str = "", baseline_setup: str | None = None
) -> list[dict[str, Any]]:
    """Rows ``{"setup", "metric", "value"}`` (each variant's mean over seeds) for
    :func:`~sbert_tutor.book.reporting.measured_vs_published`; the start model's row is kept
    only when ``baseline_setup`` names it."""
    setups = {
        name: baseline_setup if name == START else f"{setup_prefix}{name} (mean of {n} seeds)"
        for name, n in result.table["seeds"].astype(int).items()
    }
    return [
        {"setup": setup, "metric": metric, "value": float(result.table.loc[name, "mean"])}
        for name, setup in setups.items()
        if setup is not None
    ]
