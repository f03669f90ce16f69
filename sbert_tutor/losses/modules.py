"""Thin ``nn.Module`` wrappers around the loss functions.

Each wrapper stores the hyper-parameters (validated once, at construction) and its ``forward``
takes embeddings, exactly like the function it wraps. Only :class:`SoftmaxClassificationLoss` has
parameters (its classifier head); remember to give them to the optimizer.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from sbert_tutor.losses.classification import (
    DEFAULT_FEATURES,
    SoftmaxClassifier,
    softmax_classification,
)
from sbert_tutor.losses.ranking import in_batch_contrastive, multiple_negatives_ranking, supmpn
from sbert_tutor.losses.regression import ce_score_regression, cosine_regression
from sbert_tutor.losses.triplet_margin import TRIPLET_DISTANCES, triplet

__all__ = [
    "CEScoreRegressionLoss",
    "CosineRegressionLoss",
    "InBatchContrastiveLoss",
    "MultipleNegativesRankingLoss",
    "SoftmaxClassificationLoss",
    "SupMPNLoss",
    "TripletLoss",
]


def _positive(name: str, value: float) -> float:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}.")
    return float(value)


class CosineRegressionLoss(nn.Module):
    """:func:`~sbert_tutor.losses.cosine_regression` as a module: ``forward(u, v, scores)``."""

    def __init__(self, score_range: tuple[float, float] = (0.0, 5.0)) -> None:
        super().__init__()
        if not float(score_range[1]) > float(score_range[0]):
            raise ValueError(f"score_range must be (low, high) with low < high, got {score_range}.")
        self.score_range = (float(score_range[0]), float(score_range[1]))

    def forward(self, u: Tensor, v: Tensor, scores: Tensor) -> Tensor:
        return cosine_regression(u, v, scores, self.score_range)

    def extra_repr(self) -> str:
        return f"score_range={self.score_range}"


class SoftmaxClassificationLoss(nn.Module):
    """:func:`~sbert_tutor.losses.softmax_classification` with its own
    :class:`~sbert_tutor.losses.SoftmaxClassifier` head: ``forward(u, v, labels)``."""

    def __init__(
        self, embedding_dim: int, num_labels: int, features: Sequence[str] = DEFAULT_FEATURES
    ) -> None:
        super().__init__()
        self.classifier = SoftmaxClassifier(embedding_dim, num_labels, features)

    @property
    def features(self) -> tuple[str, ...]:
        return self.classifier.features

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        return softmax_classification(u, v, labels, self.classifier, self.features)


class TripletLoss(nn.Module):
    """:func:`~sbert_tutor.losses.triplet` as a module: ``forward(anchor, positive, negative)``."""

    def __init__(self, distance: str = "euclidean", margin: float = 5.0) -> None:
        super().__init__()
        if distance not in TRIPLET_DISTANCES:
            raise ValueError(
                f"distance must be one of {list(TRIPLET_DISTANCES)}, got {distance!r}."
            )
        self.distance = distance
        self.margin = float(margin)

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return triplet(anchor, positive, negative, self.distance, self.margin)

    def extra_repr(self) -> str:
        return f"distance={self.distance!r}, margin={self.margin}"


class CEScoreRegressionLoss(nn.Module):
    """:func:`~sbert_tutor.losses.ce_score_regression` as a module: ``forward(q, d, ce_logits)``."""

    def __init__(self, similarity: str = "cosine") -> None:
        super().__init__()
        if similarity not in ("cosine", "euclidean"):
            raise ValueError(f"similarity must be 'cosine' or 'euclidean', got {similarity!r}.")
        self.similarity = similarity

    def forward(self, q: Tensor, d: Tensor, ce_logits: Tensor) -> Tensor:
        return ce_score_regression(q, d, ce_logits, self.similarity)

    def extra_repr(self) -> str:
        return f"similarity={self.similarity!r}"


class MultipleNegativesRankingLoss(nn.Module):
    """:func:`~sbert_tutor.losses.multiple_negatives_ranking` as a module:
    ``forward(anchors, positives, negatives=None)``."""

    def __init__(self, scale: float = 20.0, symmetric: bool = False) -> None:
        super().__init__()
        self.scale = _positive("scale", scale)
        self.symmetric = bool(symmetric)

    @property
    def temperature(self) -> float:
        return 1.0 / self.scale

    def forward(
        self, anchors: Tensor, positives: Tensor, negatives: Tensor | None = None
    ) -> Tensor:
        return multiple_negatives_ranking(anchors, positives, negatives, self.scale, self.symmetric)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, symmetric={self.symmetric}"


class SupMPNLoss(nn.Module):
    """:func:`~sbert_tutor.losses.supmpn` as a module: ``forward(anchors, positives, negatives)``."""

    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        self.temperature = _positive("temperature", temperature)

    def forward(self, anchors: Tensor, positives: Tensor, negatives: Tensor) -> Tensor:
        return supmpn(anchors, positives, negatives, self.temperature)

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}"


class InBatchContrastiveLoss(nn.Module):
    """:func:`~sbert_tutor.losses.in_batch_contrastive` as a module: ``forward(h, h_plus)``."""

    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        self.temperature = _positive("temperature", temperature)

    def forward(self, h: Tensor, h_plus: Tensor) -> Tensor:
        return in_batch_contrastive(h, h_plus, self.temperature)

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}"
