"""What the ``paper`` profile still does differently from the papers, and why.

The ``paper`` profile (:mod:`sbert_tutor.book.sizes`) runs each chapter with its paper's setup.
:func:`deviation_table` compares, aspect by aspect, the setups the papers state
(:mod:`sbert_tutor.book.published`: :data:`~sbert_tutor.book.published.SBERT_SETUP`,
``TANEJA_SETUP``, ``SUPMPN_SETUP``, ``OH_SETUP``, ``DISTANCE_DILEMMA``, ``MSMARCO_PUBLISHED``)
with the paper profile's sizes: one row an aspect, whether the two agree, and, where they do
not, why (:data:`REASONS`). Both sides are read when the table is built, so a change to a
paper-profile size or to a published setup shows here; ``tests/book/test_deviations.py`` fails
when a difference has no reason or a reason no longer has a difference.

The table compares what the sizes say. Two things it cannot see are said in its note: the NLI
chapters read SNLI + MultiNLI train from the hub, and only SNLI dev + test when
``SBERT_TUTOR_DATA`` names a data folder (which has no NLI train split); and no run reproduces
the papers' hardware.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sbert_tutor.book import published
from sbert_tutor.book.published import Source
from sbert_tutor.book.sizes import (
    CHAPTERS,
    ChapterSizes,
    ClassificationSizes,
    DistanceDilemmaSizes,
    MNRLSizes,
    MSMarcoSizes,
    RegressionSizes,
    RunSizes,
    SearchGuidedSizes,
    SupMPNSizes,
    TripletSizes,
    sizes_for,
)
from sbert_tutor.book.weak_start import start_name, start_pooling

__all__ = [
    "Aspect",
    "HUB_NAMES",
    "NLI_TRAIN",
    "NOTE",
    "NOT_STATED",
    "OUR_OPTIMIZER",
    "POOLINGS",
    "REASONS",
    "WARMUPS",
    "deviation_table",
    "deviations",
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


@dataclass(frozen=True)
class Aspect:
    """One aspect of one chapter's setup: the paper's value (and where it is stated) and how to
    read the paper profile's from the chapter's sizes."""

    name: str
    paper: Any
    source: Source
    ours: Callable[[Any], Any]


def _epochs(s: RunSizes | DistanceDilemmaSizes) -> Any:
    return s.epochs if s.steps is None else f"{s.steps} steps"


def _run_aspects(setup_source: Source, **paper: Any) -> list[Aspect]:
    """The aspects every training chapter shares, paper values by keyword."""
    getters: dict[str, Callable[[Any], Any]] = {
        "start model": lambda s: start_name(s.start),
        "pooling": lambda s: start_pooling(s.start),
        "batch size": lambda s: s.batch_size,
        "epochs": _epochs,
        "learning rate": lambda s: s.lr,
        "warm-up ratio": lambda s: s.warmup_ratio,
        "optimizer": lambda s: OUR_OPTIMIZER,
        "training examples": lambda s: "all" if s.examples is None else s.examples,
    }
    return [Aspect(name, paper[name], setup_source, getters[name]) for name in getters]


def _aspects() -> dict[type[ChapterSizes], list[Aspect]]:
    """Every compared aspect, chapter by chapter, read from the published setups now."""
    sb, tj, sm, oh, dd = (
        published.SBERT_SETUP,
        published.TANEJA_SETUP,
        published.SUPMPN_SETUP,
        published.OH_SETUP,
        published.DISTANCE_DILEMMA,
    )
    sbert_src, taneja_src = published.SBERT_SETUP_SOURCE, published.TANEJA.at("section IV")
    supmpn_src, oh_src = published.SUPMPN.at("sections 5.1-5.3"), published.OH.at("section 3")
    dd_src = published.DISTANCE_DILEMMA_SOURCE
    sbert_common = {
        "start model": HUB_NAMES[sb["start model"]],
        "pooling": POOLINGS[sb["pooling"]],
        "batch size": sb["batch size"],
        "learning rate": sb["learning rate"],
        "warm-up ratio": WARMUPS[sb["warm-up"]],
        "optimizer": sb["optimizer"],
        "training examples": "all",
    }
    return {
        ClassificationSizes: [
            *_run_aspects(sbert_src, epochs=sb["NLI epochs"], **sbert_common),
            Aspect("training data", sb["NLI training data"], sbert_src, lambda s: NLI_TRAIN),
        ],
        RegressionSizes: [
            *_run_aspects(sbert_src, epochs=sb["STSb epochs"], **sbert_common),
            Aspect("seeds", sb["STSb seeds"], sbert_src, lambda s: len(s.seeds)),
        ],
        TripletSizes: [
            *_run_aspects(sbert_src, epochs=sb["triplet epochs"], **sbert_common),
            Aspect("margin", sb["triplet margin"], sbert_src, lambda s: s.margin),
            Aspect(
                "distance",
                sb["triplet distance"],
                sbert_src,
                lambda s: "euclidean and cosine, one run each",
            ),
            Aspect(
                "training data",
                sb["triplet training data"],
                sbert_src,
                lambda s: f"{NLI_TRAIN}: (premise, entailment, contradiction) triplets",
            ),
        ],
        MNRLSizes: [
            *_run_aspects(
                taneja_src,
                **{
                    "start model": HUB_NAMES[tj["start model"]],
                    "pooling": POOLINGS[tj["start model"]],
                    "batch size": tj["batch size"],
                    "epochs": tj["epochs"],
                    "learning rate": tj["learning rate"],
                    "warm-up ratio": WARMUPS[tj["warm-up"]],
                    "optimizer": "Adam",
                    "training examples": "all",
                },
            ),
            Aspect(
                "training data",
                f"the {tj['entailment pairs kept']:,} entailment pairs of {NLI_TRAIN}",
                taneja_src,
                lambda s: (
                    f"the {published.TANEJA_SETUP['entailment pairs kept']:,} entailment "
                    f"pairs of {NLI_TRAIN}"
                    if s.examples is None
                    else f"{s.examples:,} entailment pairs"
                ),
            ),
        ],
        SupMPNSizes: [
            *_run_aspects(
                supmpn_src,
                **{
                    "start model": HUB_NAMES[sm["start models"]],
                    "pooling": POOLINGS[sm["pooling"]],
                    "batch size": sm["batch size (base, large)"][0],
                    "epochs": sm["epochs"],
                    "learning rate": f"{NOT_STATED} (SimCSE-sup's setup)",
                    "warm-up ratio": f"{NOT_STATED} (SimCSE-sup's setup)",
                    "optimizer": f"{NOT_STATED} (SimCSE-sup's setup)",
                    "training examples": "all",
                },
            ),
            Aspect(
                "positives P, negatives Q",
                sm["positives P, negatives Q per anchor"],
                supmpn_src,
                lambda s: (s.positives, s.negatives),
            ),
            Aspect(
                "training data",
                f"{sm['training data']} inputs built from {sm['premises (SNLI + MNLI)']} "
                "SNLI + MNLI premises",
                supmpn_src,
                lambda s: (
                    f"one group per premise of {NLI_TRAIN} with an entailment "
                    "(sbert_tutor.data.nli.supmpn_groups)"
                ),
            ),
        ],
        SearchGuidedSizes: [
            *_run_aspects(
                oh_src,
                **{
                    "start model": HUB_NAMES[oh["student"]],
                    "pooling": POOLINGS[oh["student"]],
                    "batch size": oh["batch size"],
                    "epochs": NOT_STATED,
                    "learning rate": oh["learning rate"],
                    "warm-up ratio": NOT_STATED,
                    "optimizer": NOT_STATED,
                    "training examples": "all",
                },
            ),
            Aspect(
                "sentence pool",
                NOT_STATED,
                oh_src,
                lambda s: (
                    "every distinct STSb train sentence (STSb test sentences removed)"
                    if s.pool is None
                    else f"{s.pool:,} STSb train sentences"
                ),
            ),
            Aspect(
                "teacher",
                "not named (the best-performing model, their ref. [13])",
                oh_src,
                lambda s: "all-MiniLM-L6-v2",
            ),
        ],
        DistanceDilemmaSizes: [
            Aspect("start model", HUB_NAMES[dd["start model"]], dd_src, lambda s: s.model),
            Aspect("pooling", POOLINGS[dd["pooling"]], dd_src, lambda s: "mean"),
            Aspect("batch size", dd["batch size"], dd_src, lambda s: s.batch_size),
            Aspect("epochs", dd["epochs"], dd_src, _epochs),
            Aspect("learning rate", dd["learning rate"], dd_src, lambda s: s.lr),
            Aspect("warm-up ratio", WARMUPS[dd["warm-up"]], dd_src, lambda s: s.warmup_ratio),
            Aspect(
                "triplet margin",
                dd["triplet margin"],
                dd_src,
                lambda s: 5.0 if s.study_margins else "SBERT's (1 Euclidean, 0.5 cosine) only",
            ),
            Aspect("test queries", dd["test queries"], dd_src, lambda s: s.test_queries),
            Aspect(
                "training queries",
                dd["training queries"],
                dd_src,
                lambda s: f"the dev subset's other queries (540 - {s.test_queries})",
            ),
            Aspect(
                "test corpus (passages)",
                f"{dd['corpus passages (millions)']} million",
                dd_src,
                lambda s: (
                    "the test queries' judged and BM25 passages"
                    + (" + all of corpus_mini (16,799)" if s.other_passages is None else "")
                ),
            ),
            Aspect(
                "hard negatives and their scores",
                f"cross-encoder scores ({dd['CE-score transform']}); negatives at least "
                f"{dd['hard-negative CE-score gap (logits)']} logits below the positive",
                dd_src,
                lambda s: (
                    "BM25 negatives; all-MiniLM-L6-v2's cosines, Platt-scaled on the judgements"
                ),
            ),
        ],
        MSMarcoSizes: [
            Aspect(
                "corpus",
                "full",
                published.Source(published.SBERT_DOCS_MSMARCO),
                lambda s: s.corpus,
            ),
            Aspect(
                "queries",
                "msmarco-dev",
                published.Source(published.SBERT_DOCS_MSMARCO),
                lambda s: s.datasets[0],
            ),
            Aspect(
                "TREC DL19 task",
                "re-ranking of candidate lists",
                published.Source(published.SBERT_DOCS_MSMARCO),
                lambda s: "retrieval from the corpus",
            ),
        ],
    }


#: (chapter, aspect) -> why the paper profile differs from the paper there.
REASONS: dict[tuple[str, str], str] = {
    **{
        (CHAPTERS[kind], "optimizer"): (
            "the trainer uses AdamW with decoupled weight decay 0.01 (sentence-transformers' "
            "default, whose fit() the SBERT code became); the paper names Adam"
        )
        for kind in (ClassificationSizes, RegressionSizes, TripletSizes, MNRLSizes)
    },
    (CHAPTERS[TripletSizes], "distance"): (
        "the chapter compares the two distances; its Euclidean run is the paper's setup"
    ),
    (CHAPTERS[TripletSizes], "training data"): (
        "the chapter teaches the objective on the NLI data of chapters 6-7 and scores it on "
        "STSb; the library has no loader for the Wikipedia-sections triplets"
    ),
    (CHAPTERS[SupMPNSizes], "pooling"): (
        "sbert_tutor.encoders.pooling pools the last layer only; the average of the first and last "
        "layers needs every layer's hidden states, which the encoder does not keep"
    ),
    (CHAPTERS[SupMPNSizes], "learning rate"): (
        "the paper states none (it follows SimCSE-sup's setup); 5e-5 is the rate of SimCSE's "
        "supervised BERT-base runs"
    ),
    (CHAPTERS[SupMPNSizes], "warm-up ratio"): (
        "the paper states none; the trainer's default warm-up over 10% of the steps"
    ),
    (CHAPTERS[SupMPNSizes], "optimizer"): "the paper states none; the trainer's AdamW",
    (CHAPTERS[SupMPNSizes], "training data"): (
        "the paper's inputs are not published; the library builds one group per premise by "
        "the rule of section 5.2 (own hypotheses first, padded with the anchor and other "
        "premises' hypotheses)"
    ),
    (CHAPTERS[SearchGuidedSizes], "epochs"): "the paper states none; one epoch",
    (CHAPTERS[SearchGuidedSizes], "warm-up ratio"): (
        "the paper states none; the trainer's default warm-up over 10% of the steps"
    ),
    (CHAPTERS[SearchGuidedSizes], "optimizer"): "the paper states none; the trainer's AdamW",
    (CHAPTERS[SearchGuidedSizes], "sentence pool"): (
        "the paper does not name its corpus; STSb train sentences keep the pool disjoint from "
        "the STSb test pairs the runs are scored on"
    ),
    (CHAPTERS[SearchGuidedSizes], "teacher"): (
        "the paper does not name its teacher model; all-MiniLM-L6-v2 is the book's strong "
        "sentence encoder"
    ),
    (CHAPTERS[DistanceDilemmaSizes], "learning rate"): (
        "the study states none (only that it decreases linearly); SBERT's 2e-5"
    ),
    (CHAPTERS[DistanceDilemmaSizes], "training queries"): (
        "the study's 125,000-query subset of MS MARCO (with its cross-encoder scores) is not "
        "published and its selection is not described; the chapter trains on the queries of "
        "the dev subset (540 judged, with BM25 candidates) that its test split leaves"
    ),
    (CHAPTERS[DistanceDilemmaSizes], "test corpus (passages)"): (
        "the split, the BM25 negatives and the teacher scores are built from the dev subset "
        "over corpus_mini; chapter 5's paper profile retrieves from the 8.8M collection, for "
        "one model, where this chapter evaluates seven"
    ),
    (CHAPTERS[DistanceDilemmaSizes], "hard negatives and their scores"): (
        "the study's cross-encoder scores come with its unpublished subset; the chapter scores "
        "its pairs with a bi-encoder teacher and maps cosines to probabilities on the judged "
        "labels (Platt scaling)"
    ),
    (CHAPTERS[MSMarcoSizes], "TREC DL19 task"): (
        "the documentation's DL19 column re-ranks given candidate lists (its label says so); "
        "the chapter retrieves from the corpus, a different task: the two are not set side by "
        "side as one number"
    ),
}

NOTE = (
    "paper profile vs the papers' stated setups, aspect by aspect (computed from "
    "sbert_tutor.book.sizes and sbert_tutor.book.published). Not in the sizes: the NLI "
    "chapters read SNLI + MultiNLI train from the hub, but only SNLI dev + test when "
    "SBERT_TUTOR_DATA names a data folder; no run reproduces the papers' hardware."
)


def _same(paper: Any, ours: Any) -> bool:
    if isinstance(paper, float) or isinstance(ours, float):
        try:
            return abs(float(paper) - float(ours)) < 1e-12
        except (TypeError, ValueError):
            return False
    return paper == ours


def deviation_table(profile: str = "paper") -> pd.DataFrame:
    """One row per (chapter, aspect): the paper's value (``published``) and its ``source``, the
    profile's value (column ``"<profile> profile"``), whether they agree (``same``), and why not
    (``why``, from :data:`REASONS`; empty where they agree).

    ``profile`` is ``"paper"`` for the book's table; another profile's table shows how far it
    is from the papers (its differences then mostly have no reason: they are that profile's
    point).
    """
    rows = []
    for kind, aspects in _aspects().items():
        sizes = sizes_for(kind, profile)
        chapter = CHAPTERS[kind]
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
                    "why": "" if same else REASONS.get((chapter, aspect.name), ""),
                }
            )
    table = pd.DataFrame(rows).sort_values("chapter", kind="stable").reset_index(drop=True)
    table.attrs["note"] = NOTE
    return table


def deviations(profile: str = "paper") -> pd.DataFrame:
    """Only the rows of :func:`deviation_table` where the profile differs from the paper."""
    table = deviation_table(profile)
    out = table[~table["same"]].drop(columns="same").reset_index(drop=True)
    out.attrs["note"] = NOTE
    return out
