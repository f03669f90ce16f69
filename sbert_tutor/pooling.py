r"""Pooling: from token embeddings to one sentence embedding (book chapter 3, *Siamese SBERT*).

Given the last-layer token embeddings :math:`H \in \mathbb{R}^{T \times d}` of a sentence and its
attention mask :math:`m \in \{0, 1\}^T` (1 = real token, 0 = padding):

* ``mean``: :math:`u = \frac{\sum_t m_t H_t}{\max(\sum_t m_t, \epsilon)}` — padding never enters
  the average, and the clamp keeps an all-padding row finite.
* ``max``: :math:`u_j = \max_{t: m_t = 1} H_{tj}` — padding is set to :math:`-\infty` first.
* ``cls``: :math:`u = H_0`, the ``[CLS]`` token.

See ``book/03_siamese_pooling_sts.ipynb``.
"""

from __future__ import annotations

import torch

POOLING_MODES = ("mean", "max", "cls")


def check_pooling(mode: str) -> str:
    """Return ``mode`` if it is a known pooling mode, else raise a ``ValueError`` listing them."""
    if mode not in POOLING_MODES:
        raise ValueError(f"unknown pooling {mode!r}; choose one of {', '.join(POOLING_MODES)}")
    return mode


def pool(
    token_embeddings: torch.Tensor, attention_mask: torch.Tensor, mode: str = "mean"
) -> torch.Tensor:
    """Pool ``[batch, T, d]`` token embeddings into ``[batch, d]`` sentence embeddings.

    Args:
        token_embeddings: last hidden states, shape ``[batch, T, d]``.
        attention_mask: ``[batch, T]``, 1 for real tokens and 0 for padding.
        mode: ``"mean"``, ``"max"`` or ``"cls"`` (see the module docstring for the maths).
    """
    check_pooling(mode)
    if mode == "cls":
        return token_embeddings[:, 0]
    mask = attention_mask.unsqueeze(-1).to(token_embeddings.dtype)
    if mode == "mean":
        summed = (token_embeddings * mask).sum(dim=1)
        counts = mask.sum(dim=1).clamp(min=1e-9)
        return summed / counts
    masked = token_embeddings.masked_fill(mask == 0, float("-inf"))
    pooled = masked.max(dim=1).values
    # A row with no real token would be -inf everywhere; give it zeros instead of infinities.
    return torch.where(torch.isinf(pooled), torch.zeros_like(pooled), pooled)
