"""Typed results: a tidy table plus what it means and how it was made.

Every evaluator returns a frozen dataclass whose ``table`` is the tidy ``pandas.DataFrame`` and
whose other fields are typed: ``note`` (one line saying what the numbers are), ``provenance``
(:func:`sbert_tutor.provenance.provenance`) and whatever details the evaluator keeps (the run,
per-subset values, ...). A notebook cell that ends with a result shows its table; code reads the
fields by name instead of digging in ``DataFrame.attrs``.

Subclasses are declared with ``@dataclass(frozen=True, eq=False, repr=False, kw_only=True)``:
``repr=False`` keeps the table's own text, ``eq=False`` because tables do not compare to a bool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

__all__ = ["Result", "ShowsTable"]


class ShowsTable:
    """Displays as its ``table`` (text and HTML), so a result prints like the table it holds."""

    table: pd.DataFrame

    def __repr__(self) -> str:
        return repr(self.table)

    def _repr_html_(self) -> str | None:
        return self.table._repr_html_()


@dataclass(frozen=True, eq=False, repr=False)
class Result(ShowsTable):
    """A table of numbers, what they are (``note``) and how they were made (``provenance``)."""

    table: pd.DataFrame
    note: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)

    #: The name of the main number, as sentence-transformers' evaluators call it (``None``: the
    #: result has no single main number).
    primary_metric: ClassVar[str | None] = None

    @property
    def main_score(self) -> float:
        """The main number (:attr:`primary_metric`) as a float: what a training log, a model
        card or a comparison keeps of this result."""
        raise TypeError(f"{type(self).__name__} has no single main number; read its table")
