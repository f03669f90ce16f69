"""Matryoshka loss against sentence-transformers' MatryoshkaLoss(MultipleNegativesRankingLoss)
on the same weights and batch (value and gradients), and against a hand-written sum."""

from __future__ import annotations

import random

import pytest
import torch

from sbert_tutor.losses import matryoshka_loss, multiple_negatives_ranking, shrink, triplet
from sbert_tutor.training.objectives import MatryoshkaMNRLObjective, make_objective

pytestmark = pytest.mark.usefixtures("single_thread")

ANCHORS = [
    "A man is playing a guitar.",
    "A woman is slicing an onion.",
    "The cat sleeps on the sofa.",
    "Stock markets fell sharply today.",
]
POSITIVES = [
    "Someone plays an instrument.",
    "A person cuts a vegetable.",
    "A kitten is napping on a couch.",
    "Shares dropped on the exchange.",
]
DIMS = (384, 256, 128, 64, 32)
WEIGHTS = (1.0, 0.5, 2.0, 1.0, 0.25)


def test_shrink_keeps_a_normalised_prefix():
    x = torch.tensor([[3.0, 4.0, 12.0]])
    assert torch.allclose(shrink(x, 2), torch.tensor([[0.6, 0.8]]))
    with pytest.raises(ValueError, match="at most"):
        shrink(x, 4)


def test_weighted_sum_by_hand_and_gradients():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(6, 16, generator=g, requires_grad=True)
    p = torch.randn(6, 16, generator=g, requires_grad=True)
    ours = matryoshka_loss(
        multiple_negatives_ranking, (a, p), (4, 16, 8), (0.5, 1.0, 2.0), loss_options={"scale": 7.0}
    )
    by_hand = sum(
        w
        * multiple_negatives_ranking(
            torch.nn.functional.normalize(a[:, :m], dim=-1),
            torch.nn.functional.normalize(p[:, :m], dim=-1),
            scale=7.0,
        )
        for m, w in ((16, 1.0), (8, 2.0), (4, 0.5))
    )
    assert torch.allclose(ours, by_hand)
    ga = torch.autograd.grad(ours, (a, p))
    gb = torch.autograd.grad(by_hand, (a, p))
    for x, y in zip(ga, gb, strict=True):
        assert torch.allclose(x, y, atol=1e-6)
    # coordinates past the largest prefix kept by no term get no gradient: here none, all 16 kept
    small = matryoshka_loss(multiple_negatives_ranking, (a, p), (4, 8))
    grad_a = torch.autograd.grad(small, a)[0]
    assert torch.all(grad_a[:, 8:] == 0) and torch.any(grad_a[:, :8] != 0)


def test_wraps_other_losses_and_passes_none_on():
    g = torch.Generator().manual_seed(1)
    a, p, n = (torch.randn(5, 12, generator=g) for _ in range(3))
    got = matryoshka_loss(triplet, (a, p, n), (12, 6), loss_options={"margin": 0.5})
    want = triplet(shrink(a, 12), shrink(p, 12), shrink(n, 12), margin=0.5) + triplet(
        shrink(a, 6), shrink(p, 6), shrink(n, 6), margin=0.5
    )
    assert torch.allclose(got, want)
    with_none = matryoshka_loss(multiple_negatives_ranking, (a, p, None), (12, 6))
    assert torch.allclose(with_none, matryoshka_loss(multiple_negatives_ranking, (a, p), (12, 6)))


def test_errors():
    x = torch.randn(2, 8)
    with pytest.raises(ValueError, match="one weight a dimension"):
        matryoshka_loss(multiple_negatives_ranking, (x, x), (8, 4), (1.0,))
    with pytest.raises(ValueError, match="at least one"):
        matryoshka_loss(multiple_negatives_ranking, (x, x), ())
    with pytest.raises(ValueError, match="exceed"):
        MatryoshkaMNRLObjective(64, dims=(128, 64))


def _st_loss(st_model, n_dims_per_step=-1):
    losses = pytest.importorskip("sentence_transformers.sentence_transformer.losses")
    inner = losses.MultipleNegativesRankingLoss(st_model, scale=20.0)
    return losses.MatryoshkaLoss(st_model, inner, list(DIMS), list(WEIGHTS), n_dims_per_step)


def _st_value(st_model, loss):
    features = [st_model.tokenize(ANCHORS), st_model.tokenize(POSITIVES)]
    return loss(features, None)


@pytest.mark.parametrize("n_dims_per_step", [-1, 2])
def test_same_value_and_gradients_as_sentence_transformers(minilm_path, n_dims_per_step):
    st = pytest.importorskip("sentence_transformers")
    from sbert_tutor import SentenceEncoder

    st_model = st.SentenceTransformer(str(minilm_path), device="cpu").eval()
    encoder = SentenceEncoder.from_pretrained(str(minilm_path), device="cpu").eval()
    objective = make_objective(
        "matryoshka_mnrl",
        encoder.embedding_dim,
        {"dims": DIMS, "weights": WEIGHTS, "n_dims_per_step": n_dims_per_step},
    )
    random.seed(11)
    theirs = _st_value(st_model, _st_loss(st_model, n_dims_per_step))
    theirs.backward()
    random.seed(11)
    ours = objective.loss(encoder, list(zip(ANCHORS, POSITIVES, strict=True)), None)
    ours.backward()
    assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6), (ours.item(), theirs.item())

    st_params = dict(st_model[0].auto_model.named_parameters())
    pairs = [
        (name, param.grad, st_params[name].grad)
        for name, param in encoder.model.named_parameters()
        if param.grad is not None and name in st_params and st_params[name].grad is not None
    ]
    compared = len(pairs)
    # one scale for all: some gradients are exactly 0 in theory (attention key biases) and
    # only rounding noise in both libraries
    scale = max(float(theirs_grad.abs().max()) for _, _, theirs_grad in pairs)
    for name, ours_grad, theirs_grad in pairs:
        assert torch.allclose(ours_grad, theirs_grad, atol=1e-4 * scale, rtol=1e-3), name
    ours_flat = torch.cat([g.flatten() for _, g, _ in pairs])
    theirs_flat = torch.cat([g.flatten() for _, _, g in pairs])
    assert float((ours_flat - theirs_flat).norm() / theirs_flat.norm()) < 1e-4
    assert compared > 50  # every layer's weights, not just one


def test_plain_mnrl_is_the_single_full_dimension_case(minilm_path):
    from sbert_tutor import SentenceEncoder

    encoder = SentenceEncoder.from_pretrained(str(minilm_path), device="cpu").eval()
    rows = list(zip(ANCHORS, POSITIVES, strict=True))
    with torch.no_grad():
        one = make_objective("matryoshka_mnrl", 384, {"dims": (384,)}).loss(encoder, rows, None)
        plain = make_objective("mnrl").loss(encoder, rows, None)
    assert torch.allclose(one, plain, atol=1e-6)
