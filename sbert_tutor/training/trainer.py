r"""One trainer for every objective: AdamW, warm-up + linear decay, clipping, AMP, checkpoints.

Each optimizer step :math:`t`:

1. take the next batch of the epoch's plan (length-bucketed, without duplicate texts for
   in-batch-negative objectives; :mod:`~sbert_tutor.training.samplers`);
2. encode all its texts in one forward pass (a cross-encoder: score all its pairs) and compute
   the objective's loss :math:`\mathcal{L}`
   (under ``torch.autocast`` when AMP is on, CUDA only; see :func:`auto_amp` for ``amp="auto"``);
   the batch is padded to its longest text, or on CUDA under AMP to the next multiple of 32
   (width bucketing, :mod:`sbert_tutor.runtime.batching`; masked padding, the same loss in fp32);
3. back-propagate (an objective with :attr:`~Objective.owns_backward`, e.g. ``cached_mnrl``,
   fills the gradients itself in steps 2-3: :meth:`~Objective.loss_and_backward`); clip the global gradient norm: :math:`g \leftarrow g \cdot
   \min(1, c / \lVert g \rVert_2)` with :math:`c` = ``max_grad_norm``;
4. AdamW step with rate :math:`\eta\, m(t)` (:mod:`~sbert_tutor.training.schedules`);
5. record ``{step, epoch, loss, lr, grad_norm}``; evaluate and checkpoint when due.

Runs are reproducible: the seed fixes the dropout masks (torch's generator) and the batch order
(a function of ``(seed, epoch)``), so two CPU runs with one seed give bit-identical weights,
and resuming from a checkpoint gives the weights of the uninterrupted run.

Example:
    >>> from sbert_tutor.data import load_sts  # doctest: +SKIP
    >>> enc = SentenceEncoder.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
    >>> trainer = Trainer(enc, CosineObjective(), load_sts("stsb", "train"),
    ...                   TrainingConfig(max_steps=100), evaluator=STSEvaluator("stsb", "dev"))  # doctest: +SKIP
    >>> record = trainer.train()  # doctest: +SKIP
    >>> record.steps_frame().plot(x="step", y="loss")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from sbert_tutor.encoders.cross_encoder import CrossEncoder
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.runtime.batching import Bucket, resolve_bucket
from sbert_tutor.runtime.precision import compute_context
from sbert_tutor.training import distributed
from sbert_tutor.training.checkpoint import (
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
    set_seed,
)
from sbert_tutor.training.config import TRAJECTORY_FIELDS, TrainingConfig
from sbert_tutor.training.objectives import Objective, label_tensor
from sbert_tutor.training.record import TrainingRecord
from sbert_tutor.training.samplers import LengthBucketBatchSampler, NoDuplicatesBatchSampler
from sbert_tutor.training.schedules import make_scheduler, warmup_steps_for

__all__ = [
    "Evaluator",
    "Trainer",
    "auto_amp",
    "clip_gradients",
    "fused_adamw",
    "gradient_norm",
    "parameter_groups",
]

logger = logging.getLogger(__name__)

#: An evaluation during training: ``encoder -> {metric: value}``, e.g. an
#: :class:`~sbert_tutor.training.evaluator.STSEvaluator`.
Evaluator = Callable[[Any], dict[str, float]]

#: Compute capability from which ``amp="auto"`` trains in bf16 (Ampere: A100, A10, L4, H100, ...).
_BF16_CAPABILITY = (8, 0)


def auto_amp(device: torch.device | str, capability: tuple[int, int] | None = None) -> str | None:
    """What ``amp="auto"`` trains in: ``"bf16"``, ``"fp16"`` or ``None`` (fp32).

    * a CPU: ``None``. Autocast on a CPU rarely pays for training and CUDA's gradient scaler is
      not there.
    * CUDA, compute capability >= 8.0 (A100, L4, H100): ``"bf16"``. These GPUs have bf16 tensor
      cores at the fp16 rate; bf16 keeps fp32's exponent range, so no gradient scaler is needed.
    * older CUDA GPUs (T4 is 7.5, V100 7.0): ``"fp16"`` with a gradient scaler. They have no bf16
      tensor cores (bf16 would run on the fp32 units, or be emulated), while their fp16 tensor
      cores peak far above fp32 (a T4: about 65 vs 8 TFLOPS).

    This rule holds with width bucketing on (the trainer's default on CUDA under AMP): without
    it, every new batch width costs fp16/bf16 a one-off kernel choice that made an H100 epoch of
    STSb at batch 16 3.4x slower than fp32 (a recorded H100 run). Whether ``"auto"`` is at least as fast as
    fp32 for a given model and batch size is measured by ``benchmarks/train_step.py --device cuda
    --amp ...`` and recorded under ``sbert_tutor/book/results/``. ``capability`` defaults to the
    device's own (given in tests).
    """
    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    if capability is None:
        capability = torch.cuda.get_device_capability(dev)
    return "bf16" if tuple(capability) >= _BF16_CAPABILITY else "fp16"


def clip_gradients(parameters: Iterable[nn.Parameter], max_norm: float) -> float:
    r"""Scale all gradients by :math:`\min(1, c / \lVert g \rVert_2)`; return :math:`\lVert g \rVert_2`
    *before* clipping (the global L2 norm over every parameter's gradient)."""
    return float(torch.nn.utils.clip_grad_norm_(list(parameters), max_norm))


def gradient_norm(parameters: Iterable[nn.Parameter]) -> float:
    r"""The global gradient norm :math:`\lVert g \rVert_2` (parameters without gradient skipped)."""
    norms = [p.grad.detach().float().norm(2) for p in parameters if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack(norms))) if norms else 0.0


def parameter_groups(modules: Sequence[nn.Module], weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: weight decay on matrices, none on biases and LayerNorm weights (1-D)."""
    decay, no_decay = [], []
    for module in modules:
        for param in module.parameters():
            if param.requires_grad:
                (decay if param.ndim >= 2 else no_decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def fused_adamw(device: torch.device | str) -> bool:
    """Whether the trainer's AdamW runs PyTorch's fused kernel on ``device``: on CUDA, and on a
    CPU from torch 2.4 (where PyTorch has one). It is the same update, computed in one pass over
    each tensor instead of one operation at a time; transformers' ``Trainer`` (which
    sentence-transformers trains with) uses it by default from torch 2.8 (``adamw_torch_fused``).
    On a CPU it is several times faster than the update one operation at a time, and the
    optimizer step is a large part of a small model's training step there.

    Example:
        >>> fused_adamw("cuda"), fused_adamw("meta")
        (True, False)
    """
    kind = torch.device(device).type
    if kind == "cuda":
        return True
    version = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    return kind == "cpu" and version >= (2, 4)


class Trainer:
    """Train a :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder` (or, with a cross-encoder loss, a
    :class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder`) with one :class:`Objective`.

    Args:
        encoder: the model to train (in place; it stays on its device); the objective checks it
            is the kind it trains (:meth:`Objective.check_model`).
        objective: e.g. ``CosineObjective()``; its parameters (the softmax head) are trained too.
        train_data: anything :meth:`Objective.prepare` accepts (lists, DataFrames,
            ``datasets.Dataset``, ``STSData``, ``NLIData``, :class:`~sbert_tutor.training.examples.Examples`).
        config: :class:`TrainingConfig` (defaults: the SBERT paper's settings).
        evaluator: ``encoder -> {metric: value}``, e.g. :class:`~sbert_tutor.training.STSEvaluator`.
        text_columns, label_column: choose the columns of a table explicitly.

    After construction, ``optimizer``, ``scheduler``, ``total_steps`` and
    ``warmup_steps`` are set; :meth:`train` runs (or continues) training.
    """

    def __init__(
        self,
        encoder: SentenceEncoder | CrossEncoder,
        objective: Objective,
        train_data: Any,
        config: TrainingConfig | None = None,
        evaluator: Evaluator | None = None,
        text_columns: Sequence[str] | None = None,
        label_column: str | None = None,
    ) -> None:
        self.config = config or TrainingConfig()
        cfg = self.config
        objective.check_model(encoder)
        self.encoder = encoder
        self.device = encoder.device
        self.objective = objective.to(self.device)
        self.evaluator = evaluator
        self.examples = objective.prepare(train_data, text_columns, label_column)
        self.no_duplicates = (
            objective.in_batch_negatives if cfg.no_duplicates is None else cfg.no_duplicates
        )
        if objective.in_batch_negatives and cfg.batch_size < 2:
            raise ValueError(
                f"{objective.name} uses the other examples of a batch as negatives: "
                f"batch_size must be >= 2, got {cfg.batch_size}"
            )
        self.lengths = objective.lengths(encoder, self.examples)
        # Data parallel (torchrun): batch_size is per process; the sampler plans global batches
        # of world * batch_size examples and each process trains on its contiguous shard.
        self.world = distributed.world_size()
        self.rank = distributed.rank()
        self.sampler = self._make_sampler()
        self._plan_cache: tuple[int, list[list[int]]] | None = None
        if cfg.max_steps is not None:
            self.total_steps = cfg.max_steps
        else:
            self.total_steps = sum(len(self._plan(e)) for e in range(cfg.epochs))
        self.warmup_steps = warmup_steps_for(self.total_steps, cfg.warmup_ratio)
        self.amp = self._check_amp(cfg.amp)
        padding_side = getattr(encoder.tokenizer, "padding_side", "right")
        self.bucket: Bucket = resolve_bucket(
            cfg.bucket, self.device, self._amp_dtype() or torch.float32, padding_side
        )
        # An objective that owns its backward pass runs without DDP's wrapper: the trainer sums
        # its gradients over processes itself (distributed.sum_gradients).
        self.model = distributed.wrap(
            encoder, self.objective, bucket=self.bucket, ddp=not objective.owns_backward
        )
        self.parameters = [
            p for m in (encoder, self.objective) for p in m.parameters() if p.requires_grad
        ]
        self.optimizer = torch.optim.AdamW(
            parameter_groups([encoder, self.objective], cfg.weight_decay),
            lr=cfg.lr,
            fused=fused_adamw(self.device) or None,
        )
        self.scheduler = make_scheduler(
            self.optimizer, self.warmup_steps, self.total_steps, cfg.schedule
        )
        self.scaler = torch.amp.GradScaler("cuda") if self.amp == "fp16" else None
        self.record = TrainingRecord()
        self.step = 0
        self.epoch = 0
        self.batch_in_epoch = 0
        self._started = False
        self._rng_snapshot: dict[str, Any] | None = None
        self._fingerprint = self.examples.fingerprint()

    # ------------------------------------------------------------------ setup
    def _make_sampler(self) -> LengthBucketBatchSampler | NoDuplicatesBatchSampler:
        cfg = self.config
        buckets = cfg.length_buckets or 1  # one batch a window: no sorting across batches
        if self.no_duplicates:
            return NoDuplicatesBatchSampler(
                self.examples.texts,
                cfg.batch_size * self.world,
                cfg.seed,
                lengths=self.lengths if cfg.length_buckets is not None else None,
                bucket_batches=buckets,
            )
        return LengthBucketBatchSampler(
            self.lengths, cfg.batch_size * self.world, cfg.seed, buckets
        )

    def _plan(self, epoch: int) -> list[list[int]]:
        if self._plan_cache is None or self._plan_cache[0] != epoch:
            plan = self.sampler.batches(epoch)
            if self.world > 1:  # every process needs an equal, non-empty shard
                plan = [b for b in plan if len(b) == self.config.batch_size * self.world]
            self._plan_cache = (epoch, plan)
        return self._plan_cache[1]

    def _check_amp(self, amp: str | None) -> str | None:
        if amp == "auto":
            return auto_amp(self.device)
        if amp is not None and self.device.type != "cuda":
            warnings.warn(
                f"amp={amp!r} needs a CUDA device; training in float32 on {self.device}",
                UserWarning,
                stacklevel=3,
            )
            return None
        if amp == "bf16" and not torch.cuda.is_bf16_supported():
            raise ValueError("this GPU does not support bf16; use amp='fp16'")
        return amp

    def _amp_dtype(self) -> torch.dtype | None:
        return {None: None, "fp16": torch.float16, "bf16": torch.bfloat16}[self.amp]

    def _autocast(self):
        """Autocast to the AMP dtype (none in fp32); on CUDA under fp16/bf16 attention leaves
        out cuDNN's kernel, which plans again for every new batch shape
        (:func:`sbert_tutor.runtime.precision.compute_context`)."""
        return compute_context(self.device, self._amp_dtype())

    # ------------------------------------------------------------------ one step
    def _labels(self, batch: Sequence[int]) -> torch.Tensor | None:
        labels = self.examples.labels
        tensor = label_tensor(None if labels is None else labels[list(batch)], self.objective.label)
        return None if tensor is None else tensor.to(self.device)

    def train_step(self, batch: Sequence[int]) -> tuple[float, float | None, float]:
        """One optimizer step on ``batch``: loss, gradient, clipping, AdamW, schedule.
        Returns the loss, the gradient norm before clipping and the learning rate used."""
        if self.world > 1:
            batch = distributed.shard(batch, self.rank, self.world)
        rows = [self.examples.texts[i] for i in batch]
        lr = float(self.scheduler.get_last_lr()[0])
        if self.objective.owns_backward:  # e.g. GradCache: its own forward and backward passes
            scale = None if self.scaler is None else self.scaler.scale
            with self._autocast():
                loss = self.objective.loss_and_backward(
                    self.encoder, rows, self._labels(batch), self.bucket, scale
                )
            distributed.sum_gradients(self.parameters)
        else:
            with self._autocast():  # mixed precision: fp16/bf16 where safe on CUDA, else fp32
                loss = self.model(rows, self._labels(batch))
        value = float(loss.detach())
        if not math.isfinite(value) and self.scaler is None:
            raise FloatingPointError(
                f"the loss is {value} at step {self.step + 1}: training diverged. Lower the "
                "learning rate (lr=...), keep gradient clipping on, or check the labels."
            )
        if self.objective.owns_backward:
            if self.scaler is not None:
                self.scaler.unscale_(self.optimizer)  # clipping and the record see true gradients
        elif self.scaler is not None:  # fp16: scale the loss up so small gradients stay nonzero
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
        else:
            loss.backward()
        if self.config.max_grad_norm is not None:
            grad_norm = clip_gradients(self.parameters, self.config.max_grad_norm)
        else:
            grad_norm = gradient_norm(self.parameters)
        if self._optimizer_step():
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return value, grad_norm, lr

    def _optimizer_step(self) -> bool:
        """The AdamW step, through the gradient scaler under fp16. Returns ``False`` when the
        scaler skipped it (inf/nan gradients; it lowers its scale instead): the schedule then
        waits for the next real step."""
        if self.scaler is None:
            self.optimizer.step()
            return True
        scale = self.scaler.get_scale()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return self.scaler.get_scale() >= scale  # a lowered scale: inf/nan, the step was skipped

    # ------------------------------------------------------------------ the loop
    def train(
        self, resume_from: str | Path | None = None, until_step: int | None = None
    ) -> TrainingRecord:
        """Train until ``total_steps`` (or ``until_step``) and return the record.

        Args:
            resume_from: a checkpoint (folder or file, or a folder of checkpoints: the newest)
                to continue from; the result equals the uninterrupted run.
            until_step: pause after this step (call :meth:`train` again to continue, or resume
                later from a checkpoint).
        """
        from tqdm.auto import tqdm

        cfg = self.config
        if resume_from is not None:
            self.load_state_dict(load_checkpoint(resume_from, map_location=self.device))
            logger.info("resumed from %s at step %d", resume_from, self.step)
        elif not self._started:
            set_seed(cfg.seed)
        elif self._rng_snapshot is not None:
            set_rng_state(self._rng_snapshot)
        target = self.total_steps if until_step is None else min(until_step, self.total_steps)
        bar = tqdm(
            total=self.total_steps,
            initial=self.step,
            desc=f"train ({self.objective.name})",
            unit="step",
            disable=not cfg.show_progress_bar or self.rank != 0,
            dynamic_ncols=True,
        )
        recent: deque[float] = deque(maxlen=20)
        try:
            if not self._started:
                self._started = True
                if self.evaluator is not None and cfg.eval_before:
                    self.evaluate(bar)
            self.encoder.train()
            self.objective.train()
            while self.step < target:
                plan = self._plan(self.epoch)
                if self.batch_in_epoch >= len(plan):
                    self.epoch += 1
                    self.batch_in_epoch = 0
                    continue
                loss, grad_norm, lr = self.train_step(plan[self.batch_in_epoch])
                self.batch_in_epoch += 1
                self.step += 1
                self.record.log_step(self.step, self._epoch_float(), loss, lr, grad_norm)
                recent.append(loss)
                bar.update(1)
                bar.set_postfix(
                    loss=f"{sum(recent) / len(recent):.4f}", lr=f"{lr:.2e}", refresh=False
                )
                if self._due(cfg.eval_steps) and self.evaluator is not None:
                    self.evaluate(bar)
                if self._due(cfg.save_steps):
                    self.save_checkpoint()
            evaluated = bool(self.record.evals) and self.record.evals[-1]["step"] == self.step
            if self.finished and self.evaluator is not None and not evaluated:
                self.evaluate(bar)
        finally:
            bar.close()
            self.encoder.eval()
            self.objective.eval()
            self._rng_snapshot = rng_state()
        return self.record

    def _due(self, every: int | None) -> bool:
        return every is not None and self.step % every == 0

    def _epoch_float(self) -> float:
        return self.epoch + self.batch_in_epoch / max(1, len(self._plan(self.epoch)))

    @property
    def finished(self) -> bool:
        return self.step >= self.total_steps

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, bar: Any = None) -> dict[str, float]:
        """Run the evaluator now and record the result at the current step."""
        if self.evaluator is None:
            raise ValueError("no evaluator: pass evaluator=STSEvaluator(...) to the Trainer")
        metrics = {k: float(v) for k, v in self.evaluator(self.encoder).items()}
        self.record.log_eval(self.step, self._epoch_float(), metrics)
        text = ", ".join(f"{k}={v:.2f}" for k, v in metrics.items())
        (bar.write if bar is not None else logger.info)(f"step {self.step}: {text}")
        return metrics

    @torch.no_grad()
    def dataset_loss(self, batch_size: int | None = None) -> float:
        """Mean loss over all training examples in data order, in eval mode (no dropout).

        A fixed yardstick for "did training lower the loss?"; for in-batch objectives the
        negatives are the neighbours in data order.
        """
        size = batch_size or self.config.batch_size
        modes = (self.encoder.training, self.objective.training)
        self.encoder.eval()
        self.objective.eval()
        total, n = 0.0, len(self.examples)
        try:
            for start in range(0, n, size):
                batch = list(range(start, min(n, start + size)))
                rows = [self.examples.texts[i] for i in batch]
                with self._autocast():
                    loss = self.objective.loss(
                        self.encoder, rows, self._labels(batch), bucket=self.bucket
                    )
                total += float(loss) * len(batch)
        finally:
            self.encoder.train(modes[0])
            self.objective.train(modes[1])
        return total / n

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue this run exactly (see :mod:`.checkpoint`)."""
        return {
            "format": 1,
            "step": self.step,
            "epoch": self.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "total_steps": self.total_steps,
            "encoder": self.encoder.state_dict(),
            "objective": self.objective.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": None if self.scaler is None else self.scaler.state_dict(),
            "record": self.record.to_dict(),
            "rng": rng_state(),
            "config": self.config.to_dict(),
            "data_fingerprint": self._fingerprint,
            "num_examples": len(self.examples),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`; refuses one made with other settings or other data."""
        saved = state["config"]
        current = self.config.to_dict()
        diff = [
            f"{k}: {saved.get(k)!r} -> {current[k]!r}"
            for k in TRAJECTORY_FIELDS
            if saved.get(k) != current[k]
        ]
        if diff:
            raise ValueError(
                "the checkpoint was made with other training settings ("
                + "; ".join(diff)
                + "); resume with the same settings, or start a new run"
            )
        if state["data_fingerprint"] != self._fingerprint:
            raise ValueError(
                f"the checkpoint was made on other training data ({state['num_examples']} "
                f"examples, now {len(self.examples)}); resume on the same data"
            )
        self.encoder.load_state_dict(state["encoder"])
        self.objective.load_state_dict(state["objective"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.scaler is not None and state["scaler"] is not None:
            self.scaler.load_state_dict(state["scaler"])
        self.record = TrainingRecord.from_dict(state["record"])
        self.step = int(state["step"])
        self.epoch = int(state["epoch"])
        self.batch_in_epoch = int(state["batch_in_epoch"])
        self._started = True
        set_rng_state(state["rng"])

    def save_checkpoint(self, folder: str | Path | None = None) -> Path:
        """Write a checkpoint now (into ``folder`` or ``config.checkpoint_dir``)."""
        target = folder or self.config.checkpoint_dir
        if target is None:
            raise ValueError("no checkpoint folder: pass one, or set checkpoint_dir in the config")
        state = self.state_dict()
        if self.rank != 0:  # under torchrun, one writer
            return Path(target)
        return save_checkpoint(target, state, keep=self.config.keep_checkpoints)
