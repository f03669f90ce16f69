"""SentEval's probe trained many models at once: its gradients against autograd, its batched
training against SentEval's one-model-at-a-time loop (written out here with ``nn.Linear`` and
``torch.optim.Adam``), and the SentEval protocol on data whose answer is known."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from sbert_tutor.evaluation.linear_probe import (
    VALIDATION_SPLIT,
    ProbeJob,
    _gradients,
    train_probes,
)
from sbert_tutor.evaluation.transfer import (
    L2_GRID,
    senteval_choice,
    senteval_choose_l2,
    senteval_cross_validation,
)


def _data(n=260, d=8, K=3, seed=0, noise=1.0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(K, d))
    y = rng.integers(0, K, n)
    X = centres[y] + noise * rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # unit length, like the embeddings
    return X.astype(np.float32), y


def test_gradients_match_autograd():
    """The written-out gradient of each model's batch mean cross-entropy plus (l2/2)(|W|^2+|b|^2),
    padding excluded, against autograd of that objective; units of two models share a batch."""
    rng = np.random.default_rng(1)
    U, S, B, K, d = 3, 2, 5, 4, 6
    Xb = torch.tensor(rng.normal(size=(U, B, d)), dtype=torch.float64)
    yb = torch.tensor(rng.integers(0, K, (U, B)))
    counts = [5, 3, 1]  # units 1 and 2 have padding
    share = torch.zeros(U, B, dtype=torch.float64)
    for u, c in enumerate(counts):
        share[u, :c] = 1 / c
    decay = torch.tensor([[0.0, 1e-3], [1e-2, 0.2], [0.5, 0.0]], dtype=torch.float64)
    W = torch.tensor(rng.normal(size=(U, S, K, d)), requires_grad=True)
    b = torch.tensor(rng.normal(size=(U, S, K)), requires_grad=True)
    total = 0
    for u, c in enumerate(counts):
        for s in range(S):
            logits = Xb[u, :c] @ W[u, s].T + b[u, s]
            ce = torch.nn.functional.cross_entropy(logits, yb[u, :c])
            total = total + ce + 0.5 * decay[u, s] * (W[u, s].pow(2).sum() + b[u, s].pow(2).sum())
    total.backward()
    gW, gb = _gradients(W.detach(), b.detach(), Xb, yb, share, decay)
    torch.testing.assert_close(gW, W.grad)
    torch.testing.assert_close(gb, b.grad)


def _senteval_fit(X, y, train, val, l2, K, seed=1111, split=False):
    """SentEval's ``PyTorchClassifier.fit`` for one model, as its source describes it: seeds,
    ``nn.Linear``, Adam with weight decay, shuffled batches of 64, rounds of 4 passes, the
    never-reset early-stopping counter with tenacity 5, the best copy kept."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = torch.nn.Linear(X.shape[1], K)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=l2)
    if split:
        permutation = np.random.permutation(len(train))
        cut = int(VALIDATION_SPLIT * len(train))
        train, val = train[permutation[cut:]], train[permutation[:cut]]
    Xt, yt = torch.from_numpy(X[train]), torch.from_numpy(y[train])
    Xv, yv = torch.from_numpy(X[val]), torch.from_numpy(y[val])
    best, count, n_epoch, stop, best_model = -1.0, 0, 0, False, None
    while not stop and n_epoch <= 200:
        for _ in range(4):
            permutation = np.random.permutation(len(Xt))
            for i in range(0, len(Xt), 64):
                idx = torch.from_numpy(permutation[i : i + 64])
                loss = torch.nn.functional.cross_entropy(model(Xt[idx]), yt[idx])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        n_epoch += 4
        with torch.no_grad():
            accuracy = (model(Xv).argmax(1) == yv).sum().item() / len(yv)
        if accuracy > best:
            best, best_model = accuracy, copy.deepcopy(model)
        else:
            if count >= 5:
                stop = True
            count += 1
    return best, n_epoch // 4, best_model


def test_batched_training_follows_senteval_one_model_at_a_time():
    """Models of unequal sizes (two groups of batch counts, padded last batches), explicit
    validation sets and a 5% validation split, four L2 strengths: the same validation accuracy,
    the same number of rounds and the same kept weights as SentEval's loop model by model."""
    X, y = _data(seed=2, noise=1.5)
    K = 3
    rng = np.random.default_rng(3)
    order = rng.permutation(len(y))
    jobs = [
        ProbeJob(order[:100], 1e-5, order[200:260]),  # 2 batches a pass
        ProbeJob(order[30:160], 1e-2, order[200:250]),  # 3 batches
        ProbeJob(order[:70], 1e-3, order[100:200]),  # 2 batches, short last batch
        ProbeJob(order[:200], 1e-4),  # 5% split, 190 training items: 3 batches
        # units: the same training rows as a job above, so the same batches, another L2
        ProbeJob(order[:100], 1e-2, order[200:260]),
        ProbeJob(order[:100], 0.2, order[200:260]),
        ProbeJob(order[:200], 1e-2),
    ]
    fit = train_probes(X, y, jobs, K)
    for m, job in enumerate(jobs):
        best, rounds, model = _senteval_fit(
            X, y, job.train, job.val, job.l2, K, split=job.val is None
        )
        assert fit.val_accuracy[m] == best and fit.rounds[m] == rounds, m
        np.testing.assert_allclose(fit.weight[m], model.weight.detach().numpy(), atol=2e-5)
        np.testing.assert_allclose(fit.bias[m], model.bias.detach().numpy(), atol=2e-5)
    assert len(set(fit.rounds.tolist())) > 1  # the models stopped at different rounds
    assert len({fit.rounds[0], fit.rounds[4], fit.rounds[5]}) > 1  # also within a unit


def test_processes_share_the_models_without_changing_them():
    """``n_jobs=2`` deals the models to two processes and puts them back in order: the same
    fit, bit for bit, as one process (each model trains independently of the others)."""
    X, y = _data(seed=4, noise=1.5)
    rng = np.random.default_rng(5)
    order = rng.permutation(len(y))
    jobs = [
        ProbeJob(order[:100], 1e-5, order[200:260]),
        ProbeJob(order[30:160], 1e-2, order[200:250]),
        ProbeJob(order[:70], 1e-3, order[100:200]),
        ProbeJob(order[:200], 1e-4),
        ProbeJob(order[50:250], 1e-5),
        ProbeJob(order[50:250], 1e-2),  # a unit with the job before: same batches
        ProbeJob(order[:100], 1e-3, order[200:260]),  # a unit with the first job
    ]
    one = train_probes(X, y, jobs, 3)
    two = train_probes(X, y, jobs, 3, n_jobs=2)
    for field in ("weight", "bias", "val_accuracy", "rounds"):
        np.testing.assert_array_equal(getattr(two, field), getattr(one, field), err_msg=field)
    assert len(set(one.val_accuracy.tolist())) > 1  # the models differ, so order matters


def test_train_probes_rejects_bad_jobs():
    X, y = _data(n=40)
    with pytest.raises(ValueError, match="at least one ProbeJob"):
        train_probes(X, y, [])
    with pytest.raises(ValueError, match="indices must lie in"):
        train_probes(X, y, [ProbeJob(np.arange(10), 1e-3, np.array([40]))])
    with pytest.raises(ValueError, match="no 5% validation split"):
        train_probes(X, y, [ProbeJob(np.arange(10), 1e-3)])
    with pytest.raises(ValueError, match="labels must lie"):
        train_probes(X, y, [ProbeJob(np.arange(10), 1e-3, np.arange(10, 20))], n_classes=2)


def test_senteval_choice_rounds_to_two_decimals_and_prefers_weak_l2_on_ties():
    assert senteval_choice({1e-5: 0.80, 1e-4: 0.81, 1e-3: 0.79}) == 1e-4
    # 80.001% and 80.004% are both 80.0 after SentEval's rounding: the weaker L2 wins
    assert senteval_choice({1e-5: 0.80001, 1e-4: 0.80004}) == 1e-5


def _separable(n_per_class, d=8, seed=0, spread=0.3):
    """Two classes at +-(0.5..1.5) along a random direction, spread only across it."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    X = spread * rng.normal(size=(2 * n_per_class, d))
    X -= np.outer(X @ direction, direction)
    y = np.repeat([0, 1], n_per_class)
    X += np.outer(np.where(y == 1, 1.0, -1.0) * rng.uniform(0.5, 1.5, len(y)), direction)
    return X.astype(np.float32), y


def test_senteval_protocol_separable_classes():
    """Separable classes: every model that stops early on a whole held-out fold is perfect (inner
    accuracy 100). The final fit of a fold stops on 5% of its training items, and the first copy
    that is perfect on those few is kept: SentEval's probe stops short of separating everything,
    so the test accuracy is high but not always 100 (L-BFGS, trained to convergence, reaches 100:
    tests/test_evaluation_transfer.py)."""
    X, y = _separable(1000)
    accuracy, inner, folds = senteval_cross_validation(X, y, k=3)
    assert inner == 100.0 and 98.0 < accuracy <= 100.0
    assert len(folds) == 3 and sum(f.n_test for f in folds) == len(y)
    assert all(f.l2 in L2_GRID for f in folds)


def test_senteval_protocol_shuffled_labels_give_chance_accuracy():
    """Labels independent of the features: the held-out accuracy over 600 items has standard
    deviation sqrt(0.25 / 600) = 2.0 points around 50; we allow 3 of them."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 16)).astype(np.float32)
    y = rng.permutation(np.repeat([0, 1], 300))
    accuracy, _, _ = senteval_cross_validation(X, y, k=5)
    assert abs(accuracy - 50.0) < 6.0
    best, scores = senteval_choose_l2(X, y, k=5)
    assert set(scores) == set(L2_GRID) and best in L2_GRID
    assert all(abs(s - 0.5) < 0.06 for s in scores.values())
