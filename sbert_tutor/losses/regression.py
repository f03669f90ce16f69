r"""Regression objectives: fit a similarity between two embeddings to a gold score.

* :func:`cosine_regression` -- the SBERT regression objective (Reimers & Gurevych, 2019):
  mean squared error between :math:`\cos(u_i, v_i)` and the gold score rescaled to :math:`[0, 1]`.
* :func:`ce_score_regression` -- the Siamese objective of Rygaard, Bramsløw, Jensen and Bagger
  ("Distance Dilemma", n.d.): a bi-encoder similarity is regressed onto a cross-encoder's
  (sigmoid) score.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from sbert_tutor.losses.checks import check_same_2d, shape_of

__all__ = ["ce_score_regression", "cosine_regression"]


def _check_targets(name: str, y: Tensor, n: int) -> Tensor:
    """Accept per-pair targets of shape ``[N]`` or ``[N, 1]``; return them flattened to ``[N]``."""
    y = torch.as_tensor(y)
    if y.shape not in (torch.Size([n]), torch.Size([n, 1])):
        raise ValueError(f"{name} must have shape [N] = [{n}] (one per pair), got {shape_of(y)}.")
    y = y.reshape(n)
    if y.is_floating_point() and torch.isnan(y).any():
        bad = torch.nonzero(torch.isnan(y)).flatten().tolist()
        raise ValueError(f"{name} contains NaN at positions {bad}; drop or fix those pairs first.")
    return y


# --------------------------------------------------------------------------- losses
def cosine_regression(
    u: Tensor,
    v: Tensor,
    scores: Tensor,
    score_range: tuple[float, float] = (0.0, 5.0),
) -> Tensor:
    r"""SBERT regression objective: MSE between cosine similarity and the rescaled gold score.

    .. math::

        \hat y_i = \frac{y_i - y_{\min}}{y_{\max} - y_{\min}}, \qquad
        \mathcal{L} = \frac{1}{N} \sum_{i=1}^{N} \bigl(\cos(u_i, v_i) - \hat y_i\bigr)^2

    where :math:`[y_{\min}, y_{\max}]` is ``score_range`` (``(0, 5)`` for STS benchmark).

    Args:
        u: Embeddings of the first sentence of each pair.
        v: Embeddings of the second sentence of each pair.
        scores: Gold similarity scores :math:`y_i`, inside ``score_range``.
        score_range: ``(y_min, y_max)`` mapped linearly onto ``[0, 1]``. Pass ``(0.0, 1.0)`` if
            the scores are already in ``[0, 1]`` (as sentence-transformers'
            ``CosineSimilarityLoss`` expects).

    Returns:
        Scalar loss (mean over the batch).

    Inputs:
        ``u``, ``v``: ``[N, d]``; ``scores``: ``[N]`` (or ``[N, 1]``).

    Raises:
        ValueError: shape mismatch, NaN scores, scores outside ``score_range``, or an empty range.

    Reference:
        Reimers & Gurevych (2019), "Sentence-BERT: Sentence Embeddings using Siamese
        BERT-Networks", Sec. 3 (regression objective function).

    Example:
        >>> u = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
        >>> v = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # cos = 1 and cos = 0
        >>> cosine_regression(u, v, torch.tensor([5.0, 0.0]))  # perfect fit
        tensor(0.)
        >>> cosine_regression(u, v, torch.tensor([2.5, 2.5]))  # (0.5^2 + 0.5^2) / 2
        tensor(0.2500)
    """
    n, _ = check_same_2d({"u": u, "v": v})
    lo, hi = float(score_range[0]), float(score_range[1])
    if not hi > lo:
        raise ValueError(f"score_range must be (low, high) with low < high, got {score_range}.")
    scores = _check_targets("scores", scores, n)
    if not scores.is_floating_point():
        scores = scores.to(u.dtype)
    outside = (scores < lo) | (scores > hi)
    if outside.any():
        raise ValueError(
            f"scores must lie in score_range=({lo:g}, {hi:g}), but got values from "
            f"{scores.min().item():g} to {scores.max().item():g}. If your scores are already in "
            f"[0, 1], pass score_range=(0.0, 1.0); for STS-B use (0.0, 5.0)."
        )
    target = ((scores - lo) / (hi - lo)).to(device=u.device, dtype=u.dtype)
    cos = F.cosine_similarity(u, v, dim=-1)
    return F.mse_loss(cos, target)


def ce_score_regression(
    q: Tensor,
    d: Tensor,
    ce_scores: Tensor,
    similarity: str = "cosine",
) -> Tensor:
    r"""Siamese objective of Rygaard et al. ("Distance Dilemma", n.d.): regress a bi-encoder score
    onto a cross-encoder's score.

    With the cross-encoder's probability :math:`y_i = \sigma(z_i)` for the logit :math:`z_i`:

    .. math::

        \text{cosine:}\quad \mathcal{L} = \frac{1}{N}\sum_{i=1}^{N}
            \bigl(y_i - \operatorname{ReLU}(\cos(q_i, d_i))\bigr)^2

        \text{euclidean:}\quad \mathcal{L} = \frac{1}{N}\sum_{i=1}^{N}
            \bigl(1 - y_i - \lVert q_i - d_i \rVert_2\bigr)^2

    i.e. a relevant pair (:math:`y_i \to 1`) should have cosine close to 1, or distance close to 0.

    Args:
        q: Query embeddings.
        d: Document (passage) embeddings, one per query.
        ce_scores: The cross-encoder's raw scores (logits) :math:`z_i` for the pairs (the
            sigmoid is applied here). They are targets: pass them detached (e.g. from a frozen
            teacher).
        similarity: ``"cosine"`` or ``"euclidean"``.

    Returns:
        Scalar loss (mean over the batch).

    Inputs:
        ``q``, ``d``: ``[N, d]``; ``ce_scores``: ``[N]`` (or ``[N, 1]``, a cross-encoder's usual
        output).

    Raises:
        ValueError: shape mismatch, NaN logits, or an unknown ``similarity``.

    Reference:
        Rygaard, Bramsløw, Jensen, Bagger (n.d.), "Distance Dilemma: Siamese vs. Triplet SBERT
        Networks for Information Retrieval", Technical University of Denmark (the Siamese
        objective with cross-encoder labels).

    Example:
        >>> q = torch.tensor([[1.0, 0.0]])
        >>> d = torch.tensor([[1.0, 0.0]])  # cos = 1, distance = 0
        >>> ce_score_regression(q, d, torch.tensor([0.0]))  # y = 0.5: (0.5 - 1)^2
        tensor(0.2500)
        >>> ce_score_regression(q, d, torch.tensor([0.0]), similarity="euclidean")  # (1 - 0.5 - 0)^2
        tensor(0.2500)
    """
    n, _ = check_same_2d({"q": q, "d": d})
    if similarity not in ("cosine", "euclidean"):
        raise ValueError(f"similarity must be 'cosine' or 'euclidean', got {similarity!r}.")
    ce_scores = _check_targets("ce_scores", ce_scores, n)
    y = torch.sigmoid(ce_scores.to(device=q.device, dtype=q.dtype))
    if similarity == "cosine":
        pred = F.relu(F.cosine_similarity(q, d, dim=-1))
        return ((y - pred) ** 2).mean()
    dist = torch.linalg.vector_norm(q - d, dim=-1)
    return ((1.0 - y - dist) ** 2).mean()
