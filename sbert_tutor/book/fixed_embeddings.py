r"""Real data encoded once and then frozen, for the chapters' fixed-embedding analyses: STS pairs'
cosines (chapter 7), NLI triplets (chapter 8) and a :class:`FixedBatch` of training rows that
share no text (chapters 9 and 10). Every distinct text is encoded once, in eval mode
(:func:`sbert_tutor.encoders.protocol.encode_unique`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from sbert_tutor.data import STSData
from sbert_tutor.data.table import DataTable, as_frame
from sbert_tutor.encoders.protocol import Encoder, encode_unique
from sbert_tutor.evaluation.sts import predict_similarity
from sbert_tutor.stats import seeded_subset

__all__ = [
    "FixedBatch",
    "distinct_rows",
    "embed_fixed",
    "embed_triplets",
    "mnrl_candidates",
    "pair_cosines",
]


def pair_cosines(encoder: Encoder, data: STSData) -> tuple[np.ndarray, np.ndarray]:
    """``(cos(u, v), gold score)`` for every pair of an ``STSData`` (each sentence encoded once)."""
    return predict_similarity(encoder, data, show_progress_bar=False), np.asarray(data.scores)


def embed_triplets(
    encoder: Encoder, triplets: DataTable | pd.DataFrame, n: int | None = None, seed: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """Embeddings ``(anchor, positive, negative)``, each ``[n, d]`` (as the encoder normalises),
    of (a seeded sample of) triplets, e.g. :func:`~sbert_tutor.data.nli.nli_triplets`."""
    frame = as_frame(triplets)[["anchor", "positive", "negative"]]
    if n is not None and n < len(frame):
        frame = frame.iloc[seeded_subset(len(frame), n, seed)]
    a, p, q = _columns(encoder, frame, batch_size=64).values()
    return a, p, q


def _columns(encoder: Encoder, frame: pd.DataFrame, batch_size: int) -> dict[str, Tensor]:
    """Column -> ``[N, d]`` embeddings of a frame of texts, each distinct text encoded once."""
    emb = encode_unique(encoder, frame.to_numpy().ravel().tolist(), batch_size=batch_size)
    grid = emb.reshape(len(frame), frame.shape[1], -1)
    return {
        c: torch.from_numpy(np.ascontiguousarray(grid[:, j])) for j, c in enumerate(frame.columns)
    }


@dataclass
class FixedBatch:
    """Real training rows (``frame``: one column per text position, e.g. ``anchor, positive,
    negative`` or ``anchor, positive_1.., negative_1..``) and their ``embeddings`` (column ->
    ``[N, d]`` float32, as the encoder outputs them), encoded once and then frozen."""

    frame: pd.DataFrame
    embeddings: dict[str, Tensor]

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def anchors(self) -> Tensor:
        """The first column's embeddings ``[N, d]``."""
        return self.embeddings[self.frame.columns[0]]

    @property
    def positives(self) -> Tensor:
        """The second column's embeddings ``[N, d]`` (the first positive)."""
        return self.embeddings[self.frame.columns[1]]

    @property
    def negatives(self) -> Tensor | None:
        """``[N, Q, d]``: every column whose name starts with ``negative`` (``None`` if none)."""
        return self.grouped("negative")

    def grouped(self, prefix: str) -> Tensor | None:
        """``[N, K, d]``: the columns whose names start with ``prefix``, stacked in order."""
        cols = [c for c in self.frame.columns if str(c).startswith(prefix)]
        if not cols:
            return None
        return torch.stack([self.embeddings[c] for c in cols], dim=1)

    def head(self, n: int) -> FixedBatch:
        """The first ``n`` rows (a batch of size ``n``)."""
        return FixedBatch(self.frame.iloc[:n], {k: v[:n] for k, v in self.embeddings.items()})


def distinct_rows(rows: Sequence[Sequence[str]], n: int | None, seed: int = 0) -> list[int]:
    """Indices of up to ``n`` rows (``None``: all that fit), in a seeded random order, skipping a
    row when one of its texts (stripped) already occurs in a chosen row."""
    order = np.random.default_rng(seed).permutation(len(rows))
    seen: set[str] = set()
    chosen: list[int] = []
    for i in order:
        texts = {t.strip() for t in rows[i]}
        if seen.isdisjoint(texts):
            chosen.append(int(i))
            seen |= texts
            if n is not None and len(chosen) == n:
                break
    return chosen


def embed_fixed(
    encoder: Encoder,
    rows: DataTable | pd.DataFrame,
    n: int | None = None,
    seed: int = 0,
    batch_size: int = 64,
) -> FixedBatch:
    """Encode a seeded sample of ``n`` rows (no text shared between rows), once, in eval mode."""
    frame = as_frame(rows)
    keep = distinct_rows(frame.to_numpy().tolist(), n, seed)
    sample = frame.iloc[keep].reset_index(drop=True)
    return FixedBatch(sample, _columns(encoder, sample, batch_size))


def mnrl_candidates(positives: Tensor, negatives: Tensor | None) -> Tensor:
    """MNRL's candidate list: all positives, then every hard negative of the batch."""
    if negatives is None:
        return positives
    return torch.cat([positives, negatives.reshape(-1, positives.shape[-1])], dim=0)
