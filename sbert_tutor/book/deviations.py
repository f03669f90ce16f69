"""What the ``paper`` profile still does differently from the papers, and why.

Each chapter module that follows a paper says, in a function ``paper_aspects()`` beside its
sizes, which aspects of its setup to compare (:class:`Aspect`): the paper's value (read from
:mod:`sbert_tutor.book.published` when the table is built), where it is stated, how to read the
profile's value from the sizes, and why the two differ where they do. :func:`deviation_table`
compares them, one row an aspect; ``tests/book/test_deviations.py`` fails when a difference has
no reason or a reason no longer has a difference. What the sizes cannot show is in :data:`NOTE`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sbert_tutor.book import published
from sbert_tutor.book.published import Source
from sbert_tutor.book.sizes import ChapterSizes, sizes_for
from sbert_tutor.book.weak_start import start_name, start_pooling

__all__ = [
    "ADAMW",
    "UNSTATED_OPTIMIZER",
    "UNSTATED_WARMUP",
    "Aspect",
    "HUB_NAMES",
    "NLI_TRAIN",
    "NOTE",
    "NOT_STATED",
    "OUR_OPTIMIZER",
    "POOLINGS",
    "WARMUPS",
    "deviation_table",
    "deviations",
    "epochs_of",
    "paper_aspects",
    "run_aspects",
    "sbert_run_setup",
]

#: The paper's words for a start model -> its hub name (a setup whose words change fails here).
HUB_NAMES = {
    "BERT-base (uncased)": "bert-base-uncased",
    "BERT-base (Siamese, mean pooling)": "bert-base-uncased",
    "BERT-base and BERT-large (uncased)": "bert-base-uncased",  # the chapter's is base
    "BERT-base ([CLS] representation)": "bert-base-uncased",
    "DistilBERT": "distilbert-base-uncased",
}
#: The paper's words for a pooling -> the library's name for it (``avg_first_last`` is not one:
#: :mod:`sbert_tutor.encoders.pooling` pools the last layer).
POOLINGS = {
    "mean": "mean",
    "BERT-base (Siamese, mean pooling)": "mean",
    "average of first and last layers": "avg_first_last",
    "BERT-base ([CLS] representation)": "cls",
}
#: The papers' warm-up, as a share of the steps.
WARMUPS = {
    "linear, over 10% of the training data": 0.1,
    "linear, first 10% of steps": 0.1,
    "none stated (linearly decreasing)": 0.0,
}
#: The optimiser of every run (:mod:`sbert_tutor.training.trainer`).
OUR_OPTIMIZER = "AdamW (weight decay 0.01)"
NOT_STATED = "not stated"
NLI_TRAIN = "SNLI + MultiNLI train"
#: Why a run's optimizer differs from a paper's Adam.
ADAMW = (
    "the trainer uses AdamW with decoupled weight decay 0.01 (sentence-transformers' "
    "default, whose fit() the SBERT code became); the paper names Adam"
)
#: Why a run's warm-up and optimizer are the trainer's where a paper states none.
UNSTATED_WARMUP = "the paper states none; the trainer's default warm-up over 10% of the steps"
UNSTATED_OPTIMIZER = "the paper states none; the trainer's AdamW"


@dataclass(frozen=True)
class Aspect:
    """One aspect of one chapter's setup: the paper's value (and where it is stated), how to read
    the paper profile's from the chapter's sizes, and ``why`` the two differ (empty where they
    agree)."""

    name: str
    paper: Any
    source: Source
    ours: Callable[[Any], Any]
    why: str = ""


def epochs_of(s: Any) -> Any:
    """A run's length as the papers state it: its epochs, or ``"<n> steps"`` when capped."""
    return s.epochs if s.steps is None else f"{s.steps} steps"


def run_aspects(
    setup_source: Source, why: dict[str, str] | None = None, **paper: Any
) -> list[Aspect]:
    """The eight aspects every training chapter shares (the keys below): the paper's values by
    keyword (``**paper``: exactly those), ``why`` by aspect name where the run differs."""
    getters: dict[str, Callable[[Any], Any]] = {
        "start model": lambda s: start_name(s.start),
        "pooling": lambda s: start_pooling(s.start),
        "batch size": lambda s: s.batch_size,
        "epochs": epochs_of,
        "learning rate": lambda s: s.lr,
        "warm-up ratio": lambda s: s.warmup_ratio,
        "optimizer": lambda s: OUR_OPTIMIZER,
        "training examples": lambda s: "all" if s.examples is None else s.examples,
    }
    why = why or {}
    unknown = (set(paper) ^ set(getters)) | (set(why) - set(getters))
    if unknown:
        raise TypeError(
            f"run_aspects: unknown or missing aspects {sorted(unknown)}; "
            f"give the paper's value of each of {list(getters)}"
        )
    return [
        Aspect(name, paper[name], setup_source, getters[name], why.get(name, ""))
        for name in getters
    ]


#: What the table cannot see in the sizes.
NOTE = (
    "paper profile vs the papers' stated setups, aspect by aspect (computed from each "
    "chapter's sizes and sbert_tutor.book.published). Not in the sizes: the NLI "
    "chapters read SNLI + MultiNLI train from the hub, but only SNLI dev + test when "
    "SBERT_TUTOR_DATA names a data folder; no run reproduces the papers' hardware."
)


def sbert_run_setup() -> dict[str, Any]:
    """SBERT's setup shared by its NLI, STSb and triplet runs, as :func:`run_aspects` keywords
    (all but ``epochs``), read from :data:`~sbert_tutor.book.published.SBERT_SETUP` now."""
    sb = published.SBERT_SETUP
    return {
        "start model": HUB_NAMES[sb["start model"]],
        "pooling": POOLINGS[sb["pooling"]],
        "batch size": sb["batch size"],
        "learning rate": sb["learning rate"],
        "warm-up ratio": WARMUPS[sb["warm-up"]],
        "optimizer": sb["optimizer"],
        "training examples": "all",
    }


def _same(paper: Any, ours: Any) -> bool:
    if isinstance(paper, float) or isinstance(ours, float):
        try:
            return abs(float(paper) - float(ours)) < 1e-12
        except (TypeError, ValueError):
            return False
    return paper == ours


def paper_aspects(chapters: Mapping[type[ChapterSizes], str]) -> dict[str, list[Aspect]]:
    """Chapter (notebook stem) -> the ``paper_aspects()`` of its module, for each chapter of
    ``chapters`` (as :func:`sbert_tutor.book.chapters.every_chapter` returns them) that has one."""
    modules = {chapter: sys.modules[kind.__module__] for kind, chapter in chapters.items()}
    return {c: m.paper_aspects() for c, m in modules.items() if hasattr(m, "paper_aspects")}


def deviation_table(
    chapters: Mapping[type[ChapterSizes], str], profile: str = "paper"
) -> pd.DataFrame:
    """One row per (chapter, aspect): the paper's value (``published``) and its ``source``, the
    profile's value (column ``"<profile> profile"``), whether they agree (``same``), and why they
    differ (``why``; on a ``paper`` row that agrees, a stale reason). Another profile's table
    shows how far it is from the papers (its differences mostly have no reason: they are its
    point). ``chapters``: as :func:`sbert_tutor.book.chapters.every_chapter` returns them."""
    kinds = {chapter: kind for kind, chapter in chapters.items()}
    rows = []
    for chapter, aspects in paper_aspects(chapters).items():
        sizes = sizes_for(kinds[chapter], profile)
        for aspect in aspects:
            ours = aspect.ours(sizes)
            same = _same(aspect.paper, ours)
            rows.append(
                {
                    "chapter": chapter,
                    "aspect": aspect.name,
                    "published": aspect.paper,
                    "source": str(aspect.source),
                    f"{profile} profile": ours,
                    "same": same,
                    "why": aspect.why if profile == "paper" else ("" if same else aspect.why),
                }
            )
    table = pd.DataFrame(rows).sort_values("chapter", kind="stable").reset_index(drop=True)
    table.attrs["note"] = NOTE
    return table


def deviations(chapters: Mapping[type[ChapterSizes], str], profile: str = "paper") -> pd.DataFrame:
    """Only the rows of :func:`deviation_table` where the profile differs from the paper."""
    table = deviation_table(chapters, profile)
    out = table[~table["same"]].drop(columns="same").reset_index(drop=True)
    out.attrs["note"] = NOTE
    return out
