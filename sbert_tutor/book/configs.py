"""The training settings of a chapter's runs, made from its sizes: one call in every chapter.

:func:`training_config` turns a chapter's :class:`~sbert_tutor.book.sizes.RunSizes` (or any
:class:`Schedule`) into a :class:`~sbert_tutor.training.TrainingConfig`, with two settings from
where it runs: ``amp="auto"`` on CUDA (fp16 with loss scaling on a T4, bf16 from compute
capability 8.0: :func:`sbert_tutor.training.trainer.auto_amp`; fp32 on a CPU), and a progress
bar (``tqdm.auto``) in every profile but ``quick``, whose runs take seconds.
"""

from __future__ import annotations

from typing import Any, Protocol

from sbert_tutor.book.profiles import Profile, get_profile
from sbert_tutor.training import TrainingConfig

__all__ = ["Schedule", "mixed_precision", "on_cuda", "show_progress_bar", "training_config"]


class Schedule(Protocol):
    """What :func:`training_config` reads from a chapter's sizes (as
    :class:`~sbert_tutor.book.sizes.RunSizes` has them)."""

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
    if not isinstance(profile, Profile):
        profile = get_profile(None if profile is None else str(profile))
    return profile.name != "quick"


def training_config(
    sizes: Schedule,
    profile: Profile | str | None = None,
    **overrides: Any,
) -> TrainingConfig:
    """The :class:`~sbert_tutor.training.TrainingConfig` of a chapter's runs from its ``sizes``,
    with :func:`mixed_precision` and :func:`show_progress_bar` (for ``profile``, default the one
    in use); ``overrides`` (``eval_before=False``, ``seed=0``, ...) win.

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
    return TrainingConfig(**settings | overrides)
