r"""SentEval's logistic-regression probe, many models trained at once (book chapter 11a).

SentEval (Conneau & Kiela 2018) trains its transfer classifier as a PyTorch ``nn.Linear`` layer,
logits :math:`z = W u + b` with :math:`W \in \mathbb{R}^{K \times d}`, on the mean cross-entropy
of mini-batches of 64 items, with ``torch.optim.Adam`` (learning rate :math:`10^{-3}`) whose
weight decay :math:`\lambda` (the L2 strength being chosen) adds :math:`\lambda W` and
:math:`\lambda b` to the gradients, i.e. the batch objective is

.. math::

    \frac{1}{|B|} \sum_{i \in B} -\log \operatorname{softmax}(W u_i + b)_{y_i}
    \;+\; \frac{\lambda}{2} \left(\lVert W \rVert^2 + \lVert b \rVert^2\right).

Training runs in rounds of ``epoch_size`` = 4 passes over the training items (a fresh shuffle
each pass); after each round the accuracy on a validation set is measured. A round that beats
the best accuracy so far (strictly) keeps a copy of the model; any other round adds one to a
counter that is never reset, and training stops at the round that finds the counter already at
``tenacity`` = 5, or after 200 passes. The returned model is the best copy. Adam never reaches
the optimum of the objective in that budget, so the probe is a little *under*-fitted, and the
early stopping on the validation items is part of what it measures.

SentEval seeds NumPy and PyTorch with the same seed (1111) for every model it builds: every
model starts from the same ``nn.Linear`` initialisation and draws its shuffles from its own
``numpy.random.RandomState(seed)`` stream (after, for a final fit, the draw that holds out 5%
of the training items for early stopping). ``train_probes`` does the same per model, so its
models follow SentEval's trajectories up to floating-point rounding.

Speed: the models of one grid (L2 strengths x folds, tens to hundreds of models) are trained
together as one parameter tensor with one ``torch.optim.Adam``. Adam is elementwise, and the loss
is the sum over models of each model's own batch objective, so each model's update is exactly the
one an Adam of its own would make. Models with the same training rows (a fold's L2 grid) draw the
same shuffles, so they form a *unit*: its batch is gathered once and its models' logits are one
matrix product (their classes side by side). A unit leaves the batch when all its models have
stopped; ``n_jobs`` processes share the units.

PyTorch note: SentEval's code sets ``loss_fn.size_average = False`` after building the loss; since
PyTorch 0.4.1 that attribute is ignored and the loss is the batch *mean*, which is what SentEval
computes under any current PyTorch and what is done here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__: list[str] = []

#: SentEval's classifier settings (``params['classifier']`` of its transfer runs).
BATCH_SIZE = 64
EPOCH_SIZE = 4
TENACITY = 5
MAX_EPOCH = 200
LEARNING_RATE = 1e-3
VALIDATION_SPLIT = 0.05


@dataclass(frozen=True)
class ProbeJob:
    """One model to train.

    Attributes:
        train: row indices (into the feature matrix) of the training items.
        l2: Adam's weight decay :math:`\\lambda`.
        val: row indices of the early-stopping items; ``None``: hold out ``VALIDATION_SPLIT`` of
            ``train`` as SentEval's ``validation_split`` does (a seeded shuffle, first 5%).
    """

    train: np.ndarray
    l2: float
    val: np.ndarray | None = None


@dataclass(frozen=True)
class ProbeFit:
    """The best copies of the trained models (``M`` jobs, ``K`` classes, ``d`` features).

    Attributes:
        weight: ``[M, K, d]``; bias: ``[M, K]`` (NumPy, float32).
        val_accuracy: each model's best validation accuracy (a fraction), the one it was kept for.
        rounds: rounds of ``epoch_size`` passes each model trained before it stopped.
    """

    weight: np.ndarray
    bias: np.ndarray
    val_accuracy: np.ndarray
    rounds: np.ndarray

    def predict(self, X: np.ndarray, model: int | None = None) -> np.ndarray:
        """Predicted classes of ``X`` [n, d]: ``[M, n]``, or ``[n]`` for one ``model``."""
        X = np.asarray(X, dtype=np.float32)
        if model is not None:
            return np.argmax(X @ self.weight[model].T + self.bias[model], axis=1)
        logits = np.einsum("nd,mkd->mnk", X, self.weight) + self.bias[:, None, :]
        return np.argmax(logits, axis=2)


def _resolve(job: ProbeJob, seed: int) -> tuple[np.ndarray, np.ndarray, np.random.RandomState]:
    """(train rows, validation rows, the model's shuffle stream) as SentEval sets them up."""
    rng = np.random.RandomState(seed)
    train = np.asarray(job.train, dtype=np.int64)
    if job.val is not None:
        return train, np.asarray(job.val, dtype=np.int64), rng
    permutation = rng.permutation(len(train))
    cut = int(VALIDATION_SPLIT * len(train))
    return train[permutation[cut:]], train[permutation[:cut]], rng


def _padded(rows: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Index rows of unequal length as ``[M, max]`` (padding 0) with a 0/1 mask."""
    width = max(len(r) for r in rows)
    index = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.float32)
    for m, r in enumerate(rows):
        index[m, : len(r)] = r
        mask[m, : len(r)] = 1
    return index, mask


def _check_jobs(jobs: Sequence[ProbeJob], n_items: int) -> None:
    if not jobs:
        raise ValueError("train_probes needs at least one ProbeJob")
    for i, job in enumerate(jobs):
        train = np.asarray(job.train)
        if job.l2 < 0:
            raise ValueError(f"job {i}: l2 must be >= 0, got {job.l2}")
        smallest = 2 if job.val is None else 1
        if len(train) < smallest or (job.val is not None and len(job.val) == 0):
            raise ValueError(f"job {i}: needs training items and at least one validation item")
        if job.val is None and int(VALIDATION_SPLIT * len(train)) == 0:
            raise ValueError(
                f"job {i}: {len(train)} training items leave no {VALIDATION_SPLIT:.0%} "
                "validation split; pass val= explicitly"
            )
        for name, rows in (("train", train), ("val", job.val)):
            if rows is not None and len(rows) and (np.min(rows) < 0 or np.max(rows) >= n_items):
                raise ValueError(f"job {i}: {name} indices must lie in [0, {n_items})")


def train_probes(
    X: np.ndarray,
    y: np.ndarray,
    jobs: Sequence[ProbeJob],
    n_classes: int | None = None,
    seed: int = 1111,
    batch_size: int = BATCH_SIZE,
    epoch_size: int = EPOCH_SIZE,
    tenacity: int = TENACITY,
    max_epoch: int = MAX_EPOCH,
    n_jobs: int | None = None,
) -> ProbeFit:
    """Train one SentEval logistic-regression probe per job (module docstring), all at once.

    Args:
        X: features ``[n, d]``; y: labels ``0..K-1`` ``[n]``; jobs: what to train.
        n_classes: ``K`` (default: ``max(y) + 1``).
        seed: SentEval's seed, used for every model (initialisation and shuffles).
        batch_size, epoch_size, tenacity, max_epoch: SentEval's classifier settings.
        n_jobs: processes sharing the jobs (``None``/1: this process). Each model's training is
            independent of the others', so the result is the same for any ``n_jobs``; the
            training runs on one thread per process, so ``n_jobs`` = the number of cores is
            about that many times faster for a grid of many models.

    Returns:
        ``ProbeFit``, models in the order of ``jobs``.
    """
    if n_jobs is not None and n_jobs > 1 and len(jobs) > 1:
        return _train_in_processes(
            X, y, jobs, n_classes, seed, batch_size, epoch_size, tenacity, max_epoch, n_jobs=n_jobs
        )
    import torch

    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y, dtype=np.int64)
    if X.ndim != 2 or len(X) != len(y):
        raise ValueError(f"X must be [n, d] and y [n], got {X.shape} and {y.shape}")
    K = int(n_classes if n_classes is not None else y.max() + 1)
    if y.min() < 0 or y.max() >= K:
        raise ValueError(f"labels must lie in [0, {K}), got {y.min()}..{y.max()}")
    _check_jobs(jobs, len(X))
    resolved = [_resolve(job, seed) for job in jobs]
    M, d = len(jobs), X.shape[1]
    weight = np.zeros((M, K, d), dtype=np.float32)
    bias = np.zeros((M, K), dtype=np.float32)
    accuracy = np.zeros(M)
    rounds = np.zeros(M, dtype=np.int64)
    # models train in lock-step one batch at a time, so a group shares its number of batches a
    # pass; within a group, units of models that see the same batches (units_of), all of one size
    groups: dict[tuple[int, int], list[list[int]]] = {}
    for unit in _units_of(jobs):
        key = (-(-len(resolved[unit[0]][0]) // batch_size), len(unit))
        groups.setdefault(key, []).append(unit)
    Xt = torch.from_numpy(np.require(X, requirements="W"))  # joblib hands read-only maps
    yt = torch.from_numpy(np.require(y, requirements="W"))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        init = torch.nn.Linear(d, K)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # many tiny steps: a second thread only adds waiting
    try:
        for group in groups.values():
            members = [m for unit in group for m in unit]
            position = {m: i for i, m in enumerate(members)}
            out = _train_group(
                Xt,
                yt,
                [resolved[m] for m in members],
                np.array([jobs[m].l2 for m in members], dtype=np.float32),
                init,
                batch_size,
                epoch_size,
                tenacity,
                max_epoch,
                [[position[m] for m in unit] for unit in group],
            )
            weight[members], bias[members], accuracy[members], rounds[members] = out
    finally:
        torch.set_num_threads(threads)
    return ProbeFit(weight=weight, bias=bias, val_accuracy=accuracy, rounds=rounds)


def _train_in_processes(X, y, jobs, n_classes, seed, *settings, n_jobs: int) -> ProbeFit:
    """``train_probes`` split over ``n_jobs`` processes (units dealt round-robin, so each
    process gets a share of every group), the models put back in the order of ``jobs``."""
    from joblib import Parallel, delayed

    K = int(n_classes if n_classes is not None else np.max(y) + 1)
    units = _units_of(jobs)
    n_jobs = min(n_jobs, len(units))
    if n_jobs < 2:
        return train_probes(X, y, jobs, K, seed, *settings)
    shares = [[m for unit in units[start::n_jobs] for m in unit] for start in range(n_jobs)]
    fits = Parallel(n_jobs=n_jobs)(
        delayed(train_probes)(X, y, [jobs[m] for m in share], K, seed, *settings)
        for share in shares
    )
    order = np.argsort(np.concatenate(shares), kind="stable")
    return ProbeFit(
        weight=np.concatenate([f.weight for f in fits])[order],
        bias=np.concatenate([f.bias for f in fits])[order],
        val_accuracy=np.concatenate([f.val_accuracy for f in fits])[order],
        rounds=np.concatenate([f.rounds for f in fits])[order],
    )


def _units_of(jobs: Sequence[ProbeJob]) -> list[list[int]]:
    """Jobs that see the same batches: same training rows and the same validation rule.

    Every model shuffles with its own ``RandomState(seed)``, so models with the same training
    rows draw the same permutations and see the same batches; only their L2 differs (SentEval's
    grid). A unit's batches are gathered once and its models share each matrix product.
    """
    units: dict[tuple, list[int]] = {}
    for m, job in enumerate(jobs):
        train = np.asarray(job.train, dtype=np.int64)
        key = (train.tobytes(), job.val is None)
        units.setdefault(key, []).append(m)
    return list(units.values())


def _gradients(weight, bias, Xb, yb, share, decay):
    r"""Gradients of each model's batch objective (module docstring), written out.

    With :math:`p_i = \operatorname{softmax}(W u_i + b)` and :math:`e_{y}` the one-hot label, the
    mean cross-entropy of a batch :math:`B` has gradient
    :math:`\frac{1}{|B|}\sum_{i \in B} (p_i - e_{y_i}) u_i^\top` for :math:`W` and
    :math:`\frac{1}{|B|}\sum_{i \in B} (p_i - e_{y_i})` for :math:`b`; the weight decay adds
    :math:`\lambda W` and :math:`\lambda b`. ``share`` holds :math:`1/|B|` for a unit's items and
    0 for padding. Shapes: ``weight [U, S, K, d]`` (``U`` units of ``S`` models that see the same
    batch), ``bias [U, S, K]``, ``Xb [U, B, d]``, ``yb``/``share`` ``[U, B]``, ``decay [U, S]``.
    """
    import torch

    U, S, K, d = weight.shape
    logits = torch.baddbmm(
        bias.reshape(U, 1, S * K), Xb, weight.reshape(U, S * K, d).transpose(1, 2)
    )
    residual = torch.softmax(logits.view(U, -1, S, K), dim=3)
    target = yb[:, :, None, None].expand(-1, -1, S, 1)
    residual.scatter_add_(3, target, torch.full_like(residual[..., :1], -1.0))
    residual.mul_(share[:, :, None, None])
    grad_weight = torch.bmm(residual.view(U, -1, S * K).transpose(1, 2), Xb).view(U, S, K, d)
    grad_weight.add_(weight * decay[:, :, None, None])
    grad_bias = residual.sum(1).add_(bias * decay[:, :, None])
    return grad_weight, grad_bias


def _adam(params):
    """SentEval's optimiser, ``torch.optim.Adam`` at learning rate 1e-3 (fused kernel). Its weight
    decay, one value per model here, is added to the gradients by ``_gradients``, exactly as
    Adam's own ``weight_decay`` adds it."""
    import torch

    return torch.optim.Adam(params, lr=LEARNING_RATE, fused=True)


def _train_group(Xt, yt, resolved, l2, init, batch_size, epoch_size, tenacity, max_epoch, units):
    """Train models whose passes have the same number of batches; see ``train_probes``.

    ``units``: the models (positions in ``resolved``) of each unit (``_units_of``), all of one
    size ``S``. A unit trains until all its models have stopped; a stopped model keeps being
    updated with its unit but is no longer scored, so its kept copy and round count are final.
    """
    import torch

    M = len(resolved)
    S = len(units[0])
    lanes = np.array([m for unit in units for m in unit])  # model of each (unit, slot)
    leaders = [unit[0] for unit in units]
    trains = [resolved[m][0] for m in leaders]
    rngs = [resolved[m][2] for m in leaders]  # the members' streams are identical
    n_train = np.array([len(t) for t in trains])
    n_batches = -(-int(n_train.max()) // batch_size)
    val_index, val_mask = _padded([resolved[m][1] for m in lanes])
    val_index_t = torch.from_numpy(val_index)
    val_mask_t = torch.from_numpy(val_mask).bool()
    val_y = yt[val_index_t]
    n_val = val_mask.sum(1).astype(np.int64)

    K, d = init.weight.shape
    best_weight = init.weight.detach().expand(M, K, d).clone()
    best_bias = init.bias.detach().expand(M, K).clone()
    best = np.full(M, -1.0)
    count = np.zeros(M, dtype=np.int64)
    rounds = np.zeros(M, dtype=np.int64)
    stopped = np.zeros(M, dtype=bool)

    active = np.arange(len(units))  # units still training (their rows in the parameter tensors)
    weight = init.weight.detach().expand(len(units), S, K, d).clone()
    bias = init.bias.detach().expand(len(units), S, K).clone()
    optimizer = _adam([weight, bias])
    decay = torch.from_numpy(l2[lanes].reshape(len(units), S))
    width = n_batches * batch_size
    n_epoch = 0
    while len(active) and n_epoch <= max_epoch:
        decay_t = decay[torch.from_numpy(active)]
        for _ in range(epoch_size):
            order = np.zeros((len(active), width), dtype=np.int64)
            share = np.zeros((len(active), width), dtype=np.float32)
            for row, u in enumerate(active):
                order[row, : n_train[u]] = trains[u][rngs[u].permutation(n_train[u])]
                share[row, : n_train[u]] = 1
            # an item's share of its batch mean: 1 / (the unit's items in that batch)
            per_batch = share.reshape(len(active), n_batches, batch_size)
            per_batch /= per_batch.sum(2, keepdims=True)
            order_t = torch.from_numpy(order)
            share_t = torch.from_numpy(share)
            for start in range(0, width, batch_size):
                rows = order_t[:, start : start + batch_size]
                weight.grad, bias.grad = _gradients(
                    weight,
                    bias,
                    Xt[rows],
                    yt[rows],
                    share_t[:, start : start + batch_size],
                    decay_t,
                )
                optimizer.step()
        n_epoch += epoch_size
        slots = torch.from_numpy((active[:, None] * S + np.arange(S)).ravel())
        flat_weight = weight.view(-1, K, d)
        flat_bias = bias.view(-1, K)
        logits = torch.baddbmm(
            flat_bias.unsqueeze(1), Xt[val_index_t[slots]], flat_weight.transpose(1, 2)
        )
        correct = ((logits.argmax(2) == val_y[slots]) & val_mask_t[slots]).sum(1).cpu().numpy()
        keep = []
        for row, u in enumerate(active):
            for slot in range(S):
                m = lanes[u * S + slot]
                if stopped[m]:
                    continue
                rounds[m] += 1
                acc = 1.0 * int(correct[row * S + slot]) / int(n_val[u * S + slot])  # SentEval's
                if acc > best[m]:
                    best[m] = acc
                    best_weight[m] = flat_weight[row * S + slot]
                    best_bias[m] = flat_bias[row * S + slot]
                elif count[m] >= tenacity:
                    stopped[m] = True  # stopped: no longer scored
                else:
                    count[m] += 1  # never reset, as in SentEval
            if not stopped[units[u]].all():
                keep.append(row)
        if len(keep) < len(active):
            weight, bias, optimizer = _keep_rows(weight, bias, optimizer, keep)
            active = active[keep]
    return best_weight.cpu().numpy(), best_bias.cpu().numpy(), best, rounds


def _keep_rows(weight, bias, optimizer, keep):
    """The parameters and Adam state of the units in ``keep`` only (rows of the batch)."""
    import torch

    rows = torch.as_tensor(keep, dtype=torch.long)
    state = optimizer.state_dict()
    new_weight = weight[rows].clone()
    new_bias = bias[rows].clone()
    new_optimizer = _adam([new_weight, new_bias])
    for slot in state["state"].values():
        for key in ("exp_avg", "exp_avg_sq"):
            slot[key] = slot[key][rows].clone()
    new_optimizer.load_state_dict(state)
    return new_weight, new_bias, new_optimizer
