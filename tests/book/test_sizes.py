"""Chapter sizes: typed, keyword-built, picked by the profile, and the quick profile never larger
than the full one."""

from __future__ import annotations

import dataclasses

import pytest

from sbert_tutor.book.sizes import SIZES, CostSizes, RunSizes, sizes_for
from sbert_tutor.book.weak_start import WeakStart
from sbert_tutor.profiles import PROFILES, get_profile


@pytest.mark.parametrize("kind", list(SIZES), ids=lambda k: k.__name__)
@pytest.mark.parametrize("profile", PROFILES)
def test_sizes_for_returns_the_class_asked_for(kind, profile):
    sizes = sizes_for(kind, profile)
    assert type(sizes) is kind
    with pytest.raises(dataclasses.FrozenInstanceError):
        sizes.__setattr__(dataclasses.fields(sizes)[0].name, None)


def test_sizes_follow_the_profile_and_refuse_unknown_names(monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "full")
    assert sizes_for(CostSizes) is sizes_for(CostSizes, "full")
    assert sizes_for(CostSizes, get_profile("quick")) is sizes_for(CostSizes, "quick")
    with pytest.raises(ValueError, match="unknown profile 'medium'"):
        sizes_for(CostSizes, "medium")
    with pytest.raises(TypeError, match="not a chapter's sizes class"):
        sizes_for(dict, "quick")


def test_sizes_are_built_by_keyword_only():
    with pytest.raises(TypeError):
        CostSizes(192, 512, 32)  # positional: refused


def _at_most(quick, full) -> bool:
    """``quick`` is no larger than ``full`` (``None`` means all, the largest)."""
    if full is None:
        return True
    return quick is not None and quick <= full


@pytest.mark.parametrize("kind", list(SIZES), ids=lambda k: k.__name__)
def test_the_quick_profile_is_never_larger_than_the_full_one(kind):
    quick, full = sizes_for(kind, "quick"), sizes_for(kind, "full")
    for field in dataclasses.fields(kind):
        a, b = getattr(quick, field.name), getattr(full, field.name)
        if isinstance(a, bool) or field.name == "lr":
            continue
        if isinstance(a, int) or a is None:
            assert _at_most(a, b), (kind.__name__, field.name, a, b)
        elif isinstance(a, tuple) and field.name != "seeds":
            assert len(a) <= len(b), (kind.__name__, field.name, a, b)


@pytest.mark.parametrize(
    "kind", [k for k in SIZES if issubclass(k, RunSizes)], ids=lambda k: k.__name__
)
def test_quick_training_runs_start_weak_with_seeds_enough_for_a_verdict(kind):
    # a verdict compares seed ranges (sbert_tutor.book.seeds.verdict): with fewer than three
    # seeds a range says nothing about the spread
    quick = sizes_for(kind, "quick")
    assert isinstance(quick.start, WeakStart) and len(set(quick.seeds)) >= 3
