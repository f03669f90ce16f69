r"""Cross-encoder objectives: losses on the logit a cross-encoder gives each pair.

A cross-encoder with one output reads pair :math:`i` and returns a logit :math:`z_i`
(:mod:`sbert_tutor.encoders.cross_encoder`). Unlike the other losses of this package, these take logits,
not embeddings:

* :func:`cross_encoder_bce` -- binary cross-entropy with logits, sentence-transformers'
  ``BinaryCrossEntropyLoss``: binary relevance (labels 0/1) or a similarity score rescaled to
  :math:`[0, 1]` (a soft label);
* :func:`cross_encoder_mse` -- mean squared error between :math:`a(z_i)` and the score,
  sentence-transformers' ``MSELoss`` (identity :math:`a` by default, e.g. to distil a teacher's
  logits; the sigmoid to regress the predicted probability).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["CE_ACTIVATIONS", "cross_encoder_bce", "cross_encoder_mse"]

#: Activations :func:`cross_encoder_mse` puts on the logits before comparing.
CE_ACTIVATIONS = ("identity", "sigmoid")


def _shape(x: Tensor) -> str:
    return "[" + ", ".join(str(s) for s in x.shape) + "]"


def _logits_and_scores(logits: object, scores: object) -> tuple[Tensor, Tensor]:
    """Logits ``[N]`` or ``[N, 1]`` (floating point, N > 0) and finite scores of the same ``N``,
    both flattened to ``[N]``; the scores as the logits' dtype and device."""
    if not isinstance(logits, Tensor) or not logits.is_floating_point():
        raise TypeError(
            "logits must be a floating-point torch.Tensor of shape [N] or [N, 1] (one logit a "
            f"pair), got {type(logits).__name__}"
            + (f" of dtype {logits.dtype}" if isinstance(logits, Tensor) else "")
        )
    n = logits.shape[0] if logits.dim() else 0
    if logits.shape not in (torch.Size([n]), torch.Size([n, 1])) or n == 0:
        raise ValueError(
            f"logits must have shape [N] or [N, 1] with N > 0 (a model with num_labels=1), got "
            f"{_shape(logits)}"
        )
    y = torch.as_tensor(scores)
    if y.shape not in (torch.Size([n]), torch.Size([n, 1])):
        raise ValueError(f"scores must have shape [N] = [{n}] (one a pair), got {_shape(y)}")
    y = y.reshape(n).to(device=logits.device, dtype=logits.dtype)
    if not torch.isfinite(y).all():
        bad = torch.nonzero(~torch.isfinite(y)).flatten().tolist()
        raise ValueError(f"scores are NaN or infinite at positions {bad}; drop or fix those pairs")
    return logits.reshape(n), y


def _rescale(y: Tensor, score_range: tuple[float, float] | None) -> Tensor:
    r""":math:`(y - y_{\min}) / (y_{\max} - y_{\min})`; every score must lie in the range."""
    if score_range is None:
        return y
    lo, hi = float(score_range[0]), float(score_range[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"score_range must be (low, high) with low < high, got {score_range}")
    if ((y < lo) | (y > hi)).any():
        raise ValueError(
            f"scores must lie in score_range=({lo:g}, {hi:g}), but range from "
            f"{y.min().item():g} to {y.max().item():g}; pass the scale of your scores, e.g. "
            "score_range=(0, 5) for STS"
        )
    return (y - lo) / (hi - lo)


def cross_encoder_bce(
    logits: Tensor,
    scores: Tensor,
    score_range: tuple[float, float] = (0.0, 1.0),
    pos_weight: float | None = None,
) -> Tensor:
    r"""Binary cross-entropy between the pairs' logits and their labels (sentence-transformers'
    ``BinaryCrossEntropyLoss``).

    .. math::

        y_i = \frac{s_i - s_{\min}}{s_{\max} - s_{\min}} \in [0, 1],

        \mathcal{L} = -\frac{1}{N} \sum_{i=1}^{N}
            \bigl[\, w\, y_i \log \sigma(z_i) + (1 - y_i) \log\bigl(1 - \sigma(z_i)\bigr) \bigr]

    with :math:`\sigma(z) = 1 / (1 + e^{-z})` and :math:`w` = ``pos_weight`` (1 by default). For
    0/1 labels this is the negative log-likelihood of relevance; for a soft label it is minimal
    at :math:`\sigma(z_i) = y_i`, so the model's sigmoid score learns the rescaled similarity.
    Computed from the logits directly (``log-sum-exp``), never through :math:`\sigma`, so large
    logits do not overflow.

    Args:
        logits: :math:`z_i`, ``[N]`` or ``[N, 1]``.
        scores: the labels :math:`s_i` (0/1 or scores inside ``score_range``), ``[N]``.
        score_range: ``(s_min, s_max)`` mapped onto ``[0, 1]`` (``(0, 5)`` for STS).
        pos_weight: :math:`w`, the weight of the positive term (e.g. the negatives-per-positive
            ratio of an unbalanced set).

    Example:
        >>> z = torch.tensor([0.0, 0.0])
        >>> round(cross_encoder_bce(z, torch.tensor([1.0, 0.0])).item(), 4)  # log 2
        0.6931
        >>> round(cross_encoder_bce(torch.tensor([20.0]), torch.tensor([5.0]), (0, 5)).item(), 6)
        0.0
    """
    z, y = _logits_and_scores(logits, scores)
    target = _rescale(y, score_range)
    weight = (
        None
        if pos_weight is None
        else torch.tensor(float(pos_weight), dtype=z.dtype, device=z.device)
    )
    return F.binary_cross_entropy_with_logits(z, target, pos_weight=weight)


def cross_encoder_mse(
    logits: Tensor,
    scores: Tensor,
    score_range: tuple[float, float] | None = None,
    activation: str = "identity",
) -> Tensor:
    r"""Mean squared error between :math:`a(z_i)` and the score (sentence-transformers'
    ``MSELoss``).

    .. math::

        \hat y_i = \frac{s_i - s_{\min}}{s_{\max} - s_{\min}}
            \ \text{(or } s_i \text{ without a range)},

        \mathcal{L} = \frac{1}{N} \sum_{i=1}^{N} \bigl(a(z_i) - \hat y_i\bigr)^2

    with :math:`a` the identity (regress the logit itself, e.g. onto a teacher cross-encoder's
    logits) or :math:`\sigma` (regress the score that
    :meth:`~sbert_tutor.encoders.cross_encoder.CrossEncoder.predict` returns onto a similarity in
    :math:`[0, 1]`).

    Args:
        logits: :math:`z_i`, ``[N]`` or ``[N, 1]``.
        scores: the targets :math:`s_i`, ``[N]``.
        score_range: ``(s_min, s_max)`` mapped onto ``[0, 1]``; ``None`` uses the scores as given.
        activation: ``"identity"`` or ``"sigmoid"``.

    Example:
        >>> cross_encoder_mse(torch.tensor([1.0, 3.0]), torch.tensor([1.0, 1.0]))  # (0 + 4) / 2
        tensor(2.)
        >>> cross_encoder_mse(torch.tensor([0.0]), torch.tensor([0.5]), activation="sigmoid")
        tensor(0.)
    """
    if activation not in CE_ACTIVATIONS:
        raise ValueError(f"activation must be one of {CE_ACTIVATIONS}, got {activation!r}")
    z, y = _logits_and_scores(logits, scores)
    target = _rescale(y, score_range)
    predicted = torch.sigmoid(z) if activation == "sigmoid" else z
    return F.mse_loss(predicted, target)
