"""Chapter sizes: one frozen dataclass per chapter, picked by the profile name."""

from __future__ import annotations

import dataclasses

import pytest

from sbert_tutor.book.sizes import SIZES, CostSizes, sizes_for
from sbert_tutor.profiles import get_profile


def test_sizes_follow_the_profile(monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "full")
    assert sizes_for("cost", get_profile("quick")).pairs < sizes_for("cost").pairs
    assert sizes_for("cost", "quick") == CostSizes(pairs=192, sentences=512, batch_size=32)
    with pytest.raises(ValueError, match="unknown chapter 'costs'.*Did you mean 'cost'"):
        sizes_for("costs", "quick")
    with pytest.raises(ValueError, match="unknown profile 'medium'"):
        sizes_for("cost", "medium")


@pytest.mark.parametrize("chapter", list(SIZES))
def test_each_chapter_has_one_frozen_dataclass_for_both_profiles(chapter):
    quick, full = SIZES[chapter]
    assert type(quick) is type(full) and dataclasses.is_dataclass(quick)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.__setattr__(dataclasses.fields(quick)[0].name, None)


def test_no_two_chapters_share_a_sizes_class():
    assert len({type(quick) for quick, _ in SIZES.values()}) == len(SIZES)


TRAINING_CHAPTERS = ("classification", "regression", "triplet", "mnrl", "supmpn", "search_guided")


@pytest.mark.parametrize("chapter", TRAINING_CHAPTERS)
def test_quick_training_runs_start_weak_with_three_seeds_and_full_keeps_bert(chapter):
    from sbert_tutor.book.weak_start import WeakStart

    quick, full = SIZES[chapter]
    start = "student" if chapter == "search_guided" else "start"
    assert isinstance(getattr(quick, start), WeakStart) and len(set(quick.seeds)) >= 3
    assert getattr(full, start) == "bert-base-uncased" and full.lr == 2e-5
