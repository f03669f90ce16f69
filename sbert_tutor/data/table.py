"""Training data in columns, with where it came from.

A :class:`DataTable` is what the NLI shapes (:func:`~sbert_tutor.data.nli.nli_triplets`, ...)
and a user's training file return: the examples as a ``pandas.DataFrame`` (one row an example,
one column a text position or the label), plus ``source`` (in words), the data ``files`` read
(hashed into a training run's provenance) and a ``note`` on how it was built. Training reads all
of it; a notebook cell that ends with one shows the table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from sbert_tutor.results import ShowsTable

__all__ = ["DataTable", "as_frame"]


@dataclass(frozen=True, eq=False, repr=False)
class DataTable(ShowsTable):
    """Examples in columns and where they came from.

    Attributes:
        table: one row an example (texts, and a ``label``/``score`` column where there is one).
        source: where the data came from, in words (recorded in training logs).
        files: local files the examples were read from (hashed into provenance).
        note: how the table was built from its source (e.g. the pairing rule).
    """

    table: pd.DataFrame
    source: str = "user data"
    files: tuple[str, ...] = ()
    note: str = ""

    def __len__(self) -> int:
        return len(self.table)

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.table.columns]

    def select(self, *columns: str) -> DataTable:
        """The same examples with only ``columns`` (in that order); source and files kept."""
        return replace(self, table=self.table[list(columns)])


def as_frame(data: DataTable | pd.DataFrame | Any) -> pd.DataFrame:
    """The ``DataFrame`` of a :class:`DataTable`; a ``DataFrame`` as it is."""
    table = data.table if isinstance(data, DataTable) else data
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"expected a DataTable or a pandas DataFrame, got {type(data).__name__}")
    return table
