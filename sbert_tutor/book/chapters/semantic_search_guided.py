"""Chapter 11: contrastive learning guided by semantic search (Oh, Kim and Lim, n.d., "Guidance
by Semantic Search for Contrastive Learning of Sentence Embeddings"), beside SimCSE's dropout
positives (Gao et al., 2021): the sizes, the deviations from the paper and the histogram of the
mined positives' teacher cosines. The pool, the mining and the pairs are built on the page."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbert_tutor.book import published
from sbert_tutor.book.deviations import (
    HUB_NAMES,
    NOT_STATED,
    POOLINGS,
    UNSTATED_OPTIMIZER,
    UNSTATED_WARMUP,
    Aspect,
    run_aspects,
)
from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.sizes import BERT, PAPER_SEEDS, QUICK_RUN, T4_RUN, RunSizes, register_sizes
from sbert_tutor.book.weak_start import Start
from sbert_tutor.data.table import DataTable, as_frame

__all__ = ["SIZES", "SearchGuidedSizes", "paper_aspects", "plot_teacher_cosines"]


@dataclass(frozen=True, kw_only=True)
class SearchGuidedSizes(RunSizes):
    """Chapter 11 (semantic-search guidance): unlabelled sentences in the pool (``None``: every
    STSb train sentence); ``start`` is the student (the teacher is always all-MiniLM-L6-v2)."""

    pool: int | None = None


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, SearchGuidedSizes] = register_sizes(
    "11_semantic_search_guided",
    {
        "quick": SearchGuidedSizes(pool=1280, steps=40, batch_size=32, **QUICK_RUN),
        "t4": SearchGuidedSizes(steps=100, batch_size=64, **T4_RUN),
        "paper": SearchGuidedSizes(
            start=Start(BERT, "cls"), steps=None, batch_size=32, lr=3e-5, seeds=PAPER_SEEDS
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """The paper profile vs Oh et al.'s setup, :data:`~sbert_tutor.book.published.OH_SETUP`."""
    oh, src = published.OH_SETUP, published.OH.at("section 3")
    why = {
        "epochs": "the paper states none; one epoch",
        "warm-up ratio": UNSTATED_WARMUP,
        "optimizer": UNSTATED_OPTIMIZER,
    }
    paper = {
        "start model": HUB_NAMES[oh["student"]],
        "pooling": POOLINGS[oh["student"]],
        "batch size": oh["batch size"],
        "epochs": NOT_STATED,
        "learning rate": oh["learning rate"],
        "warm-up ratio": NOT_STATED,
        "optimizer": NOT_STATED,
        "training examples": "all",
    }
    return [
        *run_aspects(src, why, **paper),
        Aspect(
            "sentence pool",
            NOT_STATED,
            src,
            lambda s: (
                "every distinct STSb train sentence (STSb test sentences removed)"
                if s.pool is None
                else f"{s.pool:,} STSb train sentences"
            ),
            "the paper does not name its corpus; STSb train sentences keep the pool disjoint "
            "from the STSb test pairs the runs are scored on",
        ),
        Aspect(
            "teacher",
            "not named (the best-performing model, their ref. [13])",
            src,
            lambda s: "all-MiniLM-L6-v2",
            "the paper does not name its teacher model; all-MiniLM-L6-v2 is the book's strong "
            "sentence encoder",
        ),
    ]


def plot_teacher_cosines(mined: DataTable | pd.DataFrame, ax=None, bins: int = 30):
    """Histogram of the teacher's cosine between each sentence and its mined positive."""
    ax = new_axes(ax, figsize=(6, 3.5))
    values = as_frame(mined)["teacher cosine"]
    ax.hist(values, bins=bins, range=(0.0, 1.0), color="C0", alpha=0.8)
    ax.axvline(float(np.median(values)), color="k", ls="--", lw=1, label="median")
    ax.set_xlabel("teacher cosine(sentence, mined positive)")
    ax.set_ylabel("sentences")
    ax.legend(fontsize=8)
    return ax
