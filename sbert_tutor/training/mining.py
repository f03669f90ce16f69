r"""Positive mining by semantic search: each sentence's nearest *other* sentence becomes its
positive (Oh, Kim and Lim, "Guidance by Semantic Search for Contrastive Learning of Sentence
Embeddings"; book chapter 11).

A teacher encoder embeds a pool of sentences :math:`s_1, \dots, s_n` as :math:`t_1, \dots, t_n`;
the positive of :math:`s_i` is

.. math::

    p(s_i) = s_{j^*}, \qquad j^* = \operatorname*{arg\,max}_{j \ne i,\ s_j \ne s_i} \cos(t_i, t_j),

found by exact search of the pool in itself (:func:`~sbert_tutor.search.exact.semantic_search`) among
the ``top_k`` nearest; a sentence whose ``top_k`` neighbours are all itself or copies of its
text gets no positive. The mined pairs train any pair objective (e.g.
:func:`~sbert_tutor.losses.in_batch_contrastive` or MNRL).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sbert_tutor.data.table import DataTable
from sbert_tutor.encoders.protocol import Encoder
from sbert_tutor.search.exact import semantic_search

__all__ = ["mine_positives", "nearest_other", "search_pool"]


def nearest_other(indices: np.ndarray, sentences: Sequence[str]) -> list[int]:
    """Per query row of a pool searched in itself, the *column* of the first result that is
    neither the query itself nor a copy of its text (-1 when there is none).

    ``indices`` is ``[n, top_k]``, best first (:func:`~sbert_tutor.search.exact.semantic_search`).
    """
    out = []
    for i, row in enumerate(indices):
        own = sentences[i].strip()
        out.append(
            next((c for c, j in enumerate(row) if j != i and sentences[int(j)].strip() != own), -1)
        )
    return out


def search_pool(
    embeddings: np.ndarray, sentences: Sequence[str], top_k: int
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Search a pool in itself: ``(scores, indices, nearest)`` with ``scores`` and ``indices``
    ``[n, top_k]`` best first, and ``nearest`` the column of each row's nearest other sentence
    (:func:`nearest_other`)."""
    scores, indices = semantic_search(
        embeddings,
        embeddings,
        top_k=min(top_k, len(sentences)),
        device="cpu",
        show_progress_bar=False,
    )
    return scores, indices, nearest_other(indices, sentences)


def mine_positives(
    teacher: Encoder,
    pool: DataTable,
    embeddings: np.ndarray | None = None,
    top_k: int = 3,
    batch_size: int = 64,
    column: str = "sentence",
) -> DataTable:
    """Each sentence of ``pool`` (its ``column``) and its nearest other pool sentence under the
    ``teacher``'s cosine.

    ``embeddings`` (the teacher's, ``[n, d]`` in pool order) saves encoding the pool again.
    Returns a :class:`~sbert_tutor.data.table.DataTable` with columns ``sentence``, ``positive``
    and ``teacher cosine``, whose ``source`` says how the positives were made; sentences without
    a neighbour among the ``top_k`` results (only copies of themselves) are dropped. Train on
    ``mined.select("sentence", "positive")``.
    """
    sentences = pool.table[column].tolist()
    if embeddings is None:
        embeddings = teacher.encode(sentences, batch_size=batch_size, show_progress_bar=False)
    scores, indices, best = search_pool(embeddings, sentences, top_k)
    rows = [
        (sentences[i], sentences[int(indices[i, c])], float(scores[i, c]))
        for i, c in enumerate(best)
        if c >= 0
    ]
    return DataTable(
        pd.DataFrame(rows, columns=["sentence", "positive", "teacher cosine"]),
        source=f"{pool.source}; positive = the teacher's nearest other pool sentence "
        f"({getattr(teacher, 'name', type(teacher).__name__)})",
        files=pool.files,
    )
