"""How big each chapter's data and runs are under the ``quick``, ``t4`` and ``paper`` profiles.

Each chapter module owns its sizes: a frozen keyword dataclass (a chapter reads ``sizes.pairs``,
not a number) with one instance per profile, recorded with :func:`register_sizes`;
``sizes_for(CostSizes)`` returns them under the profile in use
(:func:`sbert_tutor.book.profiles.get_profile`). Shared here: the base :class:`ChapterSizes`,
:class:`RunSizes` of every training run (turned into a
:class:`~sbert_tutor.training.TrainingConfig` by :func:`sbert_tutor.book.configs.training_config`)
and each profile's start models, rates and seeds:

* ``quick``: CPU, small real subsets, a few minutes a chapter (the runs the rendered book shows);
  chapters 6-12 train from :data:`QUICK_START` (:mod:`sbert_tutor.book.weak_start`).
* ``t4``: one T4-class GPU (Colab's), fp16; runs train from :data:`T4_START`.
* ``paper``: each chapter's run is its paper's setup (:mod:`sbert_tutor.book.published`);
  :func:`~sbert_tutor.book.deviations.deviations` lists what still differs and why.

``None`` means "all" (all pairs, all queries, full epochs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar, cast

from sbert_tutor.book.profiles import PROFILES, Profile, check_profile, get_profile
from sbert_tutor.book.weak_start import Start, WeakStart

__all__ = [
    "BERT",
    "ChapterSizes",
    "DISTILBERT",
    "PAPER_SEEDS",
    "QUICK_LR",
    "QUICK_RUN",
    "QUICK_SEEDS",
    "QUICK_START",
    "RunSizes",
    "SBERT_RUN",
    "T4_LR",
    "T4_RUN",
    "T4_SEEDS",
    "T4_START",
    "register_sizes",
    "registered_sizes",
    "sizes_for",
]

BERT = "bert-base-uncased"
DISTILBERT = "distilbert-base-uncased"
#: The t4 profile's start for every training run: the pre-trained (masked-language-model)
#: MiniLM, 6 layers x 384 (about a fifth of BERT-base's compute, 90 MB), that all-MiniLM-L6-v2
#: was sentence-tuned from. Never trained on sentence pairs, so each objective's effect is all
#: its own; a run of a few thousand examples takes a minute on a T4.
T4_START = "nreimers/MiniLM-L6-H384-uncased"
#: The t4 profile's learning rate: the top of BERT's usual fine-tuning range (2e-5 to 5e-5),
#: for runs of a few hundred steps.
T4_LR = 5e-5
#: The quick profile's start for the training runs of chapters 6-12: all-MiniLM-L6-v2 cut to
#: its first transformer layer (:mod:`sbert_tutor.book.weak_start`), and the learning rate its
#: short runs use (5x SBERT's 2e-5: one layer, a few dozen steps).
QUICK_START = WeakStart(layers=1)
QUICK_LR = 1e-4
#: Seeds of every training variant: three in the quick and t4 profiles (mean and spread: a
#: verdict needs them); in the paper profile, the paper's own number of runs where it states one
#: (SBERT's Table 2: ten seeds), else one (hours a run; its tables then give no verdict).
QUICK_SEEDS = (0, 1, 2)
T4_SEEDS = (0, 1, 2)
PAPER_SEEDS = (0,)


@dataclass(frozen=True, kw_only=True)
class ChapterSizes:
    """Base of every chapter's sizes (keyword-only, frozen)."""


@dataclass(frozen=True, kw_only=True)
class RunSizes(ChapterSizes):
    """What sizes every training run of chapters 6-11: optimizer ``steps`` (``None``: ``epochs``
    whole epochs), ``batch_size`` (pairs or groups a step), ``examples`` drawn with the seed
    (``None``: all), the ``start`` model (a hub name, a :class:`Start` naming its pooling, or a
    :class:`WeakStart`), the peak ``lr``, the share of steps warming it up (``warmup_ratio``,
    then linear decay) and one run per seed of ``seeds``."""

    steps: int | None
    epochs: int = 1
    batch_size: int
    examples: int | None = None
    start: str | Start | WeakStart
    lr: float
    warmup_ratio: float = 0.1
    seeds: tuple[int, ...]


QUICK_RUN: dict[str, Any] = {"start": QUICK_START, "lr": QUICK_LR, "seeds": QUICK_SEEDS}
T4_RUN: dict[str, Any] = {"start": T4_START, "lr": T4_LR, "seeds": T4_SEEDS}
#: SBERT's own setup (Reimers & Gurevych 2019; :data:`~sbert_tutor.book.published.SBERT_SETUP`):
#: BERT-base with mean pooling, batch 16, lr 2e-5, warm-up over 10%.
SBERT_RUN: dict[str, Any] = {
    "start": Start(BERT, "mean"),
    "lr": 2e-5,
    "warmup_ratio": 0.1,
    "batch_size": 16,
}

# sizes class -> profile -> sizes, and sizes class -> chapter (filled by register_sizes)
_BY_PROFILE: dict[type[ChapterSizes], dict[str, ChapterSizes]] = {}
_CHAPTER: dict[type[ChapterSizes], str] = {}

S = TypeVar("S", bound=ChapterSizes)


def register_sizes(chapter: str, by_profile: dict[str, S]) -> dict[str, S]:
    """Record one chapter's sizes (``{"quick": ..., "t4": ..., "paper": ...}``, every profile of
    :data:`~sbert_tutor.book.profiles.PROFILES`, all of one class, registered once) and return
    them; :func:`sizes_for` reads them."""
    kinds = {type(s) for s in by_profile.values()}
    if set(by_profile) != set(PROFILES) or len(kinds) != 1:
        raise ValueError(
            f"{chapter}: sizes must give one instance of one class for each profile of "
            f"{PROFILES}; got {sorted(by_profile)} of {sorted(k.__name__ for k in kinds)}"
        )
    (kind,) = kinds
    if not issubclass(kind, ChapterSizes):
        raise TypeError(f"{chapter}: {kind.__name__} is not a ChapterSizes")
    if kind in _CHAPTER and _CHAPTER[kind] != chapter:
        raise ValueError(f"{kind.__name__} is already the sizes of {_CHAPTER[kind]}")
    _BY_PROFILE[kind] = by_profile  # type: ignore[assignment]
    _CHAPTER[kind] = chapter
    return by_profile


def registered_sizes() -> dict[type[ChapterSizes], str]:
    """The sizes classes registered so far (as their modules were imported) -> their chapters
    (notebook stems), in book order."""
    return dict(sorted(_CHAPTER.items(), key=lambda item: item[1]))


def sizes_for(kind: type[S], profile: Profile | str | None = None) -> S:
    """The sizes of one chapter (its sizes class) under ``profile`` (a
    :class:`~sbert_tutor.book.profiles.Profile`, a profile name, or ``None``: the one in use).

    Example:
        >>> from sbert_tutor.book.chapters.cost_of_cross_encoders import CostSizes
        >>> sizes_for(CostSizes, "quick").pairs
        192
    """
    profile = get_profile() if profile is None else profile
    name = profile.name if isinstance(profile, Profile) else check_profile(str(profile))
    if kind not in _BY_PROFILE:
        raise TypeError(
            f"{kind!r} is not a chapter's sizes class: a chapter module defines one and records "
            "it with register_sizes(chapter, {profile: sizes})"
        )
    return cast(S, _BY_PROFILE[kind][name])
