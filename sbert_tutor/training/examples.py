"""Training examples: the user's data, whatever its container, as rows of texts and one label.

Every objective reads examples of one shape: ``k`` texts per example (a pair, a triplet, a SupMPN
group) and, for some objectives, one label (a score or a class id). :func:`to_examples` turns any
of these into :class:`Examples`, checking every row:

* a list of tuples, e.g. ``[("A man eats.", "Someone eats.", 4.2), ...]`` (the label last);
* a ``pandas.DataFrame``, a dict of columns, or a ``datasets.Dataset``: the label is the column
  named ``label``/``score`` (or ``label_column=``), the texts are the other columns in order (or
  ``text_columns=``);
* :class:`~sbert_tutor.data.STSData` (sentence1, sentence2, score),
  :class:`~sbert_tutor.data.NLIData` (premise, hypothesis, label) and a
  :class:`~sbert_tutor.data.table.DataTable` (its columns, source and files).
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.data.nli import NLIData
from sbert_tutor.data.sts import STSData
from sbert_tutor.data.table import DataTable
from sbert_tutor.validation import OptionError, check_same_length

__all__ = ["Examples", "to_examples"]

#: Column names taken as the label when ``label_column`` is not given, in this order (matched
#: ignoring case: ``Score`` is a score column).
_LABEL_COLUMNS: tuple[str, ...] = ("label", "score", "labels", "scores")
_LABEL_KINDS = ("float", "int")


@dataclass(frozen=True)
class Examples:
    """Rows of ``width`` texts (and optionally one label each), ready for an objective.

    Attributes:
        texts: one tuple of texts per example, all of the same length.
        labels: ``float64`` scores or ``int64`` class ids, one per example; ``None`` if unlabelled.
        columns: a name for each text position (for messages and logs).
        source: where the data came from, in words; files: local files read (for provenance).
        places: ``FILE:LINE`` of each example read from a training file (``None`` otherwise),
            so that a check on the examples can name the line.
    """

    texts: list[tuple[str, ...]]
    labels: np.ndarray | None
    columns: tuple[str, ...]
    source: str = "user data"
    files: tuple[Path, ...] = ()
    places: tuple[str, ...] | None = None

    def place(self, i: int) -> str:
        """Where example ``i`` came from: ``FILE:LINE`` for a file, else ``example i``."""
        return f"example {i}" if self.places is None else self.places[i]

    def __post_init__(self) -> None:
        if self.labels is not None:
            check_same_length({"texts": self.texts, "labels": self.labels})

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def width(self) -> int:
        """Texts per example."""
        return len(self.columns)

    def subset(self, indices: Sequence[int]) -> Examples:
        """The examples at ``indices`` (in that order)."""
        idx = list(indices)
        return Examples(
            texts=[self.texts[i] for i in idx],
            labels=None if self.labels is None else self.labels[idx],
            columns=self.columns,
            source=self.source,
            files=self.files,
            places=None if self.places is None else tuple(self.places[i] for i in idx),
        )

    def fingerprint(self) -> str:
        """sha256 of texts and labels: a checkpoint checks it is resumed on the same data."""
        digest = hashlib.sha256()
        for row in self.texts:
            digest.update("\x1f".join(row).encode("utf-8"))
            digest.update(b"\x1e")
        if self.labels is not None:
            digest.update(np.ascontiguousarray(self.labels).tobytes())
        return digest.hexdigest()


def _table_columns(data: Any) -> tuple[dict[str, list[Any]], str, tuple[Path, ...]] | None:
    """Columns of a table-like input, its source and files; ``None`` if it is not a table."""
    if isinstance(data, DataTable):
        cols = {str(c): data.table[c].tolist() for c in data.table.columns}
        return cols, data.source, tuple(Path(f) for f in data.files)
    if isinstance(data, STSData):
        cols = {"sentence1": data.sentences1, "sentence2": data.sentences2, "score": data.scores}
        return cols, f"{data.name}/{data.split} ({data.source})", data.files
    if isinstance(data, NLIData):
        cols = {"premise": data.premises, "hypothesis": data.hypotheses, "label": data.labels}
        return cols, f"{data.name}/{data.split} ({data.source})", data.files
    if isinstance(data, pd.DataFrame):
        return {str(c): data[c].tolist() for c in data.columns}, "user DataFrame", ()
    if isinstance(data, Mapping):
        return {str(k): list(v) for k, v in data.items()}, "user columns", ()
    if hasattr(data, "column_names") and hasattr(data, "__getitem__"):  # datasets.Dataset
        return {str(c): list(data[c]) for c in data.column_names}, "user datasets.Dataset", ()
    return None


def _from_rows(
    data: Any, label: str | None, what: str
) -> tuple[dict[str, list[Any]], str, tuple[Path, ...]]:
    if isinstance(data, str) or not isinstance(data, Sequence):
        raise TypeError(
            f"cannot read training examples from {type(data).__name__}: {what}; pass a list of "
            "tuples, a pandas DataFrame, a dict of columns or a datasets.Dataset"
        )
    rows = list(data)
    if not rows:
        raise ValueError("the training data is empty: pass at least one example")
    if all(isinstance(r, Mapping) for r in rows):
        frame = pd.DataFrame(rows)
        return {str(c): frame[c].tolist() for c in frame.columns}, "user rows", ()
    width = None
    for i, row in enumerate(rows):
        if isinstance(row, str) or not isinstance(row, Sequence):
            raise TypeError(
                f"example {i} is {row!r}: each example must be a tuple of texts"
                + (" followed by its label" if label else "")
                + f" ({what})"
            )
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise ValueError(
                f"example {i} has {len(row)} items but example 0 has {width}: every example "
                f"needs the same number of items ({what})"
            )
    assert width is not None
    n_texts = width - 1 if label else width
    names = [f"text{j + 1}" for j in range(n_texts)] + (["label"] if label else [])
    return {name: [r[j] for r in rows] for j, name in enumerate(names)}, "user rows", ()


def _row_error(error: Exception, row: int, in_a_file: str) -> Exception:
    """``error`` about example ``row``; ``in_a_file`` is its message for a training file, where
    :func:`to_examples` puts ``FILE:LINE:`` before it."""
    error.row = row  # type: ignore[attr-defined]
    error.in_a_file = in_a_file  # type: ignore[attr-defined]
    return error


def _scores(values: list[Any], column: str) -> np.ndarray:
    out = np.empty(len(values), dtype=np.float64)
    for i, value in enumerate(values):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise _row_error(
                TypeError(f"{column}[{i}] = {value!r} is not a number"),
                i,
                f"column {column!r} is {value!r}, which is not a number: fix or remove that line",
            ) from None
        if not np.isfinite(number):
            raise _row_error(
                ValueError(
                    f"{column}[{i}] is {number}: gold scores must be finite numbers; drop that "
                    "pair or fix its label"
                ),
                i,
                f"column {column!r} is {value!r}: scores must be finite numbers; fix or remove that line",
            )
        out[i] = number
    return out


def _labels(values: list[Any], kind: str, column: str, label_names: Sequence[str] | None):
    if kind == "float":
        return _scores(values, column)
    lookup = {name.lower(): i for i, name in enumerate(label_names or ())}
    out = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        if isinstance(value, str) and value.strip().lower() in lookup:
            out[i] = lookup[value.strip().lower()]
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not np.isfinite(number) or not number.is_integer() or number < 0:
            names = f" or a name in {list(label_names)}" if label_names else ""
            raise _row_error(
                ValueError(
                    f"{column}[{i}] = {value!r} is not a class id: labels must be integers >= 0"
                    f"{names}; drop or fix that example"
                ),
                i,
                f"column {column!r} is {value!r}, not a class id: labels are integers >= 0{names}",
            )
        out[i] = int(number)
    if label_names is not None and len(out) and out.max() >= len(label_names):
        bad = int(np.argmax(out >= len(label_names)))
        raise _row_error(
            ValueError(
                f"{column}[{bad}] = {out[bad]} is out of range: there are {len(label_names)} "
                f"classes ({list(label_names)}), ids 0..{len(label_names) - 1}"
            ),
            bad,
            f"column {column!r} is {out[bad]}, out of range: there are {len(label_names)} classes "
            f"({list(label_names)}), ids 0..{len(label_names) - 1}",
        )
    return out


def _column(name: str, columns: Mapping[str, Any], option: str) -> str:
    """The column called ``name``, matched exactly, else ignoring case; an error names
    ``option`` (``label_column`` or ``text_columns``) and the columns there are."""
    if name in columns:
        return name
    matches = [c for c in columns if c.lower() == str(name).lower()]
    if len(matches) == 1:
        return matches[0]
    why = f"several columns match {name!r} ignoring case" if matches else f"no column {name!r}"
    close = difflib.get_close_matches(str(name), list(columns), n=1)
    example: Any = close[0] if close else list(columns)[-1]
    if option == "text_columns":
        example = [example]
    raise OptionError(
        f"{why} in the training data; it has {list(columns)}: name one of them, e.g. {{{option}}}",
        {option: example},
    )


def to_examples(
    data: Any,
    *,
    label: str | None = None,
    num_texts: int | None = None,
    min_texts: int = 1,
    text_columns: Sequence[str] | None = None,
    label_column: str | None = None,
    label_names: Sequence[str] | None = None,
    what: str = "training data",
) -> Examples:
    """Turn the user's data into :class:`Examples`, or raise an error that says what to fix.

    Args:
        data: :class:`Examples`, a list of tuples, a DataFrame, a dict of columns, a
            ``datasets.Dataset``, ``STSData`` or ``NLIData``.
        label: ``"float"`` (scores), ``"int"`` (class ids) or ``None`` (texts only).
        num_texts: exactly this many texts per example (``None``: at least ``min_texts``).
        text_columns, label_column: choose the columns of a table explicitly.
        label_names: class names, so string labels (``"entailment"``) map to their ids.
        what: a description of the expected shape, used in error messages.
    """
    if label is not None and label not in _LABEL_KINDS:
        raise ValueError(f"label must be one of {_LABEL_KINDS} or None, got {label!r}")
    if isinstance(data, Examples):
        examples = data
        if (examples.labels is None) != (label is None):
            raise ValueError(
                f"these examples {'have no' if examples.labels is None else 'have'} labels, "
                f"but {what}"
            )
    else:
        found = _table_columns(data)
        columns, source, files = found if found is not None else _from_rows(data, label, what)
        # a training file (sbert_tutor.training.sources.TrainingFile): FILE:LINE of a row
        where = getattr(data, "row_place", None) if isinstance(data, DataTable) else None
        try:
            examples = _examples_from_columns(
                columns, source, files, label, text_columns, label_column, label_names, what
            )
        except (TypeError, ValueError) as exc:
            if where is None or not hasattr(exc, "row"):
                raise
            raise ValueError(f"{where(exc.row)}: {exc.in_a_file}") from None
        if where is not None:
            examples = replace(examples, places=tuple(where(i) for i in range(len(examples))))
    if num_texts is not None and examples.width != num_texts:
        raise ValueError(
            f"expected {num_texts} texts per example but got {examples.width} "
            f"({', '.join(examples.columns)}): {what}"
        )
    if examples.width < min_texts:
        raise ValueError(
            f"expected at least {min_texts} texts per example but got {examples.width}: {what}"
        )
    if len(examples) == 0:
        raise ValueError("the training data is empty: pass at least one example")
    return examples


def _examples_from_columns(
    columns: dict[str, list[Any]],
    source: str,
    files: tuple[Path, ...],
    label: str | None,
    text_columns: Sequence[str] | None,
    label_column: str | None,
    label_names: Sequence[str] | None,
    what: str,
) -> Examples:
    if not columns:
        raise ValueError("the training data has no columns")
    text_columns = (
        None
        if text_columns is None
        else [_column(c, columns, "text_columns") for c in text_columns]
    )
    if label_column is not None:
        label_column = _column(label_column, columns, "label_column")
    else:
        lowered = {c.lower(): c for c in reversed(list(columns))}
        label_column = next((lowered[c] for c in _LABEL_COLUMNS if c in lowered), None)
        if label is not None and label_column is None:
            others = [c for c in columns if c not in (text_columns or ())]
            raise OptionError(
                f"the training data has no label column (looked for {list(_LABEL_COLUMNS)}, in "
                f"any case, in {list(columns)}): {what}. Name it, e.g. {{label_column}}",
                {"label_column": others[-1] if others else "score"},
            )
    if text_columns is None:
        if label is None and label_column is not None:
            raise OptionError(
                f"this objective takes texts only, but the data has a label column "
                f"{label_column!r}: {what}. Choose the texts, e.g. {{text_columns}}, or "
                "reshape the data first (e.g. sbert_tutor.data.entailment_pairs for NLI pairs).",
                {"text_columns": [c for c in columns if c != label_column]},
            )
        text_columns = [c for c in columns if c != label_column]
    text_columns = list(text_columns)
    if not text_columns:
        raise ValueError(f"the training data has no text column: {what}")
    check_same_length({c: columns[c] for c in [*text_columns, *([label_column] if label else [])]})
    for c in text_columns:
        for i, text in enumerate(columns[c]):
            if not isinstance(text, str):
                raise _row_error(
                    TypeError(
                        f"column {c!r}, example {i} is {type(text).__name__} ({text!r}), not a "
                        "string: drop or fill missing texts first"
                    ),
                    i,
                    f"column {c!r} is missing (null): give it text"
                    if text is None
                    else f"column {c!r} is {type(text).__name__} ({text!r}), not a string: give it text",
                )
            if not text.strip():
                raise _row_error(
                    ValueError(
                        f"column {c!r}, example {i} is an empty string: remove that example or "
                        "give it text"
                    ),
                    i,
                    f"column {c!r} is empty: remove that line or give it text",
                )
    texts = list(zip(*(columns[c] for c in text_columns), strict=True))
    labels = None
    if label is not None:
        assert label_column is not None
        labels = _labels(list(columns[label_column]), label, label_column, label_names)
    return Examples(texts, labels, tuple(text_columns), source, files)
