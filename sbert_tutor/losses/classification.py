r"""Classification objective: SBERT's softmax classifier over combined pair features (NLI).

The pair :math:`(u, v)` is turned into one feature vector (by default
:math:`(u, v, |u - v|)`), a linear layer maps it to class logits, and cross-entropy is minimised.
Which features are concatenated is the ablation of SBERT's Table 6.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sbert_tutor.losses.checks import check_same_2d, shape_of

__all__ = [
    "DEFAULT_FEATURES",
    "VALID_FEATURES",
    "SoftmaxClassifier",
    "check_features",
    "concat_features",
    "feature_dim",
    "feature_label",
    "softmax_classification",
]

#: Every feature :func:`concat_features` knows, in sentence-transformers' concatenation order.
VALID_FEATURES: tuple[str, ...] = ("u", "v", "|u-v|", "u*v")
#: The SBERT default, :math:`(u, v, |u - v|)`.
DEFAULT_FEATURES: tuple[str, ...] = ("u", "v", "|u-v|")


def check_features(features: Sequence[str]) -> tuple[str, ...]:
    """The feature names as a tuple, or a ``ValueError`` naming the unknown or repeated ones."""
    if isinstance(features, str):  # a lone "u" would otherwise be iterated character by character
        features = (features,)
    features = tuple(features)
    if not features:
        raise ValueError(f"features must name at least one of {list(VALID_FEATURES)}, got none.")
    unknown = [f for f in features if f not in VALID_FEATURES]
    if unknown:
        raise ValueError(
            f"unknown feature(s) {unknown}; valid features are {list(VALID_FEATURES)}."
        )
    if len(set(features)) != len(features):
        raise ValueError(f"features must not repeat a feature, got {list(features)}.")
    return features


def feature_label(features: Sequence[str]) -> str:
    """How a feature set is written in tables: ``("u", "v", "|u-v|")`` -> ``"(u, v, |u-v|)"``."""
    return "(" + ", ".join(check_features(features)) + ")"


def feature_dim(d: int, features: Sequence[str] = DEFAULT_FEATURES) -> int:
    r"""Width :math:`m \cdot d` of the concatenated pair features (``m = len(features)``).

    Args:
        d: Embedding dimension.
        features: Feature names, a subset of ``("u", "v", "|u-v|", "u*v")``.

    Returns:
        ``len(features) * d``, the ``in_features`` the classifier needs.

    Example:
        >>> feature_dim(768)  # (u, v, |u-v|): SBERT's 3 * 768
        2304
        >>> feature_dim(768, ("u", "v", "|u-v|", "u*v"))
        3072
    """
    if int(d) != d or d < 1:
        raise ValueError(f"d must be a positive integer (the embedding dimension), got {d!r}.")
    return len(check_features(features)) * int(d)


def concat_features(u: Tensor, v: Tensor, features: Sequence[str] = DEFAULT_FEATURES) -> Tensor:
    r"""Concatenate the pair features, in the order given.

    .. math:: x_i = [\, f_1(u_i, v_i);\ \dots;\ f_m(u_i, v_i) \,],\qquad
        f \in \{u,\ v,\ |u - v|,\ u \ast v\}

    Args:
        u: First-sentence embeddings.
        v: Second-sentence embeddings.
        features: Feature names; the default ``("u", "v", "|u-v|")`` is SBERT's best setting.
            (sentence-transformers always uses the order ``u, v, |u-v|, u*v``.)

    Returns:
        Tensor of shape ``[N, m * d]`` (``m = len(features)``).

    Inputs:
        ``u``, ``v``: ``[N, d]``.

    Example:
        >>> u, v = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 1.0]])
        >>> concat_features(u, v, ("|u-v|", "u*v"))
        tensor([[2., 1., 3., 2.]])
    """
    features = check_features(features)
    check_same_2d({"u": u, "v": v})
    parts = {"u": lambda: u, "v": lambda: v, "|u-v|": lambda: (u - v).abs(), "u*v": lambda: u * v}
    return torch.cat([parts[f]() for f in features], dim=-1)


class SoftmaxClassifier(nn.Module):
    r"""The SBERT classification head: one linear layer :math:`z = W x + b`,
    :math:`W \in \mathbb{R}^{k \times md}`, for :math:`k` classes and :math:`m` feature blocks.

    Its ``forward`` takes the *already concatenated* features ``[N, m*d]`` (see
    :func:`concat_features`) and returns logits ``[N, k]``; the softmax lives in the loss.

    Args:
        embedding_dim: Embedding dimension ``d``.
        num_labels: Number of classes ``k`` (3 for NLI).
        features: The features it will be fed, which fixes ``in_features = m * d``.

    Example:
        >>> head = SoftmaxClassifier(4, num_labels=3)
        >>> head.linear
        Linear(in_features=12, out_features=3, bias=True)
    """

    def __init__(
        self, embedding_dim: int, num_labels: int, features: Sequence[str] = DEFAULT_FEATURES
    ) -> None:
        super().__init__()
        if int(num_labels) != num_labels or num_labels < 1:
            raise ValueError(f"num_labels must be a positive integer, got {num_labels!r}.")
        self.features = check_features(features)
        self.embedding_dim = int(embedding_dim)
        self.num_labels = int(num_labels)
        self.linear = nn.Linear(feature_dim(embedding_dim, self.features), self.num_labels)

    @property
    def in_features(self) -> int:
        return self.linear.in_features

    def forward(self, x: Tensor) -> Tensor:
        return self.linear(x)


def softmax_classification(
    u: Tensor,
    v: Tensor,
    labels: Tensor,
    classifier: nn.Module,
    features: Sequence[str] = DEFAULT_FEATURES,
) -> Tensor:
    r"""SBERT classification objective: cross-entropy of a softmax classifier on pair features.

    .. math::

        o_i = \operatorname{softmax}\bigl(W\,[u_i;\ v_i;\ |u_i - v_i|]\bigr), \qquad
        \mathcal{L} = -\frac{1}{N} \sum_{i=1}^{N} \log o_{i, y_i}

    (with the default features; see :func:`concat_features` for the others).

    Args:
        u: Premise embeddings.
        v: Hypothesis embeddings.
        labels: Integer class ids :math:`y_i \in \{0, \dots, k-1\}` for :math:`k` classes.
        classifier: Maps ``[N, m*d]`` features (``m = len(features)``) to ``[N, k]`` logits, e.g.
            :class:`SoftmaxClassifier` (or any ``nn.Linear(m*d, k)``).
        features: Which features to concatenate, in this order; any subset of
            ``("u", "v", "|u-v|", "u*v")`` (SBERT Table 6).

    Returns:
        Scalar loss (mean over the batch).

    Inputs:
        ``u``, ``v``: ``[N, d]``; ``labels``: ``[N]`` integer.

    Raises:
        ValueError: unknown feature, shape mismatch, or a classifier whose ``in_features`` does not
            match ``len(features) * d``.

    Reference:
        Reimers & Gurevych (2019), "Sentence-BERT", Sec. 3 (classification objective) and
        Table 6 (ablation of the concatenation).

    Example:
        >>> _ = torch.manual_seed(0)
        >>> u, v = torch.randn(8, 4), torch.randn(8, 4)
        >>> head = SoftmaxClassifier(4, num_labels=3)
        >>> loss = softmax_classification(u, v, torch.randint(0, 3, (8,)), head)
        >>> loss.shape, bool(loss > 0)
        (torch.Size([]), True)
    """
    features, labels = _check_classification_inputs(u, v, labels, classifier, features)
    x = concat_features(u, v, features)  # x = [u; v; |u-v|] by default: [N, m*d]
    logits = classifier(x)  # z = W x + b: [N, k]
    _check_logits(logits, len(labels))
    return F.cross_entropy(logits, labels.to(device=logits.device, dtype=torch.long))


def _check_classification_inputs(
    u: Tensor, v: Tensor, labels: Tensor, classifier: nn.Module, features: Sequence[str]
) -> tuple[tuple[str, ...], Tensor]:
    """The checks of :func:`softmax_classification`: known features, ``u`` and ``v`` of one shape
    ``[N, d]``, one integer label per pair, and a classifier of the width the features give.
    Returns the features as a tuple and the labels as a tensor."""
    features = check_features(features)
    n, d = check_same_2d({"u": u, "v": v})
    labels = torch.as_tensor(labels)
    if labels.shape != torch.Size([n]):
        raise ValueError(
            f"labels must have shape [N] = [{n}] (one class id per pair), got {shape_of(labels)}."
        )
    if labels.is_floating_point():
        raise ValueError(f"labels must be integer class ids, got dtype {labels.dtype}.")
    expected = feature_dim(d, features)
    in_features = getattr(classifier, "in_features", None)
    if in_features is not None and in_features != expected:
        raise ValueError(
            f"classifier expects {in_features} input features, but features={list(features)} with "
            f"d={d} give {len(features)} * {d} = {expected}."
        )
    return features, labels


def _check_logits(logits: Tensor, n: int) -> None:
    """The classifier's output must be logits of shape ``[N, k]``, one row per pair."""
    if logits.dim() != 2 or logits.shape[0] != n:
        raise ValueError(
            f"classifier must return logits of shape [N, k] (k classes) with N={n}, got {shape_of(logits)}."
        )
