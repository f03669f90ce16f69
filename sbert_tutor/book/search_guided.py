r"""Chapter 11: contrastive learning guided by semantic search (Oh, Kim and Lim, n.d., "Guidance
by Semantic Search for Contrastive Learning of Sentence Embeddings"), beside SimCSE's dropout
positives (Gao et al., 2021).

Unlabelled sentences get a positive partner in one of two ways, and the student is trained with
the in-batch contrastive objective (:func:`~sbert_tutor.losses.in_batch_contrastive`):

* **teacher positives** (:func:`mine_teacher_positives`): a teacher encoder embeds the pool; each
  sentence's nearest neighbour in the pool (exact search,
  :func:`~sbert_tutor.search.semantic_search`), itself excluded, becomes its positive;
* **dropout positives** (:func:`dropout_pairs`, unsupervised SimCSE): the sentence is its own
  positive; the two copies differ only by their dropout masks, which requires the encoder to be
  in train mode (:func:`dropout_view_similarity` measures it through the trainer's own path).

:func:`unlabeled_pool` draws the sentences, e.g. from STSb train with scores and pairing dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from sbert_tutor.data import STSData, load_sts
from sbert_tutor.data.table import DataTable
from sbert_tutor.embedding import Encoder
from sbert_tutor.encoder import SentenceEncoder
from sbert_tutor.search import semantic_search
from sbert_tutor.stats import seeded_subset
from sbert_tutor.training import embed_rows


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
    a sentence's STS partner is in the pool only by chance.
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


def nearest_other(indices: np.ndarray, sentences: Sequence[str]) -> list[int]:
    """Per query row of a pool searched in itself, the *column* of the first result that is
    neither the query itself nor a copy of its text (-1 when there is none).

    ``indices`` is ``[n, top_k]``, best first (:func:`~sbert_tutor.search.semantic_search`).
    """
    out = []
    for i, row in enumerate(indices):
        own = sentences[i].strip()
        out.append(
            next((c for c, j in enumerate(row) if j != i and sentences[int(j)].strip() != own), -1)
        )
    return out


def encode_pool(teacher: Encoder, pool: DataTable, batch_size: int = 64) -> np.ndarray:
    """The teacher's embeddings of the pool sentences, ``[n, d]`` (eval mode, encoded once)."""
    sentences = pool.table["sentence"].tolist()
    return teacher.encode(sentences, batch_size=batch_size, show_progress=False)


def _search_self(embeddings: np.ndarray, sentences: Sequence[str], top_k: int):
    """Search a pool in itself; per row, the (score, index) of the nearest other sentence."""
    scores, indices = semantic_search(
        embeddings,
        embeddings,
        top_k=min(top_k, len(sentences)),
        device="cpu",
        show_progress=False,
    )
    return scores, indices, nearest_other(indices, sentences)


def mine_teacher_positives(
    teacher: SentenceEncoder,
    pool: DataTable,
    embeddings: np.ndarray | None = None,
    top_k: int = 3,
    batch_size: int = 64,
) -> DataTable:
    """Each pool sentence and its nearest other pool sentence under the ``teacher``'s cosine.

    ``embeddings`` (from :func:`encode_pool`) saves encoding the pool again. Returns columns
    ``sentence``, ``positive`` and ``teacher cosine``; sentences without a neighbour among the
    ``top_k`` results (only copies of themselves) are dropped. Train on
    ``mined.select("sentence", "positive")``.
    """
    sentences = pool.table["sentence"].tolist()
    emb = encode_pool(teacher, pool, batch_size) if embeddings is None else embeddings
    scores, indices, best = _search_self(emb, sentences, top_k)
    rows = [
        (sentences[i], sentences[int(indices[i, c])], float(scores[i, c]))
        for i, c in enumerate(best)
        if c >= 0
    ]
    return DataTable(
        pd.DataFrame(rows, columns=["sentence", "positive", "teacher cosine"]),
        source=f"{pool.source}; positive = the teacher's nearest other pool sentence "
        f"({teacher.name})",
        files=pool.files,
    )


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
        scores, _, best = _search_self(embeddings[keep], part, top_k)
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
            out[f"cosine, {mode} mode"] = F.cosine_similarity(emb[:, 0], emb[:, 1]).numpy()
    finally:
        encoder.train(was_training)
    table = pd.DataFrame({"sentence": list(sentences), **out})
    return table
