"""Three profiles, one code path: ``quick``, ``t4`` and ``paper``.

* ``quick``: small *real* subsets, a few minutes a chapter on a laptop-class CPU; the rendered
  book shows its runs, labelled "quick" everywhere, never presented as paper reproductions.
* ``t4``: one T4-class GPU (16 GB, fp16 tensor cores, no bf16), the GPU a reader gets on Colab;
  larger runs, from a model a reader can download, still not a reproduction of any paper
  (minutes a chapter: :func:`sbert_tutor.book.run_times.time_table`).
* ``paper``: each chapter's run is its paper's own setup, as far as the library and the hub
  allow (what still differs: :func:`sbert_tutor.book.deviations.deviations`). Hours of GPU.

The profile is ``SBERT_TUTOR_PROFILE`` when set, else ``t4`` when CUDA is available, else
``quick``; ``paper`` is never chosen by itself. Results record the profile's *name*
(:mod:`sbert_tutor.provenance`); each chapter's sizes are :mod:`sbert_tutor.book.sizes`'.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sbert_tutor.settings import PROFILE_ENV
from sbert_tutor.validation import check_choice

__all__ = ["GPU_PROFILE", "PROFILES", "Profile", "check_profile", "get_profile"]

#: The profile names, smallest first.
PROFILES = ("quick", "t4", "paper")
#: The profile chosen when CUDA is available and ``SBERT_TUTOR_PROFILE`` is unset.
GPU_PROFILE = "t4"


@dataclass(frozen=True)
class Profile:
    """The profile in use and why (``SBERT_TUTOR_PROFILE``, or whether CUDA is available)."""

    name: str
    reason: str

    @property
    def label(self) -> str:
        """How results of this profile are labelled in tables and plots, saying what it is (for
        ``quick``, ``GPU`` instead of ``CPU`` where CUDA is available: the encoders run there)."""
        if self.name == "t4":
            return "t4 (one T4-class GPU, fp16; not a paper reproduction)"
        if self.name == "paper":
            return "paper (each paper's own setup; deviations listed)"
        import torch

        where = "GPU" if torch.cuda.is_available() else "CPU"
        return f"quick ({where}, small subsets; not a paper reproduction)"


def check_profile(name: str) -> str:
    """``name`` lower-cased if it is a profile; else ``ValueError`` naming the choices."""
    key = str(name).strip().lower()
    return check_choice(name, PROFILES, "profile", key=key, other=f" (set {PROFILE_ENV})")


def get_profile(name: str | None = None) -> Profile:
    """Resolve the profile: explicit ``name`` > ``SBERT_TUTOR_PROFILE`` > ``t4`` when CUDA is
    available > ``quick``. ``paper`` only when asked for by name."""
    if name is None:
        env = os.environ.get(PROFILE_ENV, "").strip().lower()
        if env:
            name, reason = env, f"{PROFILE_ENV}={env}"
        else:
            import torch

            cuda = torch.cuda.is_available()
            name = GPU_PROFILE if cuda else "quick"
            reason = "CUDA is available" if cuda else "no CUDA device"
    else:
        reason = "chosen explicitly"
    return Profile(check_profile(name), reason)
