"""The training settings of a chapter's runs, made from its sizes: one call in every chapter.

:func:`training_config` turns a chapter's :class:`~sbert_tutor.book.sizes.RunSizes` (or any sizes
with the same five schedule fields, :class:`Schedule`) into a
:class:`~sbert_tutor.training.TrainingConfig`: steps or epochs, batch size, learning rate and
warm-up from the sizes, and two settings from where it runs:

* ``amp="auto"`` when CUDA is available: mixed precision, fp16 with loss scaling on a T4
  (compute capability 7.5), bf16 from 8.0 (:func:`sbert_tutor.training.trainer.auto_amp`); fp32
  on a CPU.
* a progress bar (:func:`show_progress_bar`) in every profile but ``quick``, whose runs take seconds
  and whose output the book keeps short. The trainer draws it with ``tqdm.auto``: a notebook
  bar in Jupyter and Colab, a text bar elsewhere.

A chapter writes ``config = training_config(sizes, eval_before=False)``; keywords override.
"""

from __future__ import annotations

from typing import Any, Protocol

from sbert_tutor.book.profiles import Profile, get_profile
from sbert_tutor.training import TrainingConfig

__all__ = ["Schedule", "mixed_precision", "on_cuda", "show_progress_bar", "training_config"]


class Schedule(Protocol):
    """What :func:`training_config` reads from a chapter's sizes (:class:`~sbert_tutor.book.sizes.RunSizes`
    has it): optimizer ``steps`` (``None``: ``epochs`` whole epochs), ``batch_size``, the peak
    rate ``lr`` and the share of steps that warm it up, ``warmup_ratio``."""

    @property
    def steps(self) -> int | None: ...
    @property
    def epochs(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def lr(self) -> float: ...
    @property
    def warmup_ratio(self) -> float: ...


def on_cuda() -> bool:
    """Whether the runs will train on a CUDA GPU (the trainer's default device)."""
    import torch

    return bool(torch.cuda.is_available())


def mixed_precision() -> str | None:
    """``"auto"`` on CUDA (fp16 + loss scaling on a T4, bf16 from compute capability 8.0),
    ``None`` (fp32) on a CPU."""
    return "auto" if on_cuda() else None


def show_progress_bar(profile: Profile | str | None = None) -> bool:
    """Progress bars for every profile but ``quick`` (whose runs take seconds)."""
    if profile is None:
        profile = get_profile()
    name = profile.name if isinstance(profile, Profile) else get_profile(str(profile)).name
    return name != "quick"


def training_config(
    sizes: Schedule,
    profile: Profile | str | None = None,
    **overrides: Any,
) -> TrainingConfig:
    """The :class:`~sbert_tutor.training.TrainingConfig` of a chapter's runs.

    Args:
        sizes: the chapter's sizes (``steps`` or ``epochs``, ``batch_size``, ``lr``,
            ``warmup_ratio``).
        profile: for :func:`show_progress_bar` (default: the profile in use).
        **overrides: any other :class:`~sbert_tutor.training.TrainingConfig` field
            (``eval_before=False``, ``seed=0``, ...); they win over the above.

    Example:
        >>> from sbert_tutor.book.chapters.multiple_negatives_ranking import MNRLSizes
        >>> from sbert_tutor.book.sizes import sizes_for
        >>> config = training_config(sizes_for(MNRLSizes, "quick"), "quick")
        >>> (config.max_steps, config.batch_size, config.show_progress_bar)
        (40, 32, False)
    """
    settings: dict[str, Any] = {
        "epochs": sizes.epochs,
        "max_steps": sizes.steps,
        "batch_size": sizes.batch_size,
        "lr": sizes.lr,
        "warmup_ratio": sizes.warmup_ratio,
        "amp": mixed_precision(),
        "show_progress_bar": show_progress_bar(profile),
    }
    settings.update(overrides)
    return TrainingConfig(**settings)
