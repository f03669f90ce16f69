r"""Matryoshka representation learning: one loss at several prefix lengths (book chapter 15).

Kusupati et al. (2022) train an embedding so that every prefix of it is itself a good embedding.
Given a loss :math:`\mathcal{L}` on embeddings, prefix lengths :math:`m_1 > \dots > m_K` and
weights :math:`w_k`, the Matryoshka loss evaluates :math:`\mathcal{L}` on every embedding
truncated to its first :math:`m_k` coordinates and renormalised,

.. math::

    \operatorname{shrink}_m(x) = \frac{x_{1:m}}{\lVert x_{1:m} \rVert},

    \mathcal{L}_{\text{Matryoshka}} = \sum_{k=1}^{K} w_k\,
    \mathcal{L}\bigl(\operatorname{shrink}_{m_k}(u), \operatorname{shrink}_{m_k}(v), \dots\bigr),

so the first coordinates are trained by every term and carry the most. This is
sentence-transformers' ``MatryoshkaLoss(model, loss, matryoshka_dims, matryoshka_weights,
n_dims_per_step)``: the same truncation and renormalisation (its ``shrink``), the dimensions
sorted from largest to smallest with their weights, every weight 1 by default, and with
``n_dims_per_step > 0`` a random subset of that many dimensions a step. The one forward pass is
shared by every term; only the loss is evaluated :math:`K` times.

:func:`matryoshka_loss` wraps any of the library's pure losses (whose embedding arguments are
tensors ``[..., d]``); :class:`~sbert_tutor.training.objectives.MatryoshkaMNRLObjective` is the
registered training objective over :func:`~sbert_tutor.losses.multiple_negatives_ranking`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch.nn.functional as F
from torch import Tensor

__all__ = ["check_matryoshka_dims", "matryoshka_loss", "shrink"]


def shrink(x: Tensor, dim: int) -> Tensor:
    """The first ``dim`` coordinates of the last axis, L2-normalised (sentence-transformers'
    ``shrink``)."""
    if dim > x.shape[-1]:
        raise ValueError(
            f"cannot keep {dim} dimensions of {x.shape[-1]}-dimensional embeddings: every "
            "Matryoshka dimension must be at most the model's embedding dimension"
        )
    return F.normalize(x[..., :dim], p=2, dim=-1)


def check_matryoshka_dims(
    dims: Sequence[int], weights: Sequence[float] | None = None
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Dimensions and weights sorted from the largest dimension down (weights default to 1)."""
    dims = [int(d) for d in dims]
    if not dims:
        raise ValueError("give at least one Matryoshka dimension, e.g. dims=(384, 256, 128, 64)")
    if any(d <= 0 for d in dims):
        raise ValueError(f"every Matryoshka dimension must be > 0, got {dims}")
    if weights is None:
        weights = [1.0] * len(dims)
    if len(weights) != len(dims):
        raise ValueError(
            f"{len(weights)} weights for {len(dims)} dimensions: give one weight a dimension"
        )
    pairs = sorted(zip(dims, (float(w) for w in weights), strict=True), key=lambda p: -p[0])
    return tuple(d for d, _ in pairs), tuple(w for _, w in pairs)


def matryoshka_loss(
    loss: Callable[..., Tensor],
    embeddings: Sequence[Tensor],
    dims: Sequence[int],
    weights: Sequence[float] | None = None,
    n_dims_per_step: int = -1,
    rng: random.Random | None = None,
    loss_options: Mapping[str, Any] | None = None,
) -> Tensor:
    r""":math:`\sum_k w_k\, \mathcal{L}(\operatorname{shrink}_{m_k}(e) \text{ for each } e)`
    (module docstring).

    Args:
        loss: a pure loss taking the embedding tensors positionally, e.g.
            :func:`~sbert_tutor.losses.multiple_negatives_ranking`.
        embeddings: its embedding arguments (each ``[..., d]``), in its order; ``None`` entries
            (an absent optional argument) are passed on as ``None``.
        dims, weights: the prefix lengths :math:`m_k` and their weights (default 1 each).
        n_dims_per_step: ``> 0``: only that many dimensions, drawn at random with ``rng``
            (Python's ``random`` module by default, as sentence-transformers draws them).
        loss_options: keywords for ``loss``, as a mapping (``{"scale": 20.0}``, ``{"margin":
            0.5}``, ...): each term calls ``loss(*shrunk, **loss_options)``, so a keyword
            ``loss`` does not take is its ``TypeError``.

    Example:
        >>> import torch
        >>> from sbert_tutor.losses import multiple_negatives_ranking
        >>> a, p = torch.randn(4, 8), torch.randn(4, 8)
        >>> total = matryoshka_loss(multiple_negatives_ranking, (a, p), dims=(8, 4))
        >>> bool(torch.isclose(total, multiple_negatives_ranking(a, p)
        ...      + multiple_negatives_ranking(a[:, :4], p[:, :4])))
        True
    """
    dims, weights = check_matryoshka_dims(dims, weights)
    chosen = list(range(len(dims)))
    if 0 < n_dims_per_step < len(dims):
        chosen = sorted((rng or random).sample(chosen, n_dims_per_step))
    total: Tensor | float = 0.0
    for k in chosen:
        shrunk = [None if e is None else shrink(e, dims[k]) for e in embeddings]
        total = total + weights[k] * loss(*shrunk, **(loss_options or {}))
    assert isinstance(total, Tensor)
    return total
