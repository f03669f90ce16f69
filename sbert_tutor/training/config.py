"""Training settings, validated once, recorded in every log and checkpoint.

Defaults follow the SBERT paper where it states them: batch size 16, Adam with learning rate
2e-5, linear warm-up over 10% of the training steps, then linear decay; one epoch. Weight decay
0.01 (not applied to biases and LayerNorm weights) and gradient clipping at norm 1.0 follow
sentence-transformers' ``fit``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sbert_tutor.training.schedules import SCHEDULES
from sbert_tutor.validation import OptionError

__all__ = ["TrainingConfig"]

_AMP_MODES = ("fp16", "bf16", "auto")

#: Settings that change the trajectory: a checkpoint only resumes under the same values.
TRAJECTORY_FIELDS = (
    "epochs",
    "batch_size",
    "lr",
    "weight_decay",
    "warmup_ratio",
    "schedule",
    "max_steps",
    "max_grad_norm",
    "seed",
    "amp",
    "length_buckets",
    "no_duplicates",
)


@dataclass
class TrainingConfig:
    """How to train.

    Attributes:
        epochs: passes over the data (ignored when ``max_steps`` is set).
        batch_size: examples per optimizer step.
        lr: peak learning rate of AdamW.
        weight_decay: AdamW's decoupled weight decay (not on biases / LayerNorm weights).
        warmup_ratio: share of the steps spent warming up (``ceil(ratio * total)`` steps).
        schedule: ``"linear"`` (decay to 0 after warm-up) or ``"constant"``.
        max_steps: train exactly this many steps, cycling through epochs as needed.
        max_grad_norm: clip the global gradient norm to this (``None``: no clipping).
        seed: seeds Python, NumPy and torch at the start, and the batch order of every epoch.
        amp: mixed precision on CUDA: ``"fp16"`` (autocast with a gradient scaler), ``"bf16"``
            (autocast), ``"auto"`` or ``None`` (fp32; also ``"fp32"``). ``"auto"`` picks by the GPU
            (:func:`sbert_tutor.training.trainer.auto_amp`): bf16 on compute capability >= 8.0,
            fp16 with a gradient scaler below, fp32 on a CPU.
        bucket: width bucketing of each training batch (:mod:`sbert_tutor.runtime.batching`):
            ``"auto"`` rounds the padded width up to a multiple of 32 on CUDA under fp16/bf16
            and pads to the longest text elsewhere; ``None`` never; a multiple or a ladder of
            widths. The padding is masked, so in fp32 the embeddings and the loss do not change.
        length_buckets: smart batching: each epoch's shuffled examples are cut into windows of
            this many batches and each window is sorted by token length, so a batch holds
            texts of similar length (:mod:`~sbert_tutor.training.samplers`); ``None``: a plain
            shuffle.
        no_duplicates: never put a text twice in a batch; ``None``: on for in-batch-negative
            objectives (mnrl, supmpn, contrastive), off otherwise.
        eval_steps: evaluate every this many steps (needs an evaluator); ``None``: only before
            and after training.
        eval_before: evaluate once before the first step (the curve's starting point).
        save_steps: write a checkpoint every this many steps into ``checkpoint_dir``.
        checkpoint_dir: where checkpoints go.
        keep_checkpoints: how many of the newest checkpoints to keep (``None``: all).
        show_progress_bar: a tqdm bar with the running loss.
    """

    epochs: int = 1
    batch_size: int = 16
    lr: float = 2e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    schedule: str = "linear"
    max_steps: int | None = None
    max_grad_norm: float | None = 1.0
    seed: int = 42
    amp: str | None = None
    bucket: int | tuple[int, ...] | str | None = "auto"
    length_buckets: int | None = 50
    no_duplicates: bool | None = None
    eval_steps: int | None = None
    eval_before: bool = True
    save_steps: int | None = None
    checkpoint_dir: str | None = None
    keep_checkpoints: int | None = 2
    show_progress_bar: bool = True

    def __post_init__(self) -> None:
        def positive_int(name: str, value: Any, allow_none: bool = False) -> None:
            if value is None and allow_none:
                return
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise OptionError(f"{{{name}}}: {name} must be an integer >= 1", {name: value})

        positive_int("epochs", self.epochs)
        positive_int("batch_size", self.batch_size)
        positive_int("max_steps", self.max_steps, allow_none=True)
        positive_int("eval_steps", self.eval_steps, allow_none=True)
        positive_int("save_steps", self.save_steps, allow_none=True)
        positive_int("length_buckets", self.length_buckets, allow_none=True)
        if not self.lr > 0:
            raise OptionError("{lr}: the learning rate must be > 0", {"lr": self.lr})
        if not self.weight_decay >= 0:
            raise OptionError(
                "{weight_decay}: weight_decay must be >= 0", {"weight_decay": self.weight_decay}
            )
        if not 0.0 <= self.warmup_ratio <= 1.0:
            raise OptionError(
                "{warmup_ratio}: warmup_ratio must be in [0, 1]",
                {"warmup_ratio": self.warmup_ratio},
            )
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise OptionError(
                "{max_grad_norm}: max_grad_norm must be > 0 (None: no clipping)",
                {"max_grad_norm": self.max_grad_norm},
            )
        if self.amp in ("none", "", "fp32"):
            self.amp = None
        if self.amp is not None and self.amp not in _AMP_MODES:
            raise ValueError(f"amp must be one of {_AMP_MODES} or None, got {self.amp!r}")
        if isinstance(self.bucket, list):
            self.bucket = tuple(self.bucket)
        if self.bucket != "auto":
            from sbert_tutor.runtime.batching import resolve_bucket

            resolve_bucket(self.bucket, "cpu", None, "right")  # a bad value fails here
        if self.save_steps is not None and not self.checkpoint_dir:
            raise ValueError("save_steps needs checkpoint_dir= (where to write the checkpoints)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
