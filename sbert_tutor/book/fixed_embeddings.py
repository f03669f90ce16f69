r"""Real data encoded once and then frozen: the input of the chapters' fixed-embedding analyses.

* :func:`~sbert_tutor.data.sts.sample_sts` -- a seeded sample of an STS split (chapters 6-8);
* :func:`pair_cosines` -- :math:`\cos(u, v)` and the gold score of every STS pair (chapter 7);
* :func:`embed_triplets` -- (anchor, positive, negative) embeddings of NLI triplets (chapter 8);
* :class:`FixedBatch` / :func:`embed_fixed` -- a seeded sample of training rows, no text shared
  between rows, encoded once (chapters 9 and 10); :func:`mnrl_candidates` lists MNRL's
  candidates for such a batch.

Every distinct text is encoded once (:func:`sbert_tutor.encoders.protocol.encode_unique`), in eval mode.
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
    """Embeddings ``(anchor, positive, negative)``, each ``[n, d]``, of (a seeded sample of) triplets.

    ``triplets`` has columns ``anchor, positive, negative`` (e.g.
    :func:`~sbert_tutor.data.nli.nli_triplets`); every distinct text is encoded once, with the
    encoder's own normalisation setting.
    """
    frame = as_frame(triplets)[["anchor", "positive", "negative"]]
    if n is not None and n < len(frame):
        frame = frame.iloc[seeded_subset(len(frame), n, seed)]
    a, p, q = _columns(encoder, frame, batch_size=64).values()
    return a, p, q


def _columns(encoder: Encoder, frame: pd.DataFrame, batch_size: int) -> dict[str, Tensor]:
    """Column -> ``[N, d]`` embeddings of a frame of texts, each distinct text encoded once
    (row by row: the rows' texts are encoded in order of first appearance)."""
    emb = encode_unique(encoder, frame.to_numpy().ravel().tolist(), batch_size=batch_size)
    grid = emb.reshape(len(frame), frame.shape[1], -1)
    return {
        c: torch.from_numpy(np.ascontiguousarray(grid[:, j])) for j, c in enumerate(frame.columns)
    }


@dataclass
class FixedBatch:
    """Real training rows and their embeddings, encoded once and then frozen.

    Attributes:
        frame: the sampled rows (one column per text position, e.g. ``anchor, positive,
            negative`` or ``anchor, positive_1.., negative_1..``).
        embeddings: column -> ``[N, d]`` float32 tensor, as the encoder outputs them (normalised
            when the encoder normalises).
    """

    frame: pd.DataFrame
    embeddings: dict[str, Tensor]

    def __len__(self) -> int:
        return len(self.frame)

    def _column(self, i: int) -> Tensor:
        return self.embeddings[self.frame.columns[i]]

    @property
    def anchors(self) -> Tensor:
        """The first column's embeddings ``[N, d]``."""
        return self._column(0)

    @property
    def positives(self) -> Tensor:
        """The second column's embeddings ``[N, d]`` (the first positive)."""
        return self._column(1)

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
    """Indices of up to ``n`` rows, in a seeded random order, no two of which share a text.

    A row is skipped when one of its texts (stripped) already occurs in a chosen row. ``n=None``
    takes every row that fits.
    """
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
    """Encode a seeded sample of ``n`` rows (no text shared between rows), once.

    Every distinct text is encoded a single time (``encoder.encode``, eval mode, no dropout).
    """
    frame = as_frame(rows)
    keep = distinct_rows(frame.to_numpy().tolist(), n, seed)
    sample = frame.iloc[keep].reset_index(drop=True)
    return FixedBatch(sample, _columns(encoder, sample, batch_size))


def mnrl_candidates(positives: Tensor, negatives: Tensor | None) -> Tensor:
    """MNRL's candidate list: all positives, then every hard negative of the batch."""
    if negatives is None:
        return positives
    return torch.cat([positives, negatives.reshape(-1, positives.shape[-1])], dim=0)
