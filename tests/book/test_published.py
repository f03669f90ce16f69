"""Published numbers: each carries a source whose bib entry exists, and each number is checked
against the text of its source paper (when the source papers' text is beside the data folder)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sbert_tutor.book import published
from sbert_tutor.book.reporting import measured_vs_published
from sbert_tutor.losses import VALID_FEATURES

BIB = Path(__file__).resolve().parents[2] / "book" / "references.bib"


def _papers() -> Path | None:
    data = os.environ.get("SBERT_TUTOR_DATA", "").strip()
    folder = Path(data).expanduser().parent / "papers" if data else None
    return folder if folder is not None and folder.is_dir() else None


needs_papers = pytest.mark.skipif(_papers() is None, reason="the source papers' text is absent")


def _sources() -> list[published.Source]:
    found = [value for value in vars(published).values() if isinstance(value, published.Source)]
    for table in (published.MSMARCO_FULL_COLLECTION, published.WIKISEC, published.STSB_TEST):
        found += [row[-1] for row in table.values()]
    return found


def test_rows_carry_sources_and_are_labelled_published():
    rows = (
        published.published_table6_rows()
        + published.published_table2_rows()
        + published.published_wikisec_rows()
        + published.published_stsb_rows()
    )
    assert all(r["source"] and isinstance(r["value"], float) for r in rows)
    assert len(published.published_table6_rows()) == len(published.SBERT_TABLE6_CONCAT) == 7
    assert all(set(k) <= set(VALID_FEATURES) for k in published.SBERT_TABLE6_CONCAT)
    assert "± 0.19" in published.published_table2_rows()[0]["setup"]
    with pytest.raises(KeyError):
        published.published_table6_rows([("v",)])
    frame = measured_vs_published([], published.published_wikisec_rows())
    assert frame["kind"].str.startswith("published:").all()
    with pytest.raises(ValueError, match="needs its source"):
        measured_vs_published([], [{"setup": "x", "metric": "m", "value": 1.0}])


def test_every_cited_paper_has_a_bib_entry():
    keys = set(re.findall(r"@\w+\{([^,]+),", BIB.read_text(encoding="utf-8")))
    cited = {s.bib for s in _sources() if s.bib}
    assert cited and cited <= keys, cited - keys


@needs_papers
def test_sbert_numbers_match_the_paper_text():
    notes = (_papers() / "sbert_paper_notes_korean.txt").read_text(encoding="utf-8")
    for model, row in published.SBERT_TABLE1.items():
        line = "\t".join(f"{v:.2f}" for v in row)
        assert line in notes, model
    for name, (mean, std, _) in published.SBERT_TABLE2_STSB.items():
        assert f"{mean:.2f} ± {std:.2f}" in notes, name
    ablation = notes[notes.index("Concatenation") :]
    for features, value in published.SBERT_TABLE6_CONCAT.items():
        assert f"{value:.2f}\t-" in ablation, features


@needs_papers
def test_simcse_numbers_match_a_paper_that_quotes_them():
    supmpn = (_papers() / "dehghan2022_supmpn.txt").read_text(encoding="utf-8")
    for name, (value, source) in published.STSB_TEST.items():
        if "SimCSE" in str(source):
            assert f"\t{value:.2f}\t" in supmpn, name
