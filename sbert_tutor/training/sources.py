"""Named training sets, shaped for a given loss (what ``sbert-tutor train --train NAME`` loads).

=============  ===============================================================================
name           data
=============  ===============================================================================
``stsb``       STS benchmark train (5,749 pairs, scores 0-5): regression (``cosine``)
``sick``       SICK train (4,500 pairs): relatedness 1-5 for ``cosine``, entailment labels else
``nli``        SNLI + MultiNLI train from the hub (the paper's AllNLI); with ``SBERT_TUTOR_DATA``
               set, the SNLI dev+test stand-in (:func:`~sbert_tutor.data.nli.load_nli_train`)
``allnli``,    one NLI train split from the hub
``snli``,
``multinli``
a file path    your own ``.tsv`` / ``.csv`` / ``.jsonl`` with a header: text columns (+ label)
=============  ===============================================================================

What NLI pairs become is the objective's choice (:meth:`Objective.shape_nli
<sbert_tutor.training.objectives.Objective.shape_nli>`): labelled pairs (softmax), (premise,
entailment) pairs (mnrl, contrastive), (premise, entailment, contradiction) triplets (triplet,
and mnrl with ``hard_negatives=True``) or SupMPN groups (supmpn); see :mod:`sbert_tutor.data.nli`.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from sbert_tutor.data import nli as nli_data
from sbert_tutor.data.sts import load_sts
from sbert_tutor.data.table import DataTable
from sbert_tutor.training.objectives import OBJECTIVES, Objective, objective_class
from sbert_tutor.validation import OptionError, check_choice

__all__ = ["TrainingFile", "TrainingFileError"]

#: The named training sets (``sbert-tutor train --train NAME``).
_TRAIN_SETS = ("stsb", "sick", "nli", "allnli", "snli", "multinli")
#: The named sets that carry similarity scores (SICK carries entailment labels too).
_SCORE_SETS = ("stsb", "sick")


#: The suffixes of a training file, and how each is read (``read_training_file``).
_FILE_SUFFIXES = (".tsv", ".txt", ".csv", ".jsonl", ".json")


class TrainingFileError(ValueError):
    """A training file that cannot be read: the message starts with ``FILE:LINE:``."""


@dataclass(frozen=True, eq=False, repr=False)
class TrainingFile(DataTable):
    """A user's training file, read: its table, and the file line of every row.

    Attributes:
        lines: the 1-based line of the file each row was read from (for messages).
    """

    lines: tuple[int, ...] = ()

    def row_place(self, row: int) -> str:
        """``FILE:LINE`` of data row ``row``."""
        return f"{self.files[0]}:{self.lines[row]}"


def _file_kind(path: Path) -> str | None:
    suffixes = [s.lower() for s in path.suffixes]
    if ".jsonl" in suffixes or ".json" in suffixes:
        return "jsonl"
    if ".csv" in suffixes:
        return "csv"
    if ".tsv" in suffixes or ".txt" in suffixes:
        return "tsv"
    return None


def _read_delimited(path: Path, kind: str) -> tuple[list[str], list[list[str]], list[int]]:
    dialect = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if kind == "tsv" else {}
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, **dialect)
        try:
            header = next(reader, None)
            rows, lines = [], []
            for row in reader:
                if not row:  # a blank line
                    continue
                if len(row) != len(header or ()):
                    raise TrainingFileError(
                        f"{path}:{reader.line_num}: {len(row)} field(s), but the header (line 1) "
                        f"has {len(header or ())} ({', '.join(header or ())}): every line needs "
                        f"one field per column"
                        + (" (is there a tab inside a text?)" if kind == "tsv" else "")
                    )
                rows.append(row)
                lines.append(reader.line_num)
        except csv.Error as exc:
            raise TrainingFileError(f"{path}:{reader.line_num}: {exc}") from None
    if not header or not any(h.strip() for h in header):
        raise TrainingFileError(f"{path}:1: no header line: the first line names the columns")
    return header, rows, lines


def _read_jsonl(path: Path) -> tuple[list[str], list[list[Any]], list[int]]:
    header: list[str] | None = None
    rows, lines = [], []
    with open(path, encoding="utf-8-sig") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TrainingFileError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise TrainingFileError(
                    f"{path}:{number}: a JSON {type(record).__name__}, but every line must be an "
                    'object such as {"sentence1": "...", "sentence2": "...", "score": 4.2}'
                )
            if header is None:
                header = list(record)
            elif list(record) != header and set(record) != set(header):
                raise TrainingFileError(
                    f"{path}:{number}: keys {list(record)}, but line {lines[0]} has {header}: "
                    "every line needs the same keys"
                )
            rows.append([record[k] for k in header])
            lines.append(number)
    return header or [], rows, lines


def read_training_file(path: str | Path) -> TrainingFile:
    """A user's training file (``sbert_tutor.commands.train.FILE_FORMAT``): ``.tsv`` / ``.csv`` with a header line
    (quotes are text in TSV) or ``.jsonl`` (one JSON object a line).

    Raises:
        FileNotFoundError: no such file.
        TrainingFileError: a line that does not fit (``FILE:LINE: ...``), no header, no rows.
    """
    p = Path(path)
    kind = _file_kind(p)
    if kind is None:
        raise ValueError(f"cannot read {p}: use a .tsv, .csv or .jsonl file with a header")
    if not p.is_file():
        raise FileNotFoundError(f"no such training file: {p}")
    try:
        header, rows, lines = _read_jsonl(p) if kind == "jsonl" else _read_delimited(p, kind)
    except UnicodeDecodeError as exc:
        raise TrainingFileError(f"{p}: not UTF-8 text ({exc.reason}); save it as UTF-8") from None
    if not rows:
        raise TrainingFileError(f"{p}:2: no data rows after the header: add at least one")
    frame = pd.DataFrame(rows, columns=header, dtype=object)  # a JSON null stays None
    return TrainingFile(frame, source=f"file {p}", files=(str(p),), lines=tuple(lines))


def _looks_like_a_file(name: str) -> bool:
    """Whether ``--train NAME`` means a file: a known suffix or a folder in it."""
    path = Path(name)
    return path.suffix.lower() in _FILE_SUFFIXES or len(path.parts) > 1


def check_training_source(name: str) -> str | None:
    """``None`` for an existing data file, else the checked name of a set in ``_TRAIN_SETS``.

    Raises:
        FileNotFoundError: ``name`` looks like a file (a known suffix, or a folder in it) that
            is not there.
        ValueError: neither a file nor a known set; the message suggests the closest name.
    """
    path = Path(name)
    if path.is_file():
        return None
    if _looks_like_a_file(name):
        raise FileNotFoundError(
            f"no such training file: {name} (looked in {Path.cwd()}); the named sets are "
            f"{', '.join(_TRAIN_SETS)}"
        )
    return check_choice(
        name, _TRAIN_SETS, "training set", other=" or a path to a .tsv/.csv/.jsonl file"
    )


def load_training_data(
    name: str,
    loss: str | type[Objective],
    options: Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
) -> Any:
    """Load a named training set (or a file) in the shape ``loss`` reads.

    Args:
        name: one of ``_TRAIN_SETS`` or a path to a file.
        loss: a registered objective's name or class (:data:`~sbert_tutor.training.OBJECTIVES`).
        options: the objective's options, which may shape the data (``hard_negatives`` of mnrl,
            ``num_positives`` / ``num_negatives`` of supmpn).
        seed: for shapes that draw at random (SupMPN's padding negatives).

    Returns:
        ``STSData`` (with its ``score_range``) for objectives that read scores, a
        :class:`~sbert_tutor.data.table.DataTable` otherwise.

    Raises:
        ValueError: an unknown name, or a data set that does not carry what the loss needs.
    """
    cls = loss if isinstance(loss, type) else objective_class(loss)
    options = {**cls.option_defaults(), **(options or {})}
    key = check_training_source(name)
    if key is None:
        return read_training_file(Path(name))
    if not (cls.reads_scores or cls.trains_on_nli()):
        raise OptionError(
            f"no named training set carries what the {cls.name} loss needs ("
            f"{cls.describe_inputs()}): train on your own file or rows with those columns, "
            "e.g. {train}",
            {"train": "my_data.tsv"},
        )
    scores = [n for n, c in OBJECTIVES.items() if c.reads_scores]
    if key in _SCORE_SETS and cls.reads_scores:
        return load_sts("stsb" if key == "stsb" else "sickr", "train")
    if key == "stsb":
        raise OptionError(
            f"stsb carries similarity scores, which the {cls.name} loss cannot use: use a loss "
            f"that reads scores ({', '.join(scores)}), e.g. {{loss}}, or train the {cls.name} "
            "loss on NLI, e.g. {train} (or sick)",
            {"loss": scores[0], "train": "nli"},
        )
    if cls.reads_scores:
        nli_losses = [n for n, c in OBJECTIVES.items() if c.trains_on_nli()]
        raise OptionError(
            f"{key} carries entailment labels, not similarity scores: the {cls.name} loss needs "
            f"scores, e.g. {{train}} (or sick); on {key} use one of {', '.join(nli_losses)}",
            {"train": "stsb"},
        )
    pairs = nli_data.load_nli_train() if key == "nli" else nli_data.load_nli(key, "train")
    return cls.shape_nli(pairs, seed, options)
