"""Quick and full profiles: one code path, two sizes.

* ``quick``: CPU, small *real* subsets, a few minutes a chapter. CI and the book build use it.
  Its numbers are labelled "quick" everywhere and are never presented as paper reproductions.
* ``full``: GPU, paper-scale data and epochs.

The profile is ``SBERT_TUTOR_PROFILE`` when set, else ``full`` when CUDA is available, else ``quick``.
Results record the profile's *name* (:mod:`sbert_tutor.provenance`); how big each chapter's data
and runs are under each profile is the book's business (:mod:`sbert_tutor.book.sizes`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sbert_tutor.settings import PROFILE_ENV
from sbert_tutor.validation import check_choice

PROFILES = ("quick", "full")


@dataclass(frozen=True)
class Profile:
    """The profile in use and why (``SBERT_TUTOR_PROFILE``, or whether CUDA is available)."""

    name: str
    reason: str

    @property
    def is_quick(self) -> bool:
        return self.name == "quick"

    @property
    def label(self) -> str:
        """How results of this profile are labelled in tables and plots."""
        return "quick (CPU, small subsets; not a paper reproduction)" if self.is_quick else "full"


def get_profile(name: str | None = None) -> Profile:
    """Resolve the profile: explicit ``name`` > ``SBERT_TUTOR_PROFILE`` > CUDA present -> full."""
    if name is None:
        env = os.environ.get(PROFILE_ENV, "").strip().lower()
        if env:
            name, reason = env, f"{PROFILE_ENV}={env}"
        else:
            import torch

            cuda = torch.cuda.is_available()
            name = "full" if cuda else "quick"
            reason = "CUDA is available" if cuda else "no CUDA device"
    else:
        reason = "chosen explicitly"
    check_choice(name, PROFILES, "profile", key=name, other=f" (set {PROFILE_ENV})")
    return Profile(name, reason)
