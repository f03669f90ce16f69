r"""STS evaluation: how well does :math:`\cos(u, v)` rank pairs like humans do? (book chapter 3)

For each pair :math:`(s_1, s_2)` with gold score :math:`y`, the encoder gives
:math:`\hat y = \cos(u, v)`. We report Spearman's :math:`\rho` (rank correlation, the metric of
the SBERT paper) and Pearson's :math:`r` between :math:`\hat y` and :math:`y`, both x100.

STS12-16 consist of several subsets. Papers aggregate them in three ways (SentEval/SimCSE):

* ``all``: concatenate the subsets and compute one correlation (SBERT and SimCSE report this);
* ``mean``: the plain average of per-subset correlations;
* ``wmean``: the average weighted by subset size :math:`M_k` (the pairs of subset :math:`k`):
  :math:`\sum_k M_k \rho_k / \sum_k M_k`.

Single-set tasks (STSb, SICK-R) give the same value under all three. The result always says which
aggregation a number is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.stats import pearsonr, spearmanr
from tqdm.auto import tqdm

from sbert_tutor.data.sts import DISPLAY_NAMES, STS_TASKS, STS_YEARS, STSData, check_task, load_sts
from sbert_tutor.encoders.protocol import Encoder, encode_unique
from sbert_tutor.provenance import provenance
from sbert_tutor.results import Result
from sbert_tutor.similarity import paired_cosine
from sbert_tutor.validation import check_choice

#: How STS12-16 scores are pooled over a year's subsets (SentEval's ``all``, ``mean``, ``wmean``).
AGGREGATIONS = ("all", "mean", "wmean")

__all__ = [
    "AGGREGATIONS",
    "STSResult",
    "aggregate",
    "aggregations_table",
    "correlations",
    "evaluate_sts",
    "evaluate_sts_details",
    "predict_similarity",
    "score_pairs",
    "sts_results_table",
    "subsets_table",
]


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class STSResult(Result):
    """:func:`evaluate_sts`: one row a task (and ``avg``) of one aggregation.

    Attributes:
        aggregation: which aggregation the table shows (``all``, ``mean`` or ``wmean``).
        details: ``{task: block}`` with every aggregation and per-subset value
            (:func:`score_pairs`), for :func:`aggregations_table` and :func:`subsets_table`.
    """

    aggregation: str
    details: dict[str, Any]

    primary_metric: ClassVar[str | None] = "spearman"

    def _headline(self, column: str) -> float:
        row = self.table.iloc[-1]  # the one task, or the avg row of several
        return float(row[column])

    @property
    def spearman(self) -> float:
        """The main number (x100): the Spearman correlation of the one task, or its mean over
        the tasks (the ``avg`` row) when there are several."""
        return self._headline("spearman")

    @property
    def pearson(self) -> float:
        """The Pearson correlation (x100) of the one task, or the ``avg`` row's."""
        return self._headline("pearson")

    @property
    def main_score(self) -> float:
        """:attr:`spearman`."""
        return self.spearman


def _check_aggregation(aggregation: str) -> str:
    """Return ``aggregation`` if valid, else raise ``ValueError`` listing the valid ones."""
    return check_choice(aggregation, AGGREGATIONS, "aggregation", key=aggregation)


def parse_tasks(tasks: str | Iterable[str]) -> list[str]:
    """``"all"`` -> every task; ``"sts12,stsb"`` or a list -> those tasks (validated)."""
    if isinstance(tasks, str):
        tasks = list(STS_TASKS) if tasks.strip().lower() == "all" else tasks.split(",")
    names = [check_task(t) for t in tasks if str(t).strip()]
    if not names:
        raise ValueError(f"no task given; choose from {', '.join(STS_TASKS)} or 'all'")
    return list(dict.fromkeys(names))


def correlations(predicted: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    """(Spearman x100, Pearson x100) between predictions and gold scores."""
    if len(predicted) < 2:
        raise ValueError("a correlation needs at least 2 pairs")
    return 100.0 * float(spearmanr(predicted, gold)[0]), 100.0 * float(pearsonr(predicted, gold)[0])


def aggregate(
    overall: float, per_subset: Sequence[float], sizes: Sequence[int]
) -> dict[str, float]:
    """The three aggregations of one task (module docstring): ``all`` is the correlation over the
    concatenated subsets, ``mean`` the plain average of the subsets' values, ``wmean`` their
    average weighted by the subsets' pair counts."""
    values = np.asarray(per_subset, dtype=np.float64)  # rho_k
    weights = np.asarray(sizes, dtype=np.float64)  # M_k
    return {
        "all": float(overall),
        "mean": float(values.mean()),
        "wmean": float((values * weights).sum() / weights.sum()),
    }


def score_pairs(data: STSData, predicted: np.ndarray) -> dict[str, Any]:
    """Correlations of ``predicted`` similarities with ``data.scores``, per subset and aggregated.

    Returns the JSON block of one task: ``{"spearman": {"all", "mean", "wmean"}, "pearson": {...},
    "n": ..., "subsets": {name: {"spearman", "pearson", "n"}}}``.
    """
    subsets = np.asarray(data.subsets)
    per_subset: dict[str, dict[str, float | int]] = {}
    for name in data.subset_names:
        mask = subsets == name
        rho, r = correlations(predicted[mask], data.scores[mask])
        per_subset[name] = {"spearman": rho, "pearson": r, "n": int(mask.sum())}
    rho_all, r_all = correlations(predicted, data.scores)
    block: dict[str, Any] = {"spearman": {}, "pearson": {}, "n": len(data), "subsets": per_subset}
    sizes = [v["n"] for v in per_subset.values()]
    # From the hub, STS12-16 have no subset labels: mean/wmean cannot be computed honestly.
    unknown = data.name in STS_YEARS and data.subset_names == ["all"]
    for metric, overall in (("spearman", rho_all), ("pearson", r_all)):
        block[metric]["all"] = overall
        if data.name not in STS_YEARS:
            block[metric]["mean"] = block[metric]["wmean"] = overall
        elif unknown:
            block[metric]["mean"] = block[metric]["wmean"] = float("nan")
        else:
            block[metric] = aggregate(overall, [v[metric] for v in per_subset.values()], sizes)
    return block


def predict_similarity(
    encoder: Encoder, data: STSData, batch_size: int = 64, show_progress_bar: bool | None = None
) -> np.ndarray:
    """:math:`\\cos(u, v)` for every pair, encoding each distinct sentence once."""
    n = len(data.sentences1)
    emb = encode_unique(
        encoder,
        [*data.sentences1, *data.sentences2],
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
    )
    return paired_cosine(emb[:n], emb[n:])


def evaluate_sts_details(
    encoder: Encoder,
    tasks: str | Sequence[str] = "all",
    split: str = "test",
    variant: str = "raw",
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
) -> dict[str, Any]:
    """Evaluate on STS tasks; return ``{"results": {task: block}, "files": [...], "sources": {...},
    "notes": [...]}`` (``notes``: how hub copies differ from the published sets, see
    ``HUB_NOTES``).

    ``block`` is described in :func:`score_pairs`; this is the structure the CLI writes as JSON.
    """
    names = parse_tasks(tasks)
    sets = (
        load_sts(task, split=split if task in ("stsb", "sickr") else "test", variant=variant)
        for task in names
    )
    return _score_sets(encoder, sets, len(names), batch_size, show_progress_bar)


def _score_sets(
    encoder: Encoder,
    sets: Iterable[STSData],
    count: int,
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
) -> dict[str, Any]:
    """The structure of :func:`evaluate_sts_details` for ``count`` pair sets, each under its
    ``name`` (sets are loaded as they are scored when ``sets`` is a generator)."""
    results: dict[str, Any] = {}
    files: list[str] = []
    sources: dict[str, str] = {}
    notes: list[str] = []
    bar = tqdm(sets, total=count, desc="STS tasks", disable=show_progress_bar is False or count < 2)
    for data in bar:
        predicted = predict_similarity(
            encoder, data, batch_size=batch_size, show_progress_bar=show_progress_bar
        )
        results[data.name] = score_pairs(data, predicted)
        files.extend(str(f) for f in data.files)
        sources[data.name] = data.source
        notes.extend(data.notes)
    return {"results": results, "files": files, "sources": sources, "notes": notes}


def sts_results_table(results: dict[str, Any], aggregation: str = "all") -> pd.DataFrame:
    """A tidy table (one row a task) of one aggregation, plus an ``avg`` row when several tasks."""
    _check_aggregation(aggregation)
    rows = [
        {
            "task": DISPLAY_NAMES.get(task, task),
            "aggregation": aggregation,
            "spearman": block["spearman"][aggregation],
            "pearson": block["pearson"][aggregation],
            "n": block["n"],
            "subsets": len(block["subsets"]),
        }
        for task, block in results.items()
    ]
    table = pd.DataFrame(rows)
    if len(rows) > 1:
        table.loc[len(table)] = {
            "task": "avg",
            "aggregation": aggregation,
            "spearman": table["spearman"].mean(),
            "pearson": table["pearson"].mean(),
            "n": int(table["n"].sum()),
            "subsets": int(table["subsets"].sum()),
        }
    return table


def _results_note(aggregation: str) -> str:
    """The one-line note of an STS table."""
    return f"Spearman and Pearson x100 of cosine similarity vs gold; aggregation={aggregation!r}"


def aggregations_table(results: dict[str, Any], metric: str = "spearman") -> pd.DataFrame:
    """One row a task, one column an aggregation of ``metric`` (x100): ``all`` = concatenated
    subsets, ``mean`` / ``wmean`` = (weighted) mean of the per-subset values."""
    frame = pd.DataFrame(
        {DISPLAY_NAMES.get(task, task): block[metric] for task, block in results.items()}
    ).T[list(AGGREGATIONS)]
    frame.index.name = "task"
    return frame


def subsets_table(results: dict[str, Any]) -> pd.DataFrame:
    """Per-subset correlations as a tidy table (task, subset, spearman, pearson, n)."""
    rows = [
        {"task": DISPLAY_NAMES.get(task, task), "subset": name, **values}
        for task, block in results.items()
        for name, values in block["subsets"].items()
    ]
    return pd.DataFrame(rows)


def evaluate_sts(
    encoder: Encoder,
    tasks: str | Sequence[str] = "all",
    aggregation: str = "all",
    split: str = "test",
    variant: str = "raw",
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
    *,
    pairs: STSData | Sequence[tuple[str, str, float]] | None = None,
    sentences1: Sequence[str] | None = None,
    sentences2: Sequence[str] | None = None,
    scores: Sequence[float] | None = None,
) -> STSResult:
    """Spearman/Pearson x100 of an encoder on STS tasks, or on your own pairs, as a tidy table.

    Args:
        encoder: anything with ``encode(list[str], batch_size=..., show_progress_bar=...) -> array``
            (a sentence-transformers model too).
        tasks: ``"all"`` (STS12-16, STSb, SICK-R), a comma-separated string or a list.
        aggregation: ``"all"``, ``"mean"`` or ``"wmean"`` for multi-subset years (module docstring).
        split: for STSb and SICK-R (``"train"``, ``"dev"``, ``"test"``); STS12-16 are test-only.
        variant: STS12-16 text, ``"raw"`` or ``"senteval_tok"``.
        pairs: your own scored pairs instead of the tasks: ``[(sentence1, sentence2, score),
            ...]`` or an :class:`~sbert_tutor.data.sts.STSData`.
        sentences1, sentences2, scores: the same as three aligned lists, as sentence-transformers'
            ``EmbeddingSimilarityEvaluator(sentences1, sentences2, scores)`` takes them (same
            correlations, there as fractions, here x100). Scores may be on any scale.

    Returns:
        An :class:`STSResult`: ``table`` has one row per task (and an ``avg`` row) with the
        aggregation stated in a column; ``details`` keeps all aggregations and per-subset
        values, ``provenance`` how the numbers were made (for your own pairs: ``data`` says so,
        with their number).

    Example:
        >>> pairs = [("A man plays guitar.", "A man plays an instrument.", 4.2), ...]  # doctest: +SKIP
        >>> evaluate_sts(encoder, pairs=pairs).table  # doctest: +SKIP
    """
    _check_aggregation(aggregation)
    own = _own_pairs(pairs, sentences1, sentences2, scores)
    if own is None:
        details = evaluate_sts_details(
            encoder, tasks, split, variant, batch_size, show_progress_bar
        )
        where = {"split": split, "variant": variant}
    elif tasks != "all":
        raise ValueError(f"pass tasks={tasks!r} or your own pairs, not both")
    else:
        details = _score_sets(encoder, [own], 1, batch_size, show_progress_bar)
        where = {"data": own.source}
    describe = getattr(encoder, "describe", None)
    return STSResult(
        table=sts_results_table(details["results"], aggregation),
        note="\n".join([_results_note(aggregation), *details["notes"]]),
        provenance=provenance(
            data_files=details["files"],
            model=describe() if callable(describe) else None,
            extra={"data_sources": details["sources"], **where},
        ),
        aggregation=aggregation,
        details=details["results"],
    )


def _own_pairs(
    pairs: STSData | Sequence[tuple[str, str, float]] | None,
    sentences1: Sequence[str] | None,
    sentences2: Sequence[str] | None,
    scores: Sequence[float] | None,
) -> STSData | None:
    """The user's pairs as :class:`STSData` (``None`` when none were given)."""
    if isinstance(pairs, STSData):
        if any(x is not None for x in (sentences1, sentences2, scores)):
            raise ValueError("pass pairs= or sentences1=, sentences2=, scores=, not both")
        return pairs
    if pairs is None and all(x is None for x in (sentences1, sentences2, scores)):
        return None
    return STSData.from_pairs(pairs, sentences1=sentences1, sentences2=sentences2, scores=scores)
