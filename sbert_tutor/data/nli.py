r"""Natural Language Inference data: SNLI, MultiNLI, SICK-E, and the training sets built from them.

An NLI pair is a premise :math:`p`, a hypothesis :math:`h` and a label
:math:`y \in \{\text{entailment}, \text{neutral}, \text{contradiction}\}` (ids 0, 1, 2, the order of
the hub copies of SNLI and MultiNLI). SBERT trains on SNLI + MultiNLI train (about 1M pairs,
"AllNLI") with the softmax objective; the ranking losses reuse the same pairs in other shapes.

Sources, one API (:func:`load_nli`):

* **Hub** (``SBERT_TUTOR_DATA`` unset, online): ``stanfordnlp/snli`` (train / validation / test)
  and ``nyu-mll/multi_nli`` (train / validation_matched / validation_mismatched). Pairs without a
  gold label (label -1, SNLI's no-consensus pairs) are dropped. ``allnli`` = SNLI + MultiNLI: the
  paper's training set.
* **Local** (``SBERT_TUTOR_DATA`` set): ``nli/snli_{dev,test}.tsv`` (SNLI 1.0 dev/test, tokenised
  text, 9,842 / 9,824 pairs) and ``sick/SICK_{train,trial,test}.tsv`` (SICK entailment labels,
  4,500 / 500 / 4,927 pairs). The folder has **no** SNLI/MultiNLI train split:
  :func:`load_nli_train` then substitutes SNLI dev+test, loudly.

From labelled pairs, four training shapes (each a :class:`~sbert_tutor.data.table.DataTable` the
trainer accepts):

* :func:`labelled_pairs` -- (premise, hypothesis, label id): softmax classification;
* :func:`entailment_pairs` -- (anchor, positive) = (premise, entailed hypothesis): MNRL / contrastive;
* :func:`nli_triplets` -- (anchor, positive, negative) = (premise, entailment, contradiction);
* :func:`supmpn_groups` -- one premise, :math:`P` positives, :math:`Q` negatives (SupMPN), padded by
  *our* rule when a premise has fewer (documented at the function).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.data.files import (
    DataNotFoundError,
    load_hub_dataset,
    local_root,
    read_data_file,
)
from sbert_tutor.data.table import DataTable
from sbert_tutor.settings import DATA_ENV, LOCAL_DATA_SOURCE
from sbert_tutor.validation import check_choice, check_same_length

__all__ = [
    "NLIData",
    "NLI_LABELS",
    "NLI_TASKS",
    "SubstituteDataWarning",
    "as_nli",
    "entailment_pairs",
    "group_negatives",
    "group_positives",
    "labelled_pairs",
    "load_nli",
    "load_nli_train",
    "nli_triplets",
    "supmpn_groups",
]

logger = logging.getLogger(__name__)

#: Label names by id (the order of ``stanfordnlp/snli`` and ``nyu-mll/multi_nli``).
NLI_LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
_LABEL_IDS: dict[str, int] = {name: i for i, name in enumerate(NLI_LABELS)}

#: The NLI sets ``load_nli`` reads (``allnli`` = SNLI + MultiNLI).
NLI_TASKS: tuple[str, ...] = ("snli", "multinli", "allnli", "sick")
#: The splits of each NLI task.
_NLI_SPLITS: dict[str, tuple[str, ...]] = {
    "snli": ("train", "dev", "test"),
    "multinli": ("train", "dev", "dev_mismatched"),
    "allnli": ("train", "dev"),
    "sick": ("train", "dev", "test"),
}
#: Hugging Face hub sources: task -> (dataset id, {our split: hub split}).
#: Both use premise / hypothesis / label columns with ids 0 entailment, 1 neutral, 2 contradiction
#: and -1 for pairs without a gold label.
_HUB_NLI: dict[str, tuple[str, dict[str, str]]] = {
    "snli": ("stanfordnlp/snli", {"train": "train", "dev": "validation", "test": "test"}),
    "multinli": (
        "nyu-mll/multi_nli",
        {"train": "train", "dev": "validation_matched", "dev_mismatched": "validation_mismatched"},
    ),
}
#: ``allnli`` = these (task, split) parts, concatenated.
_ALLNLI_PARTS: dict[str, tuple[tuple[str, str], ...]] = {
    "train": (("snli", "train"), ("multinli", "train")),
    "dev": (("snli", "dev"), ("multinli", "dev")),
}
_LOCAL_FILES: dict[tuple[str, str], str] = {
    ("snli", "dev"): "nli/snli_dev.tsv",
    ("snli", "test"): "nli/snli_test.tsv",
    ("sick", "train"): "sick/SICK_train.tsv",
    ("sick", "dev"): "sick/SICK_trial.tsv",
    ("sick", "test"): "sick/SICK_test.tsv",
}
_ALIASES = {
    "mnli": "multinli",
    "multinli": "multinli",
    "multi_nli": "multinli",
    "sicke": "sick",
    "sickentailment": "sick",
    "sick": "sick",
    "nli": "allnli",
}


class SubstituteDataWarning(UserWarning):
    """The requested training data is not available; a smaller stand-in was loaded instead."""


@dataclass(frozen=True)
class NLIData:
    """Premise/hypothesis pairs with 3-way labels.

    Attributes:
        name: ``"snli"``, ``"multinli"``, ``"allnli"``, ``"sick"`` (or ``"user"`` for own data).
        split: ``"train"``, ``"dev"``, ``"test"`` (or a description for substitutes).
        premises, hypotheses: the pairs, aligned.
        labels: one of :data:`NLI_LABELS` per pair (lower case).
        source: where the data came from, in words.
        files: local files read (hashed into provenance); empty for hub data.
    """

    name: str
    split: str
    premises: list[str]
    hypotheses: list[str]
    labels: list[str]
    source: str
    files: tuple[Path, ...] = ()
    meta: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_same_length(
            {"premises": self.premises, "hypotheses": self.hypotheses, "labels": self.labels}
        )
        for i, label in enumerate(self.labels):
            if label not in _LABEL_IDS:
                raise ValueError(
                    f"labels[{i}] = {label!r} is not an NLI label; use one of {list(NLI_LABELS)} "
                    "(or their ids 0, 1, 2)"
                )

    def __len__(self) -> int:
        return len(self.premises)

    @property
    def label_ids(self) -> np.ndarray:
        """Labels as ids (``int64``): 0 entailment, 1 neutral, 2 contradiction."""
        return np.array([_LABEL_IDS[x] for x in self.labels], dtype=np.int64)

    def label_counts(self) -> dict[str, int]:
        """Pairs per label, in :data:`NLI_LABELS` order."""
        return {name: self.labels.count(name) for name in NLI_LABELS}

    def to_frame(self) -> pd.DataFrame:
        """The pairs as a DataFrame: premise, hypothesis, label (the name)."""
        return pd.DataFrame(
            {"premise": self.premises, "hypothesis": self.hypotheses, "label": self.labels}
        )


# --------------------------------------------------------------------------- names and labels
def check_nli_task(name: str) -> str:
    """Normalise an NLI task name (``"MNLI"`` -> ``"multinli"``) or raise listing valid ones."""
    key = str(name).strip().lower().replace("-", "").replace(" ", "")
    key = _ALIASES.get(key, key)
    return check_choice(name, NLI_TASKS, "NLI task", key=key)


def _normalize_label(value: Any, where: str = "label") -> str:
    """Map a label name (any case) or id (0, 1, 2) to its name in :data:`NLI_LABELS`."""
    if isinstance(value, str):
        key = value.strip().lower()
        if key in _LABEL_IDS:
            return key
    elif isinstance(value, int | np.integer) and not isinstance(value, bool):
        if 0 <= int(value) < len(NLI_LABELS):
            return NLI_LABELS[int(value)]
    elif isinstance(value, float) and value.is_integer() and 0 <= value < len(NLI_LABELS):
        return NLI_LABELS[int(value)]
    raise ValueError(
        f"{where} = {value!r} is not an NLI label: use one of {list(NLI_LABELS)} or the ids "
        "0, 1, 2 (in that order). Drop pairs without a gold label (e.g. SNLI's -1 / '-') first."
    )


def _check_split(task: str, split: str) -> str:
    if split not in _NLI_SPLITS[task]:
        raise ValueError(f"{task} has no split {split!r}; it has: {', '.join(_NLI_SPLITS[task])}")
    return split


# --------------------------------------------------------------------------- loading
def load_nli(name: str, split: str = "train") -> NLIData:
    """Load one NLI data set.

    Args:
        name: ``"snli"``, ``"multinli"`` (alias ``"mnli"``), ``"allnli"`` (SNLI + MultiNLI) or
            ``"sick"`` (SICK entailment labels); case-insensitive.
        split: see ``_NLI_SPLITS``; ``"dev"`` of MultiNLI is its matched validation set.

    Returns:
        :class:`NLIData`.

    Raises:
        ValueError: unknown name or split.
        DataNotFoundError: the local folder lacks the split (it has no SNLI/MultiNLI train: use
            :func:`load_nli_train`, or unset ``SBERT_TUTOR_DATA`` to download), or no hub.
    """
    task = check_nli_task(name)
    split = _check_split(task, split)
    if task == "allnli":
        parts = [load_nli(t, s) for t, s in _ALLNLI_PARTS[split]]
        data = _concat_nli(parts, name="allnli", split=split)
    else:
        root = local_root()
        data = _load_local(root, task, split) if root is not None else _load_hub(task, split)
    logger.info("loaded %s/%s: %d pairs from %s", task, split, len(data), data.source)
    return data


def load_nli_train() -> NLIData:
    """The NLI training set of the SBERT paper, or the largest stand-in the data folder has.

    * ``SBERT_TUTOR_DATA`` unset (hub): SNLI train + MultiNLI train (``allnli``, ~942k pairs).
    * ``SBERT_TUTOR_DATA`` set: the folder has no NLI train split, so SNLI **dev + test**
      (19,666 pairs) stand in, with a :class:`SubstituteDataWarning`. Results trained on it are
      not comparable with the paper (50x less data); nothing here is evaluated on SNLI test.
    """
    root = local_root()
    if root is None:
        return load_nli("allnli", "train")
    warnings.warn(
        f"{DATA_ENV} has no SNLI/MultiNLI train split; training on SNLI dev+test instead "
        "(19,666 pairs, ~2% of the paper's AllNLI). Unset it (and go online) for the real thing.",
        SubstituteDataWarning,
        stacklevel=2,
    )
    parts = [load_nli("snli", "dev"), load_nli("snli", "test")]
    return _concat_nli(parts, name="snli", split="dev+test (substitute for train)")


def _concat_nli(
    parts: Sequence[NLIData], name: str | None = None, split: str | None = None
) -> NLIData:
    """Concatenate NLI data sets (sources and files are kept)."""
    if not parts:
        raise ValueError("concat_nli needs at least one NLIData")
    return NLIData(
        name=name or "+".join(p.name for p in parts),
        split=split or "+".join(dict.fromkeys(p.split for p in parts)),
        premises=[s for p in parts for s in p.premises],
        hypotheses=[s for p in parts for s in p.hypotheses],
        labels=[s for p in parts for s in p.labels],
        source=" + ".join(f"{p.name}/{p.split} ({p.source})" for p in parts),
        files=tuple(f for p in parts for f in p.files),
    )


def _load_local(root: Path, task: str, split: str) -> NLIData:
    relative = _LOCAL_FILES.get((task, split))
    if relative is None:
        hint = (
            " The data folder has no SNLI/MultiNLI train: use "
            "load_nli_train() for the SNLI dev+test stand-in, load_nli('sick', 'train'), or unset "
            f"{DATA_ENV} to download the real train split from the hub."
            if split == "train"
            else f" Unset {DATA_ENV} to download it from the hub."
        )
        raise DataNotFoundError(f"{task}/{split} is not in {DATA_ENV}={root}.{hint}")
    cols = (
        ("sentence_A", "sentence_B", "entailment_judgment")
        if task == "sick"
        else ("premise", "hypothesis", "label")
    )
    table = read_data_file(root, relative, cols, what=f"{task} {split}")
    premises = table.texts(cols[0])
    hypotheses = table.texts(cols[1])
    labels = [
        _normalize_label(y, where=f"{table.where(i)}: label")
        for i, y in enumerate(table.column(cols[2]))
    ]
    path = table.path
    return NLIData(task, split, premises, hypotheses, labels, LOCAL_DATA_SOURCE, (path,))


def _load_hub(task: str, split: str) -> NLIData:
    if task not in _HUB_NLI:
        raise DataNotFoundError(
            f"{task} entailment labels are read from the local data folder only: set "
            f"{DATA_ENV}=/path/to/data (hub copies of SICK use other splits: 4,439 / 495 / 4,906)."
        )
    dataset_id, split_map = _HUB_NLI[task]
    ds = load_hub_dataset(f"{task}/{split}", dataset_id, split=split_map[split])
    premises, hypotheses, labels = [], [], []
    dropped = 0
    for p, h, y in zip(ds["premise"], ds["hypothesis"], ds["label"], strict=True):
        if y is None or (isinstance(y, int | np.integer) and y < 0):
            dropped += 1
            continue
        premises.append(p)
        hypotheses.append(h)
        labels.append(_normalize_label(y, where=f"{dataset_id} label"))
    if dropped:
        logger.info("%s/%s: dropped %d pairs without a gold label", task, split, dropped)
    return NLIData(
        task,
        split,
        premises,
        hypotheses,
        labels,
        f"hub:{dataset_id}[{split_map[split]}]",
        meta={"dropped_without_label": str(dropped)},
    )


# --------------------------------------------------------------------------- user data
def _columns_of(data: Any) -> dict[str, list[Any]]:
    if isinstance(data, pd.DataFrame):
        return {str(c): data[c].tolist() for c in data.columns}
    if isinstance(data, dict):
        return {str(k): list(v) for k, v in data.items()}
    if hasattr(data, "column_names"):  # datasets.Dataset
        return {str(c): list(data[c]) for c in data.column_names}
    raise TypeError(type(data).__name__)


def as_nli(
    data: Any,
    premise_column: str = "premise",
    hypothesis_column: str = "hypothesis",
    label_column: str = "label",
    name: str = "user",
) -> NLIData:
    """Turn the user's own NLI pairs into :class:`NLIData`.

    Accepts an :class:`NLIData` (returned as is), a list of ``(premise, hypothesis, label)``
    tuples, a ``pandas.DataFrame``, a dict of columns or a ``datasets.Dataset``. Labels are names
    (any case) or ids 0, 1, 2 (entailment, neutral, contradiction).
    """
    if isinstance(data, NLIData):
        return data
    if isinstance(data, list | tuple):
        rows = list(data)
        for i, row in enumerate(rows):
            if isinstance(row, str) or not isinstance(row, Sequence) or len(row) != 3:
                raise ValueError(
                    f"row {i} is {row!r}: each item must be a (premise, hypothesis, label) tuple"
                )
        columns = {
            premise_column: [r[0] for r in rows],
            hypothesis_column: [r[1] for r in rows],
            label_column: [r[2] for r in rows],
        }
    else:
        try:
            columns = _columns_of(data)
        except TypeError:
            raise TypeError(
                f"cannot read NLI pairs from {type(data).__name__}; pass a list of (premise, "
                "hypothesis, label) tuples, a DataFrame, a dict of columns or a datasets.Dataset"
            ) from None
    missing = [c for c in (premise_column, hypothesis_column, label_column) if c not in columns]
    if missing:
        raise ValueError(
            f"NLI data lacks column(s) {missing}; it has {list(columns)}. Name them with "
            "premise_column=, hypothesis_column=, label_column=."
        )
    premises, hypotheses = columns[premise_column], columns[hypothesis_column]
    check_same_length(
        {"premises": premises, "hypotheses": hypotheses, "labels": columns[label_column]}
    )
    for what, texts in (("premise", premises), ("hypothesis", hypotheses)):
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(
                    f"{what} of row {i} is {text!r}: every premise and hypothesis must be a "
                    "non-empty string (drop or fill that row)"
                )
    labels = [
        _normalize_label(y, where=f"label of row {i}") for i, y in enumerate(columns[label_column])
    ]
    return NLIData(name, "user", list(premises), list(hypotheses), labels, "user data")


# --------------------------------------------------------------------------- training shapes
def _frame(columns: dict[str, list[Any]], data: NLIData, rule: str) -> DataTable:
    return DataTable(
        pd.DataFrame(columns),
        source=data.source,
        files=tuple(str(f) for f in data.files),
        note=rule,
    )


def _by_premise(data: NLIData) -> dict[str, dict[str, list[str]]]:
    """premise -> {label: [hypotheses in data order]}, premises in first-appearance order."""
    groups: dict[str, dict[str, list[str]]] = {}
    for p, h, y in zip(data.premises, data.hypotheses, data.labels, strict=True):
        groups.setdefault(p, {label: [] for label in NLI_LABELS})[y].append(h)
    return groups


def labelled_pairs(data: Any) -> DataTable:
    """(premise, hypothesis, label id) rows: the input of the softmax objective."""
    nli = as_nli(data)
    return _frame(
        {"premise": nli.premises, "hypothesis": nli.hypotheses, "label": nli.label_ids},
        nli,
        "every pair; label ids 0 entailment, 1 neutral, 2 contradiction",
    )


def entailment_pairs(data: Any) -> DataTable:
    """(anchor, positive) = (premise, entailed hypothesis) for every entailment pair (MNRL)."""
    nli = as_nli(data)
    rows = [
        (p, h)
        for p, h, y in zip(nli.premises, nli.hypotheses, nli.labels, strict=True)
        if y == "entailment"
    ]
    return _frame(
        {"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows]},
        nli,
        "every entailment pair, in data order",
    )


def nli_triplets(data: Any) -> DataTable:
    """(anchor, positive, negative) = (premise, entailment, contradiction) triplets.

    Rule: premises are grouped by exact text. For every premise with at least one entailment and
    one contradiction hypothesis, its :math:`k`-th entailment is paired with its
    :math:`(k \\bmod C)`-th contradiction (:math:`C` contradictions), so every entailment is used
    once and contradictions are reused in turn. Premises lacking either are skipped. Deterministic.
    """
    nli = as_nli(data)
    rows = []
    for premise, hyps in _by_premise(nli).items():
        ent, con = hyps["entailment"], hyps["contradiction"]
        if ent and con:
            rows += [(premise, e, con[k % len(con)]) for k, e in enumerate(ent)]
    return _frame(
        {
            "anchor": [r[0] for r in rows],
            "positive": [r[1] for r in rows],
            "negative": [r[2] for r in rows],
        },
        nli,
        "k-th entailment of a premise with its (k mod C)-th contradiction",
    )


def group_positives(premise: str, entailments: Sequence[str], num_positives: int) -> list[str]:
    """Rule 2 of :func:`supmpn_groups`: a premise's ``P`` positives from its (non-empty)
    entailment hypotheses, padded with the premise itself once, then with its entailments again."""
    positives = list(entailments[:num_positives])
    if len(positives) < num_positives:
        positives.append(premise)  # a dropout-noise positive, as in SimCSE
    k = 0
    while len(positives) < num_positives:
        positives.append(entailments[k % len(entailments)])
        k += 1
    return positives


def group_negatives(
    premise: str,
    hyps: dict[str, list[str]],
    num_negatives: int,
    rng: np.random.Generator,
    pool: tuple[np.ndarray, np.ndarray],
) -> list[str]:
    """Rule 3 of :func:`supmpn_groups`: a premise's ``Q`` negatives, its contradictions first,
    then hypotheses (any label) of other premises drawn with ``rng`` from ``pool`` (every
    hypothesis and its premise)."""
    negatives = list(hyps["contradiction"][:num_negatives])
    own = {premise, *hyps["entailment"], *hyps["neutral"], *hyps["contradiction"]}
    pool_texts, pool_premises = pool
    tries = 0
    while len(negatives) < num_negatives:
        j = int(rng.integers(len(pool_texts)))
        tries += 1
        if pool_premises[j] != premise and pool_texts[j] not in own:
            negatives.append(str(pool_texts[j]))
        elif tries > 100 * num_negatives + 1000:
            raise ValueError(
                "cannot find negatives from other premises: the data holds (almost) only one "
                "premise; pass num_negatives=0 or add data"
            )
    return negatives


def supmpn_groups(
    data: Any, num_positives: int = 2, num_negatives: int = 2, seed: int = 0
) -> DataTable:
    """SupMPN groups: one premise (anchor), ``P`` positives and ``Q`` negatives per row.

    Columns: ``anchor, positive_1 .. positive_P, negative_1 .. negative_Q``.

    **Our rule.** Dehghan & Amasyali (2022), section 5.2, take full groups from the premises
    with five entailments and five contradictions, and pad the others with copies of the anchor
    (positives) and with entailments or contradictions of other anchors (negatives). This rule
    keeps a premise's own hypotheses first and pads in the same spirit:

    1. Premises are grouped by exact text; a premise without an entailment hypothesis is
       skipped (there is no supervised positive for it). One group per premise.
    2. Positives: its entailment hypotheses in data order (the first ``P``). If fewer than ``P``,
       the **premise itself** is added once (a dropout-noise positive as in SimCSE: it is
       encoded again in the same forward pass, with another dropout mask), then its entailment
       hypotheses are reused in turn until there are ``P``.
    3. Negatives: its contradiction hypotheses in data order (the first ``Q``). If fewer than
       ``Q``, the rest are hypotheses (any label) of **other** premises, drawn at random with
       ``numpy.random.default_rng(seed)`` (never the anchor's own hypotheses or the anchor).
       Neutral hypotheses of the premise itself are never used.

    Deterministic for a given ``seed``.
    """
    if int(num_positives) != num_positives or num_positives < 1:
        raise ValueError(f"num_positives must be an integer >= 1, got {num_positives!r}")
    if int(num_negatives) != num_negatives or num_negatives < 0:
        raise ValueError(f"num_negatives must be an integer >= 0, got {num_negatives!r}")
    nli = as_nli(data)
    groups = _by_premise(nli)
    pool = (np.asarray(nli.hypotheses, dtype=object), np.asarray(nli.premises, dtype=object))
    rng = np.random.default_rng(seed)
    rows: list[list[str]] = []
    for premise, hyps in groups.items():
        if not hyps["entailment"]:
            continue
        positives = group_positives(premise, hyps["entailment"], num_positives)
        negatives = group_negatives(premise, hyps, num_negatives, rng, pool)
        rows.append([premise, *positives, *negatives])
    names = (
        ["anchor"]
        + [f"positive_{i + 1}" for i in range(num_positives)]
        + [f"negative_{i + 1}" for i in range(num_negatives)]
    )
    columns = {name: [r[i] for r in rows] for i, name in enumerate(names)}
    return _frame(
        columns,
        nli,
        f"SupMPN groups (P = {num_positives}, Q = {num_negatives}), sbert_tutor's padding rule "
        "(see supmpn_groups)",
    )


def label_names(ids: Iterable[int]) -> list[str]:
    """Label ids back to names."""
    return [NLI_LABELS[int(i)] for i in ids]
