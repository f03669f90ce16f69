r"""Semantic Textual Similarity data: STS12-16, STS benchmark, SICK-R (book chapter 3).

Each pair :math:`(s_1, s_2)` carries a gold similarity :math:`y` (0-5 for STS, 1-5 for SICK-R,
kept as published). Two sources, one API:

* **Local** (``SBERT_TUTOR_DATA`` set): the files of the data folder (layout:
  :mod:`sbert_tutor.settings`).
  STS12-16 keep their *subsets* (e.g. STS12 = MSRpar, MSRvid, SMTeuroparl, surprise.OnWN,
  surprise.SMTnews), which the ``mean``/``wmean`` aggregations need.
* **Hub** (``SBERT_TUTOR_DATA`` unset, online): the ids in :data:`HUB_DATASETS`. The MTEB copies of
  STS12-16 carry no subset column, so only the ``all`` aggregation is available from the hub, and
  the SICK-R copy joins SICK's three splits; ``HUB_NOTES`` says so on every such load.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.data.files import (
    STS_SUBSET_ROWS,
    DataFileError,
    Table,
    load_hub_dataset,
    local_file,
    local_root,
    read_data_file,
)
from sbert_tutor.settings import CHECK_SIZES_ENV, LOCAL_DATA_SOURCE, check_sizes
from sbert_tutor.stats import seeded_subset
from sbert_tutor.validation import check_choice, check_same_length, check_scores, check_sentences

__all__ = [
    "DISPLAY_NAMES",
    "HUB_DATASETS",
    "STSData",
    "STS_TASKS",
    "check_task",
    "load_sts",
    "sample_sts",
]

logger = logging.getLogger(__name__)

STS_YEARS = ("sts12", "sts13", "sts14", "sts15", "sts16")
#: Every STS task ``load_sts`` reads: the five SemEval years, STS benchmark and SICK-R.
STS_TASKS = (*STS_YEARS, "stsb", "sickr")
#: Each task's name as the papers' tables print it.
DISPLAY_NAMES = {
    "sts12": "STS12",
    "sts13": "STS13",
    "sts14": "STS14",
    "sts15": "STS15",
    "sts16": "STS16",
    "stsb": "STSb",
    "sickr": "SICK-R",
}
SPLITS = {
    **{t: ("test",) for t in STS_YEARS},
    "stsb": ("train", "dev", "test"),
    "sickr": ("train", "dev", "test"),
}
_SCORE_RANGES = {**{t: (0.0, 5.0) for t in STS_YEARS}, "stsb": (0.0, 5.0), "sickr": (1.0, 5.0)}

#: Hugging Face hub sources used when ``SBERT_TUTOR_DATA`` is unset:
#: task -> (dataset id, {our split: hub split}, sentence columns, score column, score multiplier).
#: ``sentence-transformers/stsb`` stores scores divided by 5; we multiply back to 0-5.
#: ``mteb/sickr-sts`` has one split holding all 9,927 SICK pairs (not the 4,927-pair test split of the
#: SemEval release that SBERT reports on): set SBERT_TUTOR_DATA for the paper's split.
HUB_DATASETS: dict[str, tuple[str, dict[str, str], tuple[str, str], str, float]] = {
    **{
        t: (f"mteb/{t}-sts", {"test": "test"}, ("sentence1", "sentence2"), "score", 1.0)
        for t in STS_YEARS
    },
    "stsb": (
        "sentence-transformers/stsb",
        {"train": "train", "dev": "validation", "test": "test"},
        ("sentence1", "sentence2"),
        "score",
        5.0,
    ),
    "sickr": ("mteb/sickr-sts", {"test": "test"}, ("sentence1", "sentence2"), "score", 1.0),
}
_STS_VARIANTS = ("raw", "senteval_tok")
#: How a hub copy differs from the published data set the papers report on (kept on the data).
HUB_NOTES: dict[str, str] = {
    **{
        t: (
            f"{DISPLAY_NAMES[t]} from the hub (mteb/{t}-sts): the same pairs, but the copy records "
            "no subset per pair, so only the 'all' aggregation exists; 'mean' and 'wmean' "
            "(averages over subsets) are NaN. Set SBERT_TUTOR_DATA for the subsets"
        )
        for t in STS_YEARS
    },
    "sickr": (
        "SICK-R from the hub (mteb/sickr-sts): all 9,927 SICK pairs (train + trial + test) in "
        "one split, not the 4,927-pair SemEval-2014 test split SBERT reports on (the copy does "
        "not say which pair belongs to which split), so the numbers differ from the paper's. "
        "Set SBERT_TUTOR_DATA for the test split"
    ),
}


@dataclass(frozen=True)
class STSData:
    """Sentence pairs with gold similarity scores.

    Attributes:
        name: task name (``"sts12"`` ... ``"sickr"``).
        split: ``"train"``, ``"dev"`` or ``"test"``.
        sentences1, sentences2: the pairs, aligned.
        scores: gold scores, float64, on the task's own scale (``score_range``).
        subsets: the subset of each pair (e.g. ``"MSRpar"``); the task's display name for
            single-set tasks, and ``"all"`` when the source does not record subsets.
        source: where the data came from, in words (a folder or a hub id).
        files: local files read (hashed into provenance); empty for hub data.
        labels: SICK's entailment label per pair (``None`` for other tasks).
        notes: how the source differs from the published data set (hub copies: ``HUB_NOTES``);
            every number computed on these pairs must be read with them.
    """

    name: str
    split: str
    sentences1: list[str]
    sentences2: list[str]
    scores: np.ndarray
    subsets: list[str]
    source: str
    files: tuple[Path, ...] = ()
    labels: list[str] | None = None
    score_range: tuple[float, float] = (0.0, 5.0)
    meta: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_same_length(
            {
                "sentences1": self.sentences1,
                "sentences2": self.sentences2,
                "scores": self.scores,
                "subsets": self.subsets,
            }
        )
        # pairs built by hand must not carry a NaN into the correlations
        object.__setattr__(self, "scores", check_scores(self.scores))

    def __len__(self) -> int:
        return len(self.sentences1)

    @classmethod
    def from_pairs(
        cls,
        pairs: Sequence[tuple[str, str, float]] | None = None,
        *,
        sentences1: Sequence[str] | None = None,
        sentences2: Sequence[str] | None = None,
        scores: Sequence[float] | None = None,
        name: str = "pairs",
    ) -> STSData:
        """Your own scored sentence pairs, as ``(sentence1, sentence2, score)`` tuples or as the
        three aligned lists that sentence-transformers' ``EmbeddingSimilarityEvaluator(sentences1,
        sentences2, scores)`` takes.

        Scores may be on any scale (the correlations do not depend on it); ``score_range`` is
        the range they span. Every sentence must be a non-empty string and every score a finite
        number (the message names the first bad item). ``split`` is ``"user"``, ``source`` says
        these are the user's pairs and how many.

        Example:
            >>> data = STSData.from_pairs([("A cat.", "A kitten.", 4.5), ("A cat.", "A car.", 0.5)])
            >>> len(data), data.source, data.score_range
            (2, "the user's own pairs (2 pairs)", (0.5, 4.5))
        """
        if pairs is not None and any(x is not None for x in (sentences1, sentences2, scores)):
            raise ValueError("pass pairs= or sentences1=, sentences2=, scores=, not both")
        if pairs is not None:
            sentences1, sentences2, scores = _columns(pairs)
        elif sentences1 is None or sentences2 is None or scores is None:
            raise ValueError(
                "pass your pairs: pairs=[(sentence1, sentence2, score), ...], or all three of "
                "sentences1=, sentences2=, scores="
            )
        first = check_sentences(sentences1, "sentences1")
        second = check_sentences(sentences2, "sentences2")
        gold = check_scores(scores)
        n = check_same_length({"sentences1": first, "sentences2": second, "scores": gold})
        return cls(
            name=name,
            split="user",
            sentences1=first,
            sentences2=second,
            scores=gold,
            subsets=[name] * n,
            source=f"the user's own pairs ({n} pairs)",
            score_range=(float(gold.min()), float(gold.max())),
        )

    @property
    def subset_names(self) -> list[str]:
        """Subset names in first-appearance order."""
        return list(dict.fromkeys(self.subsets))

    def select(self, indices: Sequence[int], note: str | None = None) -> STSData:
        """The pairs at ``indices``, in that order, with everything else kept (source, files,
        scale, notes); ``note`` is recorded in ``meta["sample"]``."""
        keep = [int(i) for i in indices]
        return dataclasses.replace(
            self,
            sentences1=[self.sentences1[i] for i in keep],
            sentences2=[self.sentences2[i] for i in keep],
            scores=self.scores[keep],
            subsets=[self.subsets[i] for i in keep],
            labels=None if self.labels is None else [self.labels[i] for i in keep],
            meta={**self.meta, "sample": note} if note else dict(self.meta),
        )

    def to_frame(self) -> pd.DataFrame:
        """The pairs as a DataFrame (one row a pair)."""
        frame = pd.DataFrame(
            {
                "subset": self.subsets,
                "sentence1": self.sentences1,
                "sentence2": self.sentences2,
                "score": self.scores,
            }
        )
        if self.labels is not None:
            frame["label"] = self.labels
        return frame


def _columns(pairs: Sequence[Any]) -> tuple[list[str], list[str], list[float]]:
    """``[(s1, s2, score), ...]`` -> the three columns (each item must have three fields)."""
    rows = list(pairs)
    for i, row in enumerate(rows):
        if isinstance(row, str) or not isinstance(row, Sequence) or len(row) != 3:
            raise ValueError(
                f"pairs[{i}] is {row!r}: each pair must be (sentence1, sentence2, score)"
            )
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def check_task(name: str) -> str:
    """Normalise a task name (``"STSb"`` -> ``"stsb"``) or raise ``ValueError`` listing valid ones."""
    key = str(name).strip().lower().replace("-", "").replace("_", "")
    aliases = {"stsbenchmark": "stsb", "sick": "sickr", "sickrelatedness": "sickr"}
    key = aliases.get(key, key)
    return check_choice(name, STS_TASKS, "STS task", key=key)


def _check_split(task: str, split: str) -> str:
    if split not in SPLITS[task]:
        raise ValueError(
            f"{task} has no split {split!r}; it has: {', '.join(SPLITS[task])}"
            + (" (STS12-16 are test-only benchmarks)" if task in STS_YEARS else "")
        )
    return split


def load_sts(name: str, split: str = "test", variant: str = "raw") -> STSData:
    """Load one STS task.

    Args:
        name: ``"sts12"`` ... ``"sts16"``, ``"stsb"`` or ``"sickr"`` (case-insensitive).
        split: ``"test"``; ``stsb`` and ``sickr`` also have ``"train"`` and ``"dev"``.
        variant: for STS12-16 from the local folder, ``"raw"`` (organisers' text, default) or
            ``"senteval_tok"`` (SentEval's tokenised, lower-cased copies). Same pairs and scores.

    Returns:
        :class:`STSData`.

    Raises:
        ValueError: unknown task, split or variant.
        DataNotFoundError: neither ``SBERT_TUTOR_DATA`` nor the hub can provide the data.
    """
    task = check_task(name)
    split = _check_split(task, split)
    if variant not in _STS_VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(_STS_VARIANTS)}")
    root = local_root()
    data = (
        _load_local(root, task, split, variant)
        if root is not None
        else _load_hub(task, split, variant)
    )
    logger.info("loaded %s/%s: %d pairs from %s", task, split, len(data), data.source)
    return data


def _year_files(root: Path, task: str, variant: str) -> list[str]:
    """The subset files of an STS year, refusing a folder that lacks a published subset."""
    year = task.upper()
    relative = f"sts/{variant}/{year}"
    folder = root / relative
    present = sorted(p.name for p in folder.glob("*.tsv")) if folder.is_dir() else []
    if not present:
        local_file(root, f"{relative}/<subset>.tsv")  # raises, naming the setting
    known = STS_SUBSET_ROWS[year]
    missing = [f"{name}.tsv" for name in known if f"{name}.tsv" not in present]
    if missing and check_sizes():
        raise DataFileError(
            f"{folder} lacks {', '.join(missing)}: {DISPLAY_NAMES[task]} has {len(known)} subsets "
            f"({sum(known.values()):,} pairs), and its 'all' score needs every one. Copy the "
            f"folder again; if you left subsets out on purpose, set {CHECK_SIZES_ENV}=0."
        )
    return [f"{relative}/{name}" for name in present]


def _load_local(root: Path, task: str, split: str, variant: str) -> STSData:
    low, high = _SCORE_RANGES[task]
    if task in STS_YEARS:
        relatives = _year_files(root, task, variant)
        columns: tuple[str, ...] = ("score", "sentence1", "sentence2")
    elif task == "stsb":
        relatives = [f"stsb/sts-{split}.tsv"]
        columns = ("score", "sentence1", "sentence2")
    else:  # sickr
        sick_split = {"train": "train", "dev": "trial", "test": "test"}[split]
        relatives = [f"sick/SICK_{sick_split}.tsv"]
        columns = ("relatedness_score", "sentence_A", "sentence_B", "entailment_judgment")
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    subsets: list[str] = []
    tables: list[Table] = []
    for relative in relatives:
        name = f"{DISPLAY_NAMES[task]} {Path(relative).stem if task in STS_YEARS else split}"
        table = read_data_file(root, relative, columns, what=name)
        s1 += table.texts(columns[1])
        s2 += table.texts(columns[2])
        scores += table.numbers(columns[0], low=low, high=high)
        subsets += [Path(relative).stem if task in STS_YEARS else DISPLAY_NAMES[task]] * len(table)
        tables.append(table)
    return STSData(
        name=task,
        split=split,
        sentences1=s1,
        sentences2=s2,
        scores=check_scores(scores, name=f"{task} scores"),
        subsets=subsets,
        source=LOCAL_DATA_SOURCE,
        files=tuple(t.path for t in tables),
        labels=tables[0].column("entailment_judgment") if task == "sickr" else None,
        score_range=_SCORE_RANGES[task],
        meta={"variant": variant} if task in STS_YEARS else {},
    )


def _load_hub(task: str, split: str, variant: str = "raw") -> STSData:
    dataset_id, split_map, (c1, c2), score_col, multiplier = HUB_DATASETS[task]
    if split not in split_map:
        raise ValueError(
            f"the hub copy of {task} ({dataset_id}) has no {split!r} split; set SBERT_TUTOR_DATA "
            "to a local data folder for it"
        )
    ds = load_hub_dataset(f"{task}/{split}", dataset_id, split=split_map[split])
    scores = check_scores(ds[score_col], name=f"{task} scores") * multiplier
    n = len(scores)
    notes = (HUB_NOTES[task],) if task in HUB_NOTES else ()
    if variant != "raw" and task in STS_YEARS:
        notes += (f"variant={variant!r} applies to the data folder only; the hub has one text",)
    for note in notes:
        logger.warning("%s", note)
    return STSData(
        name=task,
        split=split,
        sentences1=list(ds[c1]),
        sentences2=list(ds[c2]),
        scores=scores,
        subsets=[DISPLAY_NAMES[task] if task not in STS_YEARS else "all"] * n,
        source=f"hub:{dataset_id}[{split_map[split]}]",
        score_range=_SCORE_RANGES[task],
        notes=notes,
    )


def sample_sts(data: STSData, n: int | None, seed: int = 0) -> STSData:
    """A seeded random sample of ``n`` pairs of ``data``, in data order (as
    :func:`~sbert_tutor.data.sample_msmarco` samples MS MARCO).

    ``n=None`` (or ``n`` >= the number of pairs) returns ``data`` itself. The sample keeps the
    data's files (for provenance) and records its size and seed in ``meta["sample"]``.

    Example:
        >>> dev = sample_sts(load_sts("stsb", "dev"), n=500, seed=0)  # doctest: +SKIP
    """
    if n is None or n >= len(data):
        return data
    if n < 2:
        raise ValueError(f"a correlation needs at least 2 pairs, got n={n}")
    keep = seeded_subset(len(data), n, seed)
    return data.select(keep, note=f"{n} of {len(data)} pairs, seed {seed}")
