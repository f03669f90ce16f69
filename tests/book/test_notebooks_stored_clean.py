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
