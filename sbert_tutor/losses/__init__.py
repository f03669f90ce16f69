"""Training objectives for sentence embeddings, as pure functions on embedding tensors.

Every function takes precomputed embeddings (``[N, d]``, or ``[N, K, d]`` for groups) and returns
the mean loss over the batch, so each can be tested and taught without a transformer; the
cross-encoder losses take the pairs' logits (``[N]``) instead.
:mod:`sbert_tutor.training.objectives` turns a batch of texts into these embeddings and calls
them (one registered objective per function).

Rule of the folder: pure functions of tensors (torch only); nothing here loads a model or data.

* ``cosine_regression`` -- SBERT regression: MSE of cos(u, v) vs. the rescaled gold score
* ``softmax_classification`` -- SBERT classification: softmax over ``(u, v, |u-v|)`` (NLI)
* ``triplet`` -- SBERT triplet: max(d(a, p) - d(a, n) + margin, 0)
* ``ce_score_regression`` -- the Siamese objective on cross-encoder scores (Rygaard et al.)
* ``multiple_negatives_ranking`` -- MNRL / InfoNCE with in-batch (and hard) negatives
* ``supmpn`` -- SupMPN: multiple positives and negatives per anchor
* ``in_batch_contrastive`` -- in-batch contrastive objective (= MNRL without hard negatives)
* ``matryoshka_loss`` -- any of these at several embedding prefixes (Matryoshka, Kusupati et al.)
* ``cross_encoder_bce`` -- a cross-encoder's logit vs. a 0/1 label or a score in [0, 1] (BCE)
* ``cross_encoder_mse`` -- a cross-encoder's (activated) logit vs. a score (MSE)
* ``margin_mse`` -- Margin-MSE: the student's score margin vs. a teacher's (distillation)
"""

from sbert_tutor.losses.classification import (
    DEFAULT_FEATURES,
    VALID_FEATURES,
    SoftmaxClassifier,
    check_features,
    concat_features,
    feature_dim,
    feature_label,
    softmax_classification,
)
from sbert_tutor.losses.cross_encoder import CE_ACTIVATIONS, cross_encoder_bce, cross_encoder_mse
from sbert_tutor.losses.distillation import MARGIN_SIMILARITIES, margin_mse
from sbert_tutor.losses.matryoshka import check_matryoshka_dims, matryoshka_loss, shrink
from sbert_tutor.losses.ranking import (
    in_batch_contrastive,
    multiple_negatives_ranking,
    supmpn,
    tensor_cosine_matrix,
)
from sbert_tutor.losses.regression import ce_score_regression, cosine_regression
from sbert_tutor.losses.triplet_margin import (
    TRIPLET_DISTANCES,
    TRIPLET_MARGIN,
    pairwise_distance,
    triplet,
)

__all__ = [
    "CE_ACTIVATIONS",
    "DEFAULT_FEATURES",
    "MARGIN_SIMILARITIES",
    "TRIPLET_DISTANCES",
    "TRIPLET_MARGIN",
    "VALID_FEATURES",
    "SoftmaxClassifier",
    "ce_score_regression",
    "check_features",
    "check_matryoshka_dims",
    "concat_features",
    "cosine_regression",
    "cross_encoder_bce",
    "cross_encoder_mse",
    "feature_dim",
    "feature_label",
    "in_batch_contrastive",
    "margin_mse",
    "matryoshka_loss",
    "multiple_negatives_ranking",
    "pairwise_distance",
    "shrink",
    "softmax_classification",
    "supmpn",
    "tensor_cosine_matrix",
    "triplet",
]
