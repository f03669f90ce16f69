r"""Gradients written out by hand and checked against autograd (chapters 6, 7, 9 and 10).

Each ``*_by_hand`` function writes a chapter's derivation in tensor code, without autograd; each
``*_check`` compares it with autograd through the library's own loss function
(:mod:`sbert_tutor.losses`) and returns one row per gradient with the largest difference.

* chapter 6, classification: :func:`softmax_gradients_by_hand`, :func:`softmax_gradient_check`;
* chapter 7, regression: :func:`cosine_regression_gradients_by_hand`,
  :func:`cosine_regression_gradient_check`;
* chapter 9, MNRL: :func:`mnrl_anchor_gradient`, :func:`mnrl_gradient_check`;
* chapter 10, SupMPN (eq. 7 of Dehghan & Amasyali, 2022): :func:`supmpn_anchor_gradient`,
  :func:`supmpn_gradient_check`.

The anchor-gradient checks of chapters 9 and 10 are one routine, :func:`anchor_gradient_check`
(by hand vs :func:`autograd_anchor_gradient`), given another loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor

from sbert_tutor.book.fixed_embeddings import mnrl_candidates
from sbert_tutor.losses import (
    DEFAULT_FEATURES,
    SoftmaxClassifier,
    check_features,
    concat_features,
    cosine_regression,
    multiple_negatives_ranking,
    softmax_classification,
    supmpn,
)
from sbert_tutor.results import Result

__all__ = [
    "GradientCheck",
    "anchor_gradient_check",
    "autograd_anchor_gradient",
    "cosine_regression_gradient_check",
    "cosine_regression_gradients_by_hand",
    "mnrl_anchor_gradient",
    "mnrl_gradient_check",
    "softmax_gradient_check",
    "softmax_gradients_by_hand",
    "supmpn_anchor_gradient",
    "supmpn_gradient_check",
]


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class GradientCheck(Result):
    """One row per gradient (shape, size, largest difference) and the hand-computed tensors."""

    by_hand: dict[str, Tensor]


def softmax_gradients_by_hand(
    u: Tensor,
    v: Tensor,
    labels: Tensor,
    weight: Tensor,
    bias: Tensor,
    features: Sequence[str] = DEFAULT_FEATURES,
) -> dict[str, Tensor]:
    r"""The gradients of SBERT's classification loss, written out (chapter 6).

    With :math:`x = [f_1; \dots; f_k]` the concatenated features, :math:`z = W x + b`,
    :math:`o = \operatorname{softmax}(z)` and :math:`\mathcal{L} = -\frac1N \sum_i \log o_{i,y_i}`:

    * :math:`\partial \mathcal{L} / \partial z_i = (o_i - e_{y_i}) / N`;
    * :math:`g_i = W^\top \partial \mathcal{L} / \partial z_i`, cut into one block :math:`g^{f}`
      per feature;
    * :math:`\partial \mathcal{L} / \partial u = g^{u} + \operatorname{sign}(u - v) \odot g^{|u-v|}
      + v \odot g^{u*v}` and
      :math:`\partial \mathcal{L} / \partial v = g^{v} - \operatorname{sign}(u - v) \odot
      g^{|u-v|} + u \odot g^{u*v}` (absent features contribute nothing).

    Args:
        u, v: ``[N, d]`` embeddings; labels: ``[N]`` class ids.
        weight, bias: the classifier's ``[C, k*d]`` matrix and ``[C]`` bias.
        features: the concatenated features, in order.

    Returns:
        ``{"logits", "probabilities", "dlogits", "du", "dv"}`` (no autograd involved).
    """
    features = check_features(features)
    n, d = u.shape
    x = concat_features(u, v, features)
    logits = x @ weight.T + bias
    probabilities = torch.softmax(logits, dim=-1)
    onehot = F.one_hot(torch.as_tensor(labels, dtype=torch.long), logits.shape[-1]).to(u.dtype)
    dlogits = (probabilities - onehot) / n
    blocks = dict(zip(features, (dlogits @ weight).split(d, dim=1), strict=True))
    zero = torch.zeros_like(u)
    sign = torch.sign(u - v)
    du = blocks.get("u", zero) + sign * blocks.get("|u-v|", zero) + v * blocks.get("u*v", zero)
    dv = blocks.get("v", zero) - sign * blocks.get("|u-v|", zero) + u * blocks.get("u*v", zero)
    return {
        "logits": logits,
        "probabilities": probabilities,
        "dlogits": dlogits,
        "du": du,
        "dv": dv,
    }


def _comparison(rows: list[tuple[str, Tensor, Tensor]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "gradient": name,
                "shape": tuple(auto.shape),
                "max |autograd|": float(auto.abs().max()),
                "max |autograd - by hand|": float((auto - hand).abs().max()),
            }
            for name, auto, hand in rows
        ]
    ).set_index("gradient")


def autograd_anchor_gradient(loss: Callable[..., Tensor], anchors: Tensor, *rest: Any) -> Tensor:
    r""":math:`\partial \mathcal{L} / \partial a` from autograd: ``loss(anchors, *rest)``
    backpropagated to a fresh copy of ``anchors``."""
    a = anchors.detach().clone().requires_grad_(True)
    loss(a, *rest).backward()
    return a.grad


def anchor_gradient_check(
    by_hand: Callable[..., Tensor],
    loss: Callable[..., Tensor],
    batch: tuple[Tensor | None, ...],
    setting: tuple[str, Sequence[float]],
    sizes: dict[str, int],
) -> pd.DataFrame:
    """A chapter's by-hand anchor gradient against autograd through the library's ``loss``,
    one row per value of one setting (MNRL's scale, SupMPN's temperature), in float64.

    ``by_hand`` and ``loss`` both take ``(*batch, value)``; ``sizes`` (e.g. ``{"anchors N": 8}``)
    are repeated on every row. Columns: the setting, the sizes, ``max |by hand - autograd|``
    and ``max |gradient|``.
    """
    tensors = tuple(None if t is None else t.double() for t in batch)
    name, values = setting
    rows = []
    for value in values:
        hand = by_hand(*tensors, value)
        auto = autograd_anchor_gradient(loss, *tensors, value)
        rows.append(
            {
                name: float(value),
                **sizes,
                "max |by hand - autograd|": float((hand - auto).abs().max()),
                "max |gradient|": float(auto.abs().max()),
            }
        )
    return pd.DataFrame(rows)


def softmax_gradient_check(
    u: Tensor,
    v: Tensor,
    labels: Tensor,
    classifier: SoftmaxClassifier,
    features: Sequence[str] | None = None,
) -> GradientCheck:
    """Autograd through :func:`~sbert_tutor.losses.softmax_classification` vs the hand derivation.

    Args:
        u, v: ``[N, d]`` embeddings; labels: ``[N]`` class ids.
        classifier: a :class:`~sbert_tutor.losses.SoftmaxClassifier` (its ``linear`` layer is read).
        features: defaults to the classifier's own.

    Returns:
        A :class:`GradientCheck`: one row per gradient (``dL/dlogits``, ``dL/du``, ``dL/dv``):
        shape, size and the largest difference; ``by_hand`` holds the hand-computed tensors.
    """
    features = tuple(features or classifier.features)
    linear = classifier.linear
    u_ = u.detach().clone().requires_grad_()
    v_ = v.detach().clone().requires_grad_()
    softmax_classification(u_, v_, labels, classifier, features).backward()
    logits = linear(concat_features(u, v, features)).detach().requires_grad_()
    F.cross_entropy(logits, torch.as_tensor(labels, dtype=torch.long)).backward()
    with torch.no_grad():
        hand = softmax_gradients_by_hand(u, v, labels, linear.weight, linear.bias, features)
    table = _comparison(
        [
            ("dL/dlogits", logits.grad, hand["dlogits"]),
            ("dL/du", u_.grad, hand["du"]),
            ("dL/dv", v_.grad, hand["dv"]),
        ]
    )
    return GradientCheck(table=table, by_hand=hand)


def cosine_regression_gradients_by_hand(
    u: Tensor, v: Tensor, scores: Tensor, score_range: tuple[float, float] = (0.0, 5.0)
) -> dict[str, Tensor]:
    r"""The gradients of SBERT's regression loss, written out (chapter 7).

    With :math:`c_i = \cos(u_i, v_i)`, :math:`t_i = (y_i - y_{\min}) / (y_{\max} - y_{\min})` and
    :math:`\mathcal{L} = \frac1N \sum_i (c_i - t_i)^2`:

    .. math::

        \frac{\partial \mathcal{L}}{\partial u_i} = \frac{2 (c_i - t_i)}{N}
        \cdot \frac{1}{\lVert u_i \rVert} \bigl(\hat v_i - c_i \hat u_i\bigr),
        \qquad \hat u = u / \lVert u \rVert,

    and the same with :math:`u, v` swapped. The bracket is orthogonal to :math:`u_i`.

    Returns:
        ``{"cosine", "targets", "dcos", "du", "dv"}`` (no autograd involved).
    """
    lo, hi = float(score_range[0]), float(score_range[1])
    n = u.shape[0]
    nu = u.norm(dim=1, keepdim=True)
    nv = v.norm(dim=1, keepdim=True)
    u_hat, v_hat = u / nu, v / nv
    cosine = (u_hat * v_hat).sum(dim=1)
    targets = (torch.as_tensor(scores, dtype=u.dtype) - lo) / (hi - lo)
    dcos = 2.0 * (cosine - targets) / n
    c = cosine[:, None]
    du = dcos[:, None] * (v_hat - c * u_hat) / nu
    dv = dcos[:, None] * (u_hat - c * v_hat) / nv
    return {"cosine": cosine, "targets": targets, "dcos": dcos, "du": du, "dv": dv}


def cosine_regression_gradient_check(
    u: Tensor, v: Tensor, scores: Tensor, score_range: tuple[float, float] = (0.0, 5.0)
) -> GradientCheck:
    """Autograd through :func:`~sbert_tutor.losses.cosine_regression` vs the hand derivation.

    Returns:
        Rows ``dL/du`` and ``dL/dv`` (as :func:`softmax_gradient_check`), plus the column
        ``max |x . dL/dx|``: the gradient is orthogonal to its own embedding, so it is ~0.
    """
    u_ = u.detach().clone().requires_grad_()
    v_ = v.detach().clone().requires_grad_()
    cosine_regression(u_, v_, scores, score_range).backward()
    hand = cosine_regression_gradients_by_hand(u, v, scores, score_range)
    table = _comparison([("dL/du", u_.grad, hand["du"]), ("dL/dv", v_.grad, hand["dv"])])
    table["max |x . dL/dx|"] = [
        float((u * u_.grad).sum(dim=1).abs().max()),
        float((v * v_.grad).sum(dim=1).abs().max()),
    ]
    return GradientCheck(table=table, by_hand=hand)


def mnrl_anchor_gradient(
    anchors: Tensor, positives: Tensor, negatives: Tensor | None = None, scale: float = 20.0
) -> Tensor:
    r""":math:`\partial \mathcal{L} / \partial a_i` of MNRL, written out (chapter 9).

    With candidates :math:`c_j`, :math:`\hat x = x / \lVert x \rVert`, logits
    :math:`z_{ij} = s \cos(a_i, c_j)`, softmax weights :math:`P_{ij}` and the indicator
    :math:`[i = j]` (1 on the diagonal, else 0):

    .. math::

        \frac{\partial \mathcal{L}}{\partial a_i} = \frac{s}{N} \sum_j (P_{ij} - [i = j])
            \frac{\hat c_j - \cos(a_i, c_j)\, \hat a_i}{\lVert a_i \rVert}

    (the anchor only enters row :math:`i` of the loss). Returns ``[N, d]``.
    """
    candidates = mnrl_candidates(positives, negatives)
    n = anchors.shape[0]
    a_norm = anchors.norm(dim=1, keepdim=True)
    a_hat = anchors / a_norm
    c_hat = F.normalize(candidates, dim=1)
    cos = a_hat @ c_hat.T
    weights = torch.softmax(scale * cos, dim=1) - torch.eye(n, cos.shape[1], dtype=cos.dtype)
    pull_push = weights @ c_hat - (weights * cos).sum(dim=1, keepdim=True) * a_hat
    return scale / n * pull_push / a_norm


def mnrl_gradient_check(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor | None = None,
    scales: Sequence[float] = (1.0, 20.0, 100.0),
) -> pd.DataFrame:
    """By-hand vs autograd MNRL anchor gradient, one row a scale (in float64)."""
    k = mnrl_candidates(positives, negatives).shape[0]
    return anchor_gradient_check(
        mnrl_anchor_gradient,
        multiple_negatives_ranking,
        (anchors, positives, negatives),
        ("scale", scales),
        {"anchors N": anchors.shape[0], "candidates K": k},
    )


def supmpn_anchor_gradient(
    anchors: Tensor, positives: Tensor, negatives: Tensor, temperature: float = 0.05
) -> Tensor:
    r""":math:`\partial \mathcal{L} / \partial a_i` of SupMPN (eq. 7), written out (chapter 10).

    With :math:`z_{ic} = \cos(a_i, c) / \tau`, the candidate set :math:`C_{ik}` of positive
    :math:`k` (its own positive, the other anchors' positives, every hard negative of the batch)
    and the softmax weight :math:`\pi^{(k)}_{ic} = e^{z_{ic}} / D_{ik}` for :math:`c \in C_{ik}`
    (0 otherwise; :math:`P` is the number of positives per anchor):

    .. math::

        \frac{\partial \mathcal{L}}{\partial a_i} = \frac{1}{N P \tau \lVert a_i \rVert}
            \sum_{k=1}^{P} \sum_{c \in C_{ik}} \bigl(\pi^{(k)}_{ic} - [c = p_{ik}]\bigr)
            \bigl(\hat c - \cos(a_i, c)\, \hat a_i\bigr).

    Shapes as in :func:`~sbert_tutor.losses.supmpn`: anchors ``[N, d]``, positives
    ``[N, P, d]``, negatives ``[N, Q, d]``. Returns ``[N, d]``.
    """
    n, num_pos, d = positives.shape
    a_norm = anchors.norm(dim=1, keepdim=True)
    a_hat = anchors / a_norm
    # candidates: every positive of the batch (row-major j, m), then every negative
    cands = F.normalize(torch.cat([positives.reshape(-1, d), negatives.reshape(-1, d)]), dim=1)
    cos = a_hat @ cands.T  # [N, N*P + N*Q]
    exp = torch.exp(cos / temperature)
    owner = torch.arange(n).repeat_interleave(num_pos)  # which anchor each positive belongs to
    weights = torch.zeros_like(cos)
    for i in range(n):
        own = (owner == i).nonzero().squeeze(1)  # columns of a_i's own positives
        others = torch.ones(cos.shape[1], dtype=torch.bool)
        others[own] = False  # in-batch positives of other anchors, and all negatives
        shared = exp[i, others].sum()
        for col in own:
            denominator = exp[i, col] + shared
            weights[i, others] += exp[i, others] / denominator
            weights[i, col] += exp[i, col] / denominator - 1.0
    weights = weights / num_pos
    pull_push = weights @ cands - (weights * cos).sum(dim=1, keepdim=True) * a_hat
    return pull_push / (n * temperature * a_norm)


def supmpn_gradient_check(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor,
    temperatures: Sequence[float] = (1.0, 0.05),
) -> pd.DataFrame:
    """By-hand vs autograd SupMPN anchor gradient, one row a temperature (in float64)."""
    return anchor_gradient_check(
        supmpn_anchor_gradient,
        supmpn,
        (anchors, positives, negatives),
        ("temperature", temperatures),
        {
            "anchors N": anchors.shape[0],
            "positives P": positives.shape[1],
            "negatives Q": negatives.shape[1],
        },
    )
