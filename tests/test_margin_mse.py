"""Margin-MSE (``margin_mse`` and its objective) against sentence-transformers' ``MarginMSELoss``
on the same embeddings and teacher margins, against a loop written from the equation, and in
training."""

from __future__ import annotations

import doctest

import pytest
import torch

from sbert_tutor.losses import distillation, margin_mse
from sbert_tutor.training import MarginMSEObjective, Trainer, TrainingConfig, make_objective
from sbert_tutor.training.objectives import embed_rows
from tests.test_losses import MODEL, randn, st_value

pytestmark = pytest.mark.usefixtures("single_thread")

F32 = torch.float32


def _st_similarity(similarity: str):
    from sentence_transformers import util

    return util.pairwise_dot_score if similarity == "dot" else util.pairwise_cos_sim


@pytest.mark.parametrize("similarity", ["dot", "cosine"])
@pytest.mark.parametrize("n", [1, 16])
def test_margin_mse_matches_st_with_one_negative(st_losses, similarity, n):
    q, p, neg = (randn(n, 8, seed=s, dtype=F32) for s in (60, 61, 62))
    margins = 3 * randn(n, seed=63, dtype=F32)
    loss = st_losses.MarginMSELoss(MODEL, similarity_fct=_st_similarity(similarity))
    expected = st_value(loss, [q, p, neg], margins)
    ours = margin_mse(q, p, neg, margins, similarity)
    assert abs(float(ours) - float(expected)) < 1e-6
    assert float(ours) > 0.1  # not a trivially zero case


@pytest.mark.parametrize("similarity", ["dot", "cosine"])
def test_margin_mse_matches_st_with_several_negatives(st_losses, similarity):
    q, p = randn(8, 6, seed=64, dtype=F32), randn(8, 6, seed=65, dtype=F32)
    negs = randn(8, 3, 6, seed=66, dtype=F32)
    margins = randn(8, 3, seed=67, dtype=F32)
    loss = st_losses.MarginMSELoss(MODEL, similarity_fct=_st_similarity(similarity))
    expected = st_value(loss, [q, p, *negs.unbind(1)], margins)
    assert abs(float(margin_mse(q, p, negs, margins, similarity)) - float(expected)) < 1e-6


def test_margin_mse_matches_a_loop_from_the_equation():
    q, p, neg = (randn(5, 4, seed=s) for s in (70, 71, 72))
    margins = randn(5, seed=73)
    total = 0.0
    for i in range(5):
        student = float(q[i] @ p[i]) - float(q[i] @ neg[i])
        total += (student - float(margins[i])) ** 2
    assert float(margin_mse(q, p, neg, margins)) == pytest.approx(total / 5, abs=1e-12)


def test_margin_mse_gradient_does_not_reach_the_teacher():
    q, p, neg = (randn(4, 3, seed=s).requires_grad_() for s in (74, 75, 76))
    margins = randn(4, seed=77).requires_grad_()
    margin_mse(q, p, neg, margins).backward()
    assert margins.grad is None and q.grad is not None


def test_margin_mse_rejects_bad_inputs():
    q, p, neg = (randn(4, 3, seed=s) for s in (78, 79, 80))
    with pytest.raises(ValueError, match=r"teacher_margins must have shape \[N\] = \[4\]"):
        margin_mse(q, p, neg, torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"\[N, Q\] = \[4, 2\]"):
        margin_mse(q, p, randn(4, 2, 3, seed=81), torch.zeros(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="similarity must be one of"):
        margin_mse(q, p, neg, torch.zeros(4, dtype=torch.float64), "euclid")
    with pytest.raises(ValueError, match="NaN"):
        margin_mse(q, p, neg, torch.tensor([0.0, float("nan"), 0.0, 0.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="unknown similarity"):
        make_objective("margin_mse", options={"similarity": "euclid"})


def test_docstring_examples():
    result = doctest.testmod(distillation, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def _triplets() -> list[tuple[str, str, str, float]]:
    topics = ["football match goal", "stock market shares", "cooking pasta sauce", "rain storm"]
    rows = []
    for i in range(32):
        t = topics[i % 4]
        rows.append((f"{t} {i}", f"a story about {t} {i}", f"{topics[(i + 1) % 4]} {i}", 4.0))
    return rows


def test_margin_mse_objective_is_the_pure_loss_and_trains(tiny_bert):
    import copy

    from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

    model, tokenizer = tiny_bert
    encoder = SentenceEncoder(copy.deepcopy(model), tokenizer, max_seq_length=32)
    data = _triplets()
    objective = MarginMSEObjective()
    rows, labels = [r[:3] for r in data[:8]], torch.tensor([r[3] for r in data[:8]])
    with torch.no_grad():
        emb = embed_rows(encoder, rows)
        expected = margin_mse(emb[:, 0], emb[:, 1], emb[:, 2], labels)
        assert float(objective.loss(encoder, rows, labels)) == pytest.approx(float(expected))
    config = TrainingConfig(batch_size=8, max_steps=20, lr=3e-3, show_progress_bar=False)
    trainer = Trainer(encoder, objective, data, config)
    before = trainer.dataset_loss()
    trainer.train()
    assert trainer.dataset_loss() < 0.5 * before
    assert objective.settings() == {"name": "margin_mse", "similarity": "dot"}
