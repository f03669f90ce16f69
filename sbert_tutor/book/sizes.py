"""How big each chapter's data and runs are, under the ``quick``, ``t4`` and ``paper`` profiles:
what every chapter's sizes share.

Each chapter module owns its sizes: one frozen dataclass (built by keyword, so a chapter reads
``sizes.pairs`` rather than a number) and one instance of it per profile, recorded with
:func:`register_sizes`; the profile choice is made once: ``sizes_for(CostSizes)`` returns the
chapter's :class:`~sbert_tutor.book.chapters.cost_of_cross_encoders.CostSizes` under the profile
in use (typed, so an editor knows its fields). This module holds what the chapters share: the
base :class:`ChapterSizes`, :class:`RunSizes` of every training run (steps or epochs, batch size,
examples, start model with its pooling, learning rate, warm-up and seeds;
:func:`sbert_tutor.book.configs.training_config` turns them into a
:class:`~sbert_tutor.training.TrainingConfig`), and the start models, rates and seeds of each
profile. The *profile name* itself is resolved by :func:`sbert_tutor.book.profiles.get_profile`.

* ``quick``: CPU, small real subsets, a few minutes a chapter (the runs the rendered book shows). The
  training runs of chapters 6-12 start from :data:`QUICK_START`, a weak one-layer cut of
  all-MiniLM-L6-v2 (:mod:`sbert_tutor.book.weak_start`), three seeds each in chapters 6-11.
* ``t4``: one T4-class GPU (Colab's), fp16 mixed precision. The training runs start from
  :data:`T4_START`, ``nreimers/MiniLM-L6-H384-uncased``: the pre-trained MiniLM that
  all-MiniLM-L6-v2 was sentence-tuned from. It is a language model, never trained on sentence
  pairs, so every objective has all of its effect still to make; it is 6 layers of width 384
  (about a fifth of BERT-base's compute), so a run of a few thousand examples takes a minute on
  a T4; and a reader can download it anywhere (90 MB). Three seeds a variant.
* ``paper``: each chapter's run is its paper's setup (:mod:`sbert_tutor.book.published`:
  :data:`~sbert_tutor.book.published.SBERT_SETUP`, ``TANEJA_SETUP``, ``SUPMPN_SETUP``,
  ``OH_SETUP``, ``DISTANCE_DILEMMA``): start model and pooling, data, batch size, epochs,
  learning rate, warm-up, P/Q and margins. :func:`~sbert_tutor.book.deviations.deviations`
  lists what still differs and why, from each chapter's paper aspects.

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
#: MiniLM, 6 layers x 384, that all-MiniLM-L6-v2 was sentence-tuned from. Not sentence-tuned,
#: so each objective's effect is all its own; small enough for three seeds a variant on a T4.
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
    """What sizes every training run of chapters 6-11.

    Attributes:
        steps: optimizer steps of each run (``None``: ``epochs`` whole epochs).
        epochs: passes over the training examples when ``steps`` is ``None``.
        batch_size: pairs (or groups) a step.
        examples: training examples drawn with the seed (``None``: all).
        start: the model each run starts from (a hub name, a :class:`Start` naming its
            pooling, or a :class:`WeakStart`).
        lr: the peak learning rate.
        warmup_ratio: share of the steps spent warming the learning rate up (then linear decay).
        seeds: one run per seed (mean and spread over them).
    """

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

#: sizes class -> profile name -> that chapter's sizes, and sizes class -> chapter (notebook
#: stem in ``book/``): filled by :func:`register_sizes` as each chapter module is imported.
_BY_PROFILE: dict[type[ChapterSizes], dict[str, ChapterSizes]] = {}
_CHAPTER: dict[type[ChapterSizes], str] = {}

S = TypeVar("S", bound=ChapterSizes)


def register_sizes(chapter: str, by_profile: dict[str, S]) -> dict[str, S]:
    """Record one chapter's sizes, one instance of its sizes class per profile, and return them.

    A chapter module writes ``SIZES = register_sizes("06_classification_objective", {"quick":
    ..., "t4": ..., "paper": ...})`` under its sizes class; :func:`sizes_for` then reads them.
    Every profile of :data:`~sbert_tutor.book.profiles.PROFILES` must be there, each an
    instance of the same class, and a class is registered once.
    """
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
    """The sizes classes registered so far -> their chapters (notebook stems), in book order.

    A chapter's sizes are registered when its module is imported;
    :func:`sbert_tutor.book.chapters.every_chapter` imports them all first."""
    return dict(sorted(_CHAPTER.items(), key=lambda item: item[1]))


def sizes_for(kind: type[S], profile: Profile | str | None = None) -> S:
    """The sizes of one chapter (its sizes class, e.g.
    :class:`~sbert_tutor.book.chapters.cost_of_cross_encoders.CostSizes`) under ``profile``.

    ``profile``: a :class:`~sbert_tutor.book.profiles.Profile`, one of
    :data:`~sbert_tutor.book.profiles.PROFILES` (``"quick"``, ``"t4"``, ``"paper"``), or ``None``
    (resolved by :func:`~sbert_tutor.book.profiles.get_profile`).

    Example:
        >>> from sbert_tutor.book.chapters.cost_of_cross_encoders import CostSizes
        >>> sizes_for(CostSizes, "quick").pairs
        192
    """
    if profile is None:
        profile = get_profile()
    name = profile.name if isinstance(profile, Profile) else check_profile(str(profile))
    if kind not in _BY_PROFILE:
        raise TypeError(
            f"{kind!r} is not a chapter's sizes class: a chapter module defines one and records "
            "it with register_sizes(chapter, {profile: sizes})"
        )
    return cast(S, _BY_PROFILE[kind][name])
