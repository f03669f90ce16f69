"""Chapter 11: contrastive learning guided by semantic search (Oh, Kim and Lim, n.d., "Guidance
by Semantic Search for Contrastive Learning of Sentence Embeddings"), beside SimCSE's dropout
positives (Gao et al., 2021).

Unlabelled sentences get a positive partner in one of two ways, and the student is trained with
the in-batch contrastive objective (:func:`~sbert_tutor.losses.in_batch_contrastive`):

* **teacher positives** (:func:`sbert_tutor.training.mining.mine_positives`): a teacher encoder embeds the pool; each
  sentence's nearest neighbour in the pool (exact search,
  :func:`~sbert_tutor.search.exact.semantic_search`), itself excluded, becomes its positive;
* **dropout positives** (:func:`dropout_pairs`, unsupervised SimCSE): the sentence is its own
  positive; the two copies differ only by their dropout masks, which requires the encoder to be
  in train mode (:func:`dropout_view_similarity` measures it through the trainer's own path).

:func:`unlabeled_pool` draws the sentences, e.g. from STSb train with scores and pairing dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from sbert_tutor.book import published
from sbert_tutor.book.deviations import HUB_NAMES, NOT_STATED, POOLINGS, Aspect, run_aspects
from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.sizes import BERT, PAPER_SEEDS, QUICK_RUN, T4_RUN, RunSizes, register_sizes
from sbert_tutor.book.weak_start import Start
from sbert_tutor.data import STSData, load_sts
from sbert_tutor.data.table import DataTable, as_frame
from sbert_tutor.encoders.protocol import Encoder
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.stats import seeded_subset
from sbert_tutor.training import embed_rows
from sbert_tutor.training.mining import search_pool

__all__ = [
    "SIZES",
    "SearchGuidedSizes",
    "dropout_pairs",
    "dropout_view_similarity",
    "encode_pool",
    "neighbour_quality",
    "paper_aspects",
    "partners_in_pool",
    "plot_teacher_cosines",
    "pool_overlap",
    "unlabeled_pool",
]


@dataclass(frozen=True, kw_only=True)
class SearchGuidedSizes(RunSizes):
    """Chapter 11 (semantic-search guidance): unlabelled sentences in the pool; ``start`` is the
    student (the teacher is always all-MiniLM-L6-v2 itself)."""

    pool: int | None


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, SearchGuidedSizes] = register_sizes(
    "11_semantic_search_guided",
    {
        "quick": SearchGuidedSizes(pool=1280, steps=40, batch_size=32, **QUICK_RUN),
        "t4": SearchGuidedSizes(pool=None, steps=100, batch_size=64, **T4_RUN),
        "paper": SearchGuidedSizes(
            pool=None,
            start=Start(BERT, "cls"),
            steps=None,
            epochs=1,
            batch_size=32,
            lr=3e-5,
            seeds=PAPER_SEEDS,
        ),
    },
)


def paper_aspects() -> list[Aspect]:
    """What the paper profile is compared on with Oh et al.'s setup, read from
    :data:`~sbert_tutor.book.published.OH_SETUP` now (see :mod:`sbert_tutor.book.deviations`)."""
    oh, src = published.OH_SETUP, published.OH.at("section 3")
    return [
        *run_aspects(
            src,
            {
                "epochs": "the paper states none; one epoch",
                "warm-up ratio": "the paper states none; the trainer's default warm-up over 10% "
                "of the steps",
                "optimizer": "the paper states none; the trainer's AdamW",
            },
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


def _sentences(data: STSData) -> set[str]:
    return {s.strip() for s in [*data.sentences1, *data.sentences2]}


def unlabeled_pool(
    task: str = "stsb",
    split: str = "train",
    n: int | None = None,
    seed: int = 0,
    exclude: STSData | None = None,
) -> DataTable:
    """Distinct sentences of an STS split, scores and pairing dropped; a seeded sample of ``n``.

    Args:
        task, split: the STS data the sentences come from.
        n: sample size (``None``: every distinct sentence).
        seed: the sample's seed.
        exclude: an ``STSData`` (e.g. the evaluation's test split) whose sentences are removed
            from the pool before sampling, so that no evaluation sentence is trained on.

    Returns a one-column :class:`~sbert_tutor.data.table.DataTable` (``sentence``) with its
    source and the files read (for provenance). Sentences are drawn one by one, not as pairs, so
    in a sample a sentence's STS partner is in the pool only by chance; without a sample
    (``n=None``) most partners are in it (:func:`partners_in_pool`).
    """
    data = load_sts(task, split)
    unique = list(dict.fromkeys(s.strip() for s in [*data.sentences1, *data.sentences2]))
    unique = [s for s in unique if s]
    steps = [f"{len(unique)} distinct"]
    if exclude is not None:
        banned = _sentences(exclude)
        kept = [s for s in unique if s not in banned]
        steps.append(f"{len(unique) - len(kept)} also in {exclude.name}/{exclude.split} removed")
        unique = kept
    if n is not None and n < len(unique):
        unique = [unique[i] for i in seeded_subset(len(unique), n, seed)]
        steps.append(f"{n} sampled with seed {seed}")
    return DataTable(
        pd.DataFrame({"sentence": unique}),
        source=f"{data.name}/{data.split} sentences, scores and pairing dropped "
        f"({', '.join(steps)}; {data.source})",
        files=tuple(str(f) for f in data.files),
    )


def pool_overlap(pool: DataTable, data: STSData) -> pd.Series:
    """How many pool sentences also occur (after strip) in an evaluation set (``STSData``)."""
    evaluation = _sentences(data)
    shared = sum(1 for s in pool.table["sentence"] if s.strip() in evaluation)
    return pd.Series(
        {
            "pool sentences": len(pool),
            f"distinct {data.name}/{data.split} sentences": len(evaluation),
            f"pool sentences also in {data.name}/{data.split}": shared,
        },
        name="count",
    )


def partners_in_pool(pool: DataTable, data: STSData) -> pd.Series:
    """How many pairs of an STS split (``STSData``) have both sentences (after strip) in the pool:
    for those, a sentence's nearest neighbour may be the partner annotators paired it with."""
    sentences = {s.strip() for s in pool.table["sentence"]}
    both = sum(
        1
        for a, b in zip(data.sentences1, data.sentences2, strict=True)
        if a.strip() in sentences and b.strip() in sentences
    )
    return pd.Series(
        {
            f"{data.name}/{data.split} pairs": len(data.sentences1),
            "pairs with both sentences in the pool": both,
        },
        name="count",
    )


def encode_pool(teacher: Encoder, pool: DataTable, batch_size: int = 64) -> np.ndarray:
    """The teacher's embeddings of the pool sentences, ``[n, d]`` (eval mode, encoded once)."""
    sentences = pool.table["sentence"].tolist()
    return teacher.encode(sentences, batch_size=batch_size, show_progress_bar=False)


def neighbour_quality(
    pool: DataTable,
    embeddings: np.ndarray,
    sizes: Sequence[int],
    seed: int = 0,
    top_k: int = 3,
) -> pd.DataFrame:
    """How close the mined positive is, as a function of the pool size.

    For each size ``m``, a seeded random sub-pool of ``m`` sentences is searched in itself and
    the teacher cosine of each sentence's nearest other sentence is summarised (quartiles and
    mean). Uses the given embeddings; nothing is encoded.
    """
    sentences = pool.table["sentence"].tolist()
    rng = np.random.default_rng(seed)
    rows = []
    for m in sizes:
        if not 2 <= m <= len(sentences):
            raise ValueError(f"pool sizes must lie in 2..{len(sentences)}, got {m}")
        keep = seeded_subset(len(sentences), m, rng)
        part = [sentences[i] for i in keep]
        scores, _, best = search_pool(embeddings[keep], part, top_k)
        cos = np.array([scores[i, c] for i, c in enumerate(best) if c >= 0])
        rows.append(
            {
                "pool size": int(m),
                "mean": float(cos.mean()),
                "25%": float(np.quantile(cos, 0.25)),
                "median": float(np.median(cos)),
                "75%": float(np.quantile(cos, 0.75)),
            }
        )
    table = pd.DataFrame(rows).set_index("pool size")
    table.columns.name = "teacher cosine of the nearest other sentence"
    return table


def dropout_pairs(pool: DataTable) -> DataTable:
    """Unsupervised SimCSE's pairs: each sentence with itself (columns ``sentence``, ``positive``)."""
    sentences = pool.table["sentence"].tolist()
    return DataTable(
        pd.DataFrame({"sentence": sentences, "positive": sentences}),
        source=f"{pool.source}; positive = the same sentence (dropout noise)",
        files=pool.files,
    )


def dropout_view_similarity(
    encoder: SentenceEncoder, sentences: Sequence[str], seed: int = 0
) -> pd.DataFrame:
    """Cosine between two copies of each sentence, encoded in one forward pass as the trainer does
    (:func:`~sbert_tutor.training.embed_rows`), in eval mode and in train mode.

    In eval mode dropout is off, so the copies are identical (cosine 1); in train mode each copy
    gets its own dropout mask. The encoder's mode is restored afterwards.
    """
    rows = [(s, s) for s in sentences]
    was_training = encoder.training
    out = {}
    try:
        for mode in ("eval", "train"):
            encoder.train(mode == "train")
            torch.manual_seed(seed)
            with torch.no_grad():
                emb = embed_rows(encoder, rows)
            out[f"cosine, {mode} mode"] = F.cosine_similarity(emb[:, 0], emb[:, 1]).cpu().numpy()
    finally:
        encoder.train(was_training)
    table = pd.DataFrame({"sentence": list(sentences), **out})
    return table
