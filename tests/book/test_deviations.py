"""The paper profile's deviation table: computed from the sizes and the published setups, every
difference with its reason and every reason with its difference."""

from __future__ import annotations

import dataclasses

import pytest

from sbert_tutor.book import deviations, published
from sbert_tutor.book.chapters import every_chapter
from sbert_tutor.book.chapters import multiple_negatives_ranking as ch9
from sbert_tutor.book.chapters.multiple_negatives_ranking import MNRLSizes
from sbert_tutor.book.chapters.supmpn import SupMPNSizes
from sbert_tutor.book.chapters.triplet_objective import TripletSizes
from sbert_tutor.book.deviations import deviation_table
from sbert_tutor.book.sizes import sizes_for

CHAPTERS = every_chapter()


def _table(profile="paper"):
    return deviation_table(CHAPTERS, profile)


def _pairs(table):
    return {(r.chapter, r.aspect) for r in table.itertuples()}


def _unexplained_and_stale(table):
    """The differences without a reason, and the reasons without a difference."""
    differing = table[~table["same"]]
    agreeing = table[table["same"]]
    return _pairs(differing[differing["why"] == ""]), _pairs(agreeing[agreeing["why"] != ""])


def test_every_difference_has_a_reason_and_every_reason_a_difference():
    table = _table()
    missing, stale = _unexplained_and_stale(table)
    assert not missing, f"paper profile differs from the paper without a reason: {missing}"
    assert not stale, f"reasons for differences that no longer exist: {stale}"
    assert (~table["same"]).sum() >= 10  # the comparison is not empty


def test_the_table_compares_what_matters():
    table = _table().set_index(["chapter", "aspect"])
    same = table["same"]
    ch = CHAPTERS
    # the papers' setups the paper profile follows
    assert (
        same[(ch[MNRLSizes], "batch size")]
        and table.loc[(ch[MNRLSizes], "batch size"), "published"] == 12
    )
    assert same[(ch[SupMPNSizes], "positives P, negatives Q")]
    assert same[(ch[SupMPNSizes], "batch size")] and same[(ch[SupMPNSizes], "epochs")]
    assert same[(ch[TripletSizes], "margin")]
    # and what it cannot follow, with the reason
    assert not same[(ch[SupMPNSizes], "pooling")]
    assert "last layer" in table.loc[(ch[SupMPNSizes], "pooling"), "why"]
    assert table.loc[("12_distance_dilemma", "training queries"), "published"] == 125_000
    assert "not published" in table.loc[("12_distance_dilemma", "training queries"), "why"]
    assert all(str(s) for s in table["source"])


def test_changing_a_paper_size_without_its_reason_fails(monkeypatch):
    """A paper-profile size moved away from the paper shows as a difference with no reason."""
    moved = dataclasses.replace(sizes_for(MNRLSizes, "paper"), batch_size=64)
    monkeypatch.setitem(ch9.SIZES, "paper", moved)
    table = _table()
    row = table[(table.chapter == CHAPTERS[MNRLSizes]) & (table.aspect == "batch size")].iloc[0]
    assert not row["same"] and row["why"] == ""
    assert _unexplained_and_stale(table) == ({(CHAPTERS[MNRLSizes], "batch size")}, set())


def test_changing_a_published_setup_shows_in_the_table(monkeypatch):
    monkeypatch.setitem(published.SUPMPN_SETUP, "epochs", 5)
    table = _table().set_index(["chapter", "aspect"])
    assert not table.loc[(CHAPTERS[SupMPNSizes], "epochs"), "same"]
    # a reworded start model is refused rather than silently compared
    monkeypatch.setitem(published.SBERT_SETUP, "start model", "RoBERTa-base")
    with pytest.raises(KeyError, match="RoBERTa-base"):
        _table()


def test_a_stale_reason_fails(monkeypatch):
    """A reason kept for a difference that is gone (the paper profile's MNRL batch is the
    paper's 12) shows as stale; the table does not show it as a difference."""
    pair = (CHAPTERS[MNRLSizes], "batch size")
    aspects = ch9.paper_aspects()

    def with_reason():
        return [
            dataclasses.replace(a, why="no longer true") if a.name == "batch size" else a
            for a in aspects
        ]

    monkeypatch.setattr(ch9, "paper_aspects", with_reason)
    table = _table().set_index(["chapter", "aspect"])
    assert table.loc[pair, "same"]
    assert _unexplained_and_stale(table.reset_index()) == (set(), {pair})


def test_deviations_keeps_only_the_differences_and_the_note():
    rows = deviations.deviations(CHAPTERS)
    assert len(rows) == int((~_table()["same"]).sum())
    assert "paper profile" in rows.columns and "SBERT_TUTOR_DATA" in rows.attrs["note"]
    assert len(deviations.deviations(CHAPTERS, "t4")) > len(rows)  # t4 is further from the papers


def test_run_aspects_refuses_an_unknown_or_missing_aspect():
    source = published.SBERT_SETUP_SOURCE
    setup = deviations.sbert_run_setup()
    with pytest.raises(TypeError, match="epochs"):
        deviations.run_aspects(source, **setup)  # epochs missing
    with pytest.raises(TypeError, match="epoch"):
        deviations.run_aspects(source, {"epoch": "typo"}, epochs=1, **setup)
