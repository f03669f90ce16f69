"""Chapter sizes: typed, keyword-built, picked by the profile; quick never larger than t4, t4
never larger than paper where the two are comparable; verdicts possible in quick and t4."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from sbert_tutor.book import sizes as sizes_module
from sbert_tutor.book.chapters import every_chapter
from sbert_tutor.book.chapters import multiple_negatives_ranking as ch9
from sbert_tutor.book.chapters.cost_of_cross_encoders import CostSizes
from sbert_tutor.book.chapters.distance_dilemma import DistanceDilemmaSizes
from sbert_tutor.book.chapters.multiple_negatives_ranking import MNRLSizes
from sbert_tutor.book.chapters.semantic_search_guided import SearchGuidedSizes
from sbert_tutor.book.chapters.supmpn import SupMPNSizes
from sbert_tutor.book.profiles import PROFILES, get_profile
from sbert_tutor.book.sizes import (
    T4_START,
    ChapterSizes,
    RunSizes,
    register_sizes,
    sizes_for,
)
from sbert_tutor.book.weak_start import (
    Start,
    WeakStart,
    load_start,
    start_label,
    start_name,
    start_pooling,
)

SIZES = every_chapter()


def test_every_chapter_module_registers_its_sizes_under_its_own_name():
    """One sizes class a chapter module, registered under that module's notebook."""
    import pkgutil

    from sbert_tutor.book import chapters

    modules = {m.name for m in pkgutil.iter_modules(chapters.__path__)}
    assert {kind.__module__.rsplit(".", 1)[1] for kind in SIZES} == modules
    for kind, chapter in SIZES.items():
        assert chapter.split("_", 1)[1] == kind.__module__.rsplit(".", 1)[1], (kind, chapter)
    assert list(SIZES.values()) == sorted(SIZES.values())  # book order


def test_register_sizes_refuses_a_missing_profile_or_mixed_classes():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Other(ChapterSizes):
        n: int

    with pytest.raises(ValueError, match="each profile"):
        register_sizes("99_other", {"quick": Other(n=1), "t4": Other(n=2)})
    with pytest.raises(ValueError, match="one class"):
        register_sizes(
            "99_other",
            {
                "quick": Other(n=1),
                "t4": Other(n=2),
                "paper": CostSizes(pairs=1, sentences=1, batch_size=1),
            },
        )
    with pytest.raises(ValueError, match="already the sizes of 02_cost_of_cross_encoders"):
        register_sizes("99_other", {p: sizes_for(CostSizes, p) for p in PROFILES})


@pytest.mark.parametrize("kind", list(SIZES), ids=lambda k: k.__name__)
@pytest.mark.parametrize("profile", PROFILES)
def test_sizes_for_returns_the_class_asked_for(kind, profile):
    sizes = sizes_for(kind, profile)
    assert type(sizes) is kind
    with pytest.raises(dataclasses.FrozenInstanceError):
        sizes.__setattr__(dataclasses.fields(sizes)[0].name, None)


def test_sizes_follow_the_profile_and_refuse_unknown_names(monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "t4")
    assert sizes_for(CostSizes) is sizes_for(CostSizes, "t4")
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "paper")
    assert sizes_for(CostSizes) is sizes_for(CostSizes, "paper")
    assert sizes_for(CostSizes, get_profile("quick")) is sizes_for(CostSizes, "quick")
    with pytest.raises(ValueError, match="unknown profile 'medium'"):
        sizes_for(CostSizes, "medium")
    with pytest.raises(TypeError, match="not a chapter's sizes class"):
        sizes_for(dict, "quick")


def test_sizes_are_built_by_keyword_only():
    with pytest.raises(TypeError):
        CostSizes(192, 512, 32)  # positional: refused


def _at_most(small, large) -> bool:
    """``small`` is no larger than ``large`` (``None`` means all, the largest)."""
    if large is None:
        return True
    return small is not None and small <= large


#: Fields that are settings, not amounts: a batch size of the papers (Taneja's 12, Oh's 32) may
#: well be smaller than the t4 profile's while the paper's run is far larger (whole epochs).
#: Steps and batch size are compared as their product, the examples a run trains on.
NOT_AMOUNTS = {"lr", "warmup_ratio", "seeds", "batch_size", "steps", "start", "model"}


def _trained_per_run(sizes) -> float:
    """Examples a training run sees: steps x batch, or all of them for whole epochs."""
    examples = getattr(sizes, "examples", None)
    if sizes.steps is None:
        return float("inf") if examples is None else sizes.epochs * examples
    return sizes.steps * sizes.batch_size


def _check_not_larger(small_profile, large_profile, kind):
    small, large = sizes_for(kind, small_profile), sizes_for(kind, large_profile)
    for field in dataclasses.fields(kind):
        a, b = getattr(small, field.name), getattr(large, field.name)
        if isinstance(a, bool) or field.name in NOT_AMOUNTS:
            continue
        if isinstance(a, int) or a is None:
            assert _at_most(a, b), (kind.__name__, field.name, a, b)
        elif isinstance(a, tuple) and all(isinstance(x, int) for x in a):
            assert all(_at_most(x, y) for x, y in zip(a, b, strict=True)), (field.name, a, b)
        elif isinstance(a, tuple):
            assert len(a) <= len(b), (kind.__name__, field.name, a, b)
    if issubclass(kind, RunSizes) or hasattr(small, "steps"):
        assert _trained_per_run(small) <= _trained_per_run(large), kind.__name__


@pytest.mark.parametrize("kind", list(SIZES), ids=lambda k: k.__name__)
def test_the_quick_profile_is_never_larger_than_the_t4_one(kind):
    _check_not_larger("quick", "t4", kind)


@pytest.mark.parametrize("kind", list(SIZES), ids=lambda k: k.__name__)
def test_the_t4_profile_is_never_larger_than_the_paper_one(kind):
    _check_not_larger("t4", "paper", kind)


def test_the_size_check_catches_a_larger_quick_profile(monkeypatch):
    """The invariant's own control: a quick profile made larger than t4 fails it."""
    bigger = dataclasses.replace(sizes_for(MNRLSizes, "quick"), steps=10_000)
    monkeypatch.setitem(ch9.SIZES, "quick", bigger)
    with pytest.raises(AssertionError):
        _check_not_larger("quick", "t4", MNRLSizes)


@pytest.mark.parametrize(
    "kind", [k for k in SIZES if issubclass(k, RunSizes)], ids=lambda k: k.__name__
)
def test_quick_training_runs_start_weak_with_seeds_enough_for_a_verdict(kind):
    # a verdict compares seed ranges (sbert_tutor.book.seeds.verdict): with fewer than three
    # seeds a range says nothing about the spread
    quick = sizes_for(kind, "quick")
    assert isinstance(quick.start, WeakStart) and len(set(quick.seeds)) >= 3


@pytest.mark.parametrize(
    "kind", [k for k in SIZES if issubclass(k, RunSizes)], ids=lambda k: k.__name__
)
def test_t4_runs_start_from_the_downloadable_minilm_with_three_seeds(kind):
    t4 = sizes_for(kind, "t4")
    assert t4.start == T4_START and len(set(t4.seeds)) >= 3


def test_t4_distance_dilemma_starts_from_the_same_model():
    assert sizes_for(DistanceDilemmaSizes, "t4").model == T4_START


def test_paper_runs_start_from_the_papers_models_with_their_pooling():
    assert sizes_for(SearchGuidedSizes, "paper").start == Start("bert-base-uncased", "cls")
    assert start_pooling(sizes_for(SearchGuidedSizes, "paper").start) == "cls"
    assert start_name(sizes_for(MNRLSizes, "paper").start) == "bert-base-uncased"
    supmpn = sizes_for(SupMPNSizes, "paper")
    assert (supmpn.positives, supmpn.negatives, supmpn.batch_size, supmpn.epochs) == (5, 5, 256, 3)
    dd = sizes_for(DistanceDilemmaSizes, "paper")
    assert (dd.model, dd.batch_size, dd.epochs) == ("distilbert-base-uncased", 64, 3)


def test_a_start_with_its_pooling_loads_through_the_chapters_path(monkeypatch):
    """``Start`` goes through the same ``load_start`` / ``start_label`` as a name or a
    ``WeakStart`` (duck-typed: ``load()`` and ``label``), with its pooling passed on."""
    from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

    calls = []
    monkeypatch.setattr(
        SentenceEncoder,
        "from_pretrained",
        classmethod(lambda cls, name, pooling=None, **kw: calls.append((name, pooling)) or "enc"),
    )
    assert load_start(Start("bert-base-uncased", "cls")) == "enc"
    assert load_start("some/model") == "enc"
    assert calls == [("bert-base-uncased", "cls"), ("some/model", None)]
    assert start_label(Start("bert-base-uncased", "cls")) == "bert-base-uncased, cls pooling"
    assert start_label(WeakStart(layers=1)) == "all-MiniLM-L6-v2, first 1 layer"
    assert start_label("org/name") == "name"


def test_no_text_of_the_sizes_calls_a_profile_full():
    assert "``full``:" not in (sizes_module.__doc__ or "")
    assert all("full" not in sys.modules[kind.__module__].SIZES for kind in SIZES)
