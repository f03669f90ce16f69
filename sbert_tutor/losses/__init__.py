"""Training objectives for sentence embeddings, as pure functions on embedding tensors.

Every function takes precomputed embeddings (``[N, d]``, or ``[N, K, d]`` for groups) and returns
the mean loss over the batch. ``sbert_tutor.losses.modules`` wraps each one in an ``nn.Module``.

* ``cosine_regression`` -- SBERT regression: MSE of cos(u, v) vs. the rescaled gold score
* ``softmax_classification`` -- SBERT classification: softmax over (u, v, |u-v|) (NLI)
* ``triplet`` -- SBERT triplet: max(d(a, p) - d(a, n) + margin, 0)
* ``ce_score_regression`` -- "Distance Dilemma" Siamese objective on cross-encoder scores
* ``multiple_negatives_ranking`` -- MNRL / InfoNCE with in-batch (and hard) negatives
* ``supmpn`` -- SupMPN: multiple positives and negatives per anchor
* ``in_batch_contrastive`` -- in-batch contrastive objective (= MNRL without hard negatives)
"""

from sbert_tutor.losses.classification import (
    DEFAULT_FEATURES,
    VALID_FEATURES,
    SoftmaxClassifier,
    concat_features,
    feature_dim,
    softmax_classification,
)
from sbert_tutor.losses.modules import (
    CEScoreRegressionLoss,
    CosineRegressionLoss,
    InBatchContrastiveLoss,
    MultipleNegativesRankingLoss,
    SoftmaxClassificationLoss,
    SupMPNLoss,
    TripletLoss,
)
from sbert_tutor.losses.ranking import (
    cosine_matrix,
    in_batch_contrastive,
    multiple_negatives_ranking,
    supmpn,
)
from sbert_tutor.losses.regression import ce_score_regression, cosine_regression
from sbert_tutor.losses.triplet_margin import TRIPLET_DISTANCES, pairwise_distance, triplet

__all__ = [
    "DEFAULT_FEATURES",
    "TRIPLET_DISTANCES",
    "VALID_FEATURES",
    "CEScoreRegressionLoss",
    "CosineRegressionLoss",
    "InBatchContrastiveLoss",
    "MultipleNegativesRankingLoss",
    "SoftmaxClassificationLoss",
    "SoftmaxClassifier",
    "SupMPNLoss",
    "TripletLoss",
    "ce_score_regression",
    "concat_features",
    "cosine_matrix",
    "cosine_regression",
    "feature_dim",
    "in_batch_contrastive",
    "multiple_negatives_ranking",
    "pairwise_distance",
    "softmax_classification",
    "supmpn",
    "triplet",
]
