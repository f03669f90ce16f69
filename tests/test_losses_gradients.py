"""Gradients of sbert_tutor.losses: finite-difference checks (torch.autograd.gradcheck, float64)
for every loss, and the hand-derived gradient of MNRL checked against autograd."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from sbert_tutor.losses import (
    SoftmaxClassifier,
    ce_score_regression,
    cosine_regression,
    in_batch_contrastive,
    multiple_negatives_ranking,
    pairwise_distance,
    softmax_classification,
    supmpn,
    triplet,
)

F64 = torch.float64
N, D = 4, 5


def randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _head(features: tuple[str, ...]) -> SoftmaxClassifier:
    with torch.random.fork_rng():  # reproducible weights without touching the global RNG
        torch.manual_seed(0)
        return SoftmaxClassifier(D, 3, features).double()


LABELS = torch.tensor([0, 2, 1, 2])
SCORES = torch.tensor([0.5, 4.0, 2.0, 3.3], dtype=F64)
ALL_FEATURES = ("u", "v", "|u-v|", "u*v")
HEAD = _head(("u", "v", "|u-v|"))
HEAD_ALL = _head(ALL_FEATURES)

# name -> (loss as a function of the differentiable inputs, input shapes)
CASES: dict[str, tuple[Callable[..., torch.Tensor], list[tuple[int, ...]]]] = {
    "cosine_regression": (lambda u, v: cosine_regression(u, v, SCORES), [(N, D), (N, D)]),
    "softmax_classification": (
        lambda u, v: softmax_classification(u, v, LABELS, HEAD),
        [(N, D), (N, D)],
    ),
    "softmax_classification_all_features": (
        lambda u, v: softmax_classification(u, v, LABELS, HEAD_ALL, ALL_FEATURES),
        [(N, D), (N, D)],
    ),
    "triplet_euclidean": (
        lambda a, p, n: triplet(a, p, n, "euclidean", margin=1.0),
        [(N, D)] * 3,
    ),
    "triplet_cosine": (lambda a, p, n: triplet(a, p, n, "cosine", margin=0.3), [(N, D)] * 3),
    "triplet_cosine_relu": (
        lambda a, p, n: triplet(a, p, n, "cosine_relu", margin=0.05),
        [(N, D)] * 3,
    ),
    "ce_score_regression_cosine": (
        lambda q, d, z: ce_score_regression(q, d, z, "cosine"),
        [(N, D), (N, D), (N,)],
    ),
    "ce_score_regression_euclidean": (
        lambda q, d, z: ce_score_regression(q, d, z, "euclidean"),
        [(N, D), (N, D), (N,)],
    ),
    "mnrl": (lambda a, p: multiple_negatives_ranking(a, p, scale=5.0), [(N, D), (N, D)]),
    "mnrl_shared_negatives": (
        lambda a, p, n: multiple_negatives_ranking(a, p, n, scale=5.0),
        [(N, D), (N, D), (3, D)],
    ),
    "mnrl_grouped_negatives": (
        lambda a, p, n: multiple_negatives_ranking(a, p, n, scale=5.0),
        [(N, D), (N, D), (N, 2, D)],
    ),
    "mnrl_symmetric": (
        lambda a, p, n: multiple_negatives_ranking(a, p, n, scale=5.0, symmetric=True),
        [(N, D), (N, D), (N, 2, D)],
    ),
    "supmpn": (lambda a, p, n: supmpn(a, p, n, temperature=0.2), [(N, D), (N, 3, D), (N, 2, D)]),
    "in_batch_contrastive": (
        lambda h, hp: in_batch_contrastive(h, hp, temperature=0.2),
        [(N, D), (N, D)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(name):
    fn, shapes = CASES[name]
    inputs = [randn(*shape, seed=100 + i).requires_grad_() for i, shape in enumerate(shapes)]
    value = fn(*inputs)
    assert value.dim() == 0 and value.item() > 0  # a non-trivial point (hinge not all inactive)
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6)


def test_gradcheck_points_are_away_from_the_kinks():
    """gradcheck is only meaningful away from a ReLU kink; check the points used above."""
    a, p, n = (randn(N, D, seed=100 + i) for i in range(3))
    for distance, margin in (("euclidean", 1.0), ("cosine", 0.3), ("cosine_relu", 0.05)):
        gap = pairwise_distance(a, p, distance) - pairwise_distance(a, n, distance) + margin
        assert (gap.abs() > 1e-3).all()
        assert (gap > 0).any() and (gap < 0).any(), distance  # both sides of the hinge
    cos = torch.cosine_similarity(a, p)  # ce_score_regression_cosine: ReLU(cos(q, d))
    assert (cos.abs() > 1e-3).all()
    assert (torch.cosine_similarity(a, n).abs() > 1e-3).all()  # triplet_cosine_relu's other ReLU


def test_triplet_cosine_relu_gradient_by_hand():
    """d/da_i of max(ReLU(cos(a_i, n_i)) - ReLU(cos(a_i, p_i)) + eps, 0) / N: a positive is pulled
    while its cosine is positive, a negative pushed only while its cosine is positive, and a
    clipped hinge gives nothing; under 1 - cos, a negative past orthogonal is still pushed."""
    a, p, n = (randn(6, 5, seed=300 + i).requires_grad_() for i in range(3))
    triplet(a, p, n, "cosine_relu", margin=0.2).backward()
    with torch.no_grad():
        cos_p, cos_n = torch.cosine_similarity(a, p), torch.cosine_similarity(a, n)
        active = (cos_n.clamp(min=0) - cos_p.clamp(min=0) + 0.2 > 0).double()
        w_p = -(active * (cos_p > 0)) / 6  # weight of d cos(a_i, p_i) / d a_i
        w_n = (active * (cos_n > 0)) / 6
        expected = _cos_grad_terms(a, p, torch.diag(w_p)) + _cos_grad_terms(a, n, torch.diag(w_n))
    torch.testing.assert_close(a.grad, expected, rtol=1e-10, atol=1e-12)
    # a negative past orthogonal, in a row active under both distances, ...
    pushed = (cos_n < 0) & (active > 0) & (cos_n - cos_p + 0.2 > 0)
    assert pushed.any()
    assert (n.grad[pushed] == 0).all()  # ... is no longer pushed under 1 - ReLU(cos) ...
    n_cos = n.detach().clone().requires_grad_()
    triplet(a.detach(), p.detach(), n_cos, "cosine", margin=0.2).backward()
    assert (n_cos.grad[pushed].abs().sum(dim=1) > 0).all()  # ... but still is under 1 - cos


# --------------------------------------------------------------------------- hand-derived MNRL
def _cos_grad_terms(x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r"""\sum_j W_ij \partial cos(x_i, y_j) / \partial x_i, with
    \partial cos(x, y) / \partial x = y / (|x| |y|) - cos(x, y) x / |x|^2."""
    x_norm = x.norm(dim=1, keepdim=True)  # [N, 1]
    y_norm = y.norm(dim=1, keepdim=True)  # [K, 1]
    cos = (x @ y.T) / (x_norm * y_norm.T)  # [N, K]
    first = (weights @ (y / y_norm)) / x_norm  # sum_j W_ij y_j / (|x_i| |y_j|)
    second = (weights * cos).sum(dim=1, keepdim=True) * x / x_norm**2
    return first - second


def mnrl_closed_form_grads(anchors, positives, negatives, scale):
    """dL/da_i = (1/N) sum_j (softmax_ij - 1[j == i]) * scale * d cos(a_i, c_j) / d a_i, and the
    same for every candidate c_j (positives, then the flattened negatives)."""
    n = anchors.shape[0]
    candidates = torch.cat([positives, negatives.reshape(-1, anchors.shape[1])])
    a_hat = anchors / anchors.norm(dim=1, keepdim=True)
    c_hat = candidates / candidates.norm(dim=1, keepdim=True)
    probs = torch.softmax(scale * a_hat @ c_hat.T, dim=1)  # [N, K]
    residual = probs.clone()
    residual[torch.arange(n), torch.arange(n)] -= 1.0
    weights = scale * residual / n
    grad_anchors = _cos_grad_terms(anchors, candidates, weights)
    grad_candidates = _cos_grad_terms(candidates, anchors, weights.T)
    return grad_anchors, grad_candidates[:n], grad_candidates[n:].reshape(negatives.shape)


@pytest.mark.parametrize("scale", [1.0, 20.0])
@pytest.mark.parametrize("neg_shape", [(6, 0, 8), (6, 2, 8), (5, 8)])
def test_mnrl_gradient_matches_hand_derivation(scale, neg_shape):
    a = randn(6, 8, seed=200).requires_grad_()
    p = randn(6, 8, seed=201).requires_grad_()
    neg = (randn(*neg_shape, seed=202) * 0.7).requires_grad_()
    multiple_negatives_ranking(a, p, neg, scale=scale).backward()
    grad_a, grad_p, grad_n = mnrl_closed_form_grads(a.detach(), p.detach(), neg.detach(), scale)
    torch.testing.assert_close(a.grad, grad_a, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(p.grad, grad_p, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(neg.grad, grad_n, rtol=1e-10, atol=1e-12)
    assert a.grad.abs().max() > 1e-4  # not a vacuous comparison of zeros


def test_cosine_loss_gradients_are_orthogonal_to_the_embedding():
    """A cosine loss cannot change under a_i -> c a_i, so dL/da_i is orthogonal to a_i."""
    a = randn(6, 8, seed=210).requires_grad_()
    p = randn(6, 3, 8, seed=211)
    n = randn(6, 2, 8, seed=212)
    (multiple_negatives_ranking(a, p[:, 0], n) + supmpn(a, p, n)).backward()
    radial = (a.grad * a.detach()).sum(dim=1)
    torch.testing.assert_close(radial, torch.zeros(6, dtype=F64), rtol=0, atol=1e-12)
    assert a.grad.norm() > 1e-3
