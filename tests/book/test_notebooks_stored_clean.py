"""The chapters are stored without outputs: what the book shows is computed when it is built (CI
executes every chapter), never a stale output saved with the source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb")) + sorted((BOOK / "colab").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(BOOK)))
def test_no_outputs_are_stored(path: Path) -> None:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    stored = [
        i
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "code"
        and (cell.get("outputs") or cell.get("execution_count") is not None)
        or "execution" in cell.get("metadata", {})
    ]
    assert not stored, (
        f"{path.name}: cells {stored} carry outputs or execution records; clear them "
        "(e.g. jupyter nbconvert --clear-output --inplace, or run nbmake without --overwrite)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(BOOK)))
def test_every_cell_has_a_unique_id(path: Path) -> None:
    """nbformat 4.5 requires a cell id (nbformat warns now and will refuse later; links to a
    cell need one)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    missing = [i for i, cell in enumerate(cells) if not cell.get("id")]
    assert not missing, f"{path.name}: cells {missing} have no id; give each a unique one"
    ids = [cell["id"] for cell in cells]
    repeated = sorted({x for x in ids if ids.count(x) > 1})
    assert not repeated, f"{path.name}: ids {repeated} are used by more than one cell"
