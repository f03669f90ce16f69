"""Quick and full profiles: one code path, two sizes.

* ``quick``: CPU, small *real* subsets, a few minutes a chapter. CI and the book build use it.
  Its numbers are labelled "quick" everywhere and are never presented as paper reproductions.
* ``full``: GPU, paper-scale data and epochs.

The profile is ``SBERT_TUTOR_PROFILE`` when set, else ``full`` when CUDA is available, else ``quick``.
Sizes live in :data:`SIZES` (name -> (quick, full)), so a chapter asks ``profile["cost_pairs"]``
instead of hard-coding a number.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from sbert_tutor.settings import PROFILE_ENV

PROFILES = ("quick", "full")

#: name -> (quick value, full value). Chapters and CLIs read sizes from here.
SIZES: dict[str, tuple[Any, Any]] = {
    # chapter 2, the cost of cross-encoders
    "cost_pairs": (192, 4096),
    "cost_sentences": (512, 20000),
    "cost_batch_size": (32, 128),
    # chapter 3, pooling comparison on STSb test (pairs; None = all)
    "pooling_pairs": (None, None),
    "anisotropy_pairs": (2000, 20000),
    # computational efficiency chapter
    "speed_sts_sentences": (500, 5000),
    "speed_passages": (100, 2000),
    "speed_repeats": (2, 5),
    "speed_search_corpus": (100_000, 1_000_000),
    # chapter 4, retrieval metrics vs k: dev-subset queries (+ their BM25 top-20s), TREC DL19
    # queries (+ their judged passages) and random other corpus_mini passages (None = all)
    "metrics_curve_queries": (100, None),
    "metrics_curve_dl19_queries": (10, None),
    "metrics_curve_random_passages": (0, None),
    # chapter 5, MS MARCO: the corpus ("mini" = corpus_mini.tsv, "full" = 8.8M from the hub)
    # and the datasets evaluated on it
    "msmarco_corpus": ("mini", "full"),
    "msmarco_datasets": (("msmarco-dev-subset", "trec-dl19"), ("msmarco-dev", "trec-dl19")),
    # training (sbert_tutor.training): optimizer steps per run (None = full epochs), training
    # examples drawn with the seed (None = all), batch sizes (SBERT's 16; ranking losses such as
    # MNRL gain from bigger batches) and how often to evaluate on STSb dev
    "train_max_steps": (100, None),
    "train_examples": (2000, None),
    "train_batch_size": (16, 16),
    "train_batch_size_ranking": (16, 64),
    "train_eval_steps": (50, 1000),
    # chapters 9-11, contrastive objectives (MNRL, SupMPN, search-guided): pairs encoded once for
    # the fixed-embedding analyses, and the short training runs (None = full epochs / all data)
    "contrastive_fixed_pairs": (1024, 8192),
    "contrastive_max_steps": (40, None),
    "contrastive_batch_size": (32, 64),
    "contrastive_examples": (1280, None),
    "supmpn_batch_size": (16, 64),
    "supmpn_examples": (640, None),
    # chapter 11: unlabelled sentences (STSb train, scores dropped) and the student; the teacher
    # is always all-MiniLM-L6-v2. Quick: the student starts as the teacher (the paper: BERT).
    "search_guided_pool": (1280, None),
    "search_guided_student": ("sentence-transformers/all-MiniLM-L6-v2", "bert-base-uncased"),
    # chapters 6-8, SBERT's objectives (softmax, regression, triplet): the start model (quick:
    # all-MiniLM-L6-v2; full: the paper's BERT-base), optimizer steps of each short softmax /
    # triplet run and of the regression run (None = full epochs), epochs of the regression run
    # when steps are None, training examples drawn with the seed (None = all), STSb dev pairs the
    # comparison runs are scored on, premises of the linear probes' train / test sides, STSb
    # train pairs of the label-scale table and NLI triplets of the margin sweep (None = all)
    "objective_model": ("sentence-transformers/all-MiniLM-L6-v2", "bert-base-uncased"),
    "objective_steps": (25, None),
    "objective_regression_steps": (60, None),
    "objective_regression_epochs": (1, 4),
    "objective_examples": (1000, None),
    "objective_eval_pairs": (500, None),
    "objective_probe_premises": ((500, 300), (20000, 2000)),
    "objective_scale_pairs": (500, None),
    "objective_margin_triplets": (500, 5000),
    # chapter 12, the distance dilemma: test queries (the first ones of the dev subset; the rest
    # train), random extra test passages beyond their judged + BM25 candidates (None = the whole
    # mini corpus), BM25 negatives per training query (None = all), the start model, optimizer
    # steps (None = full epochs) and epochs, batch size, and triplets in the PCA picture
    "dilemma_test_queries": (100, 200),
    "dilemma_other_passages": (0, None),
    "dilemma_negatives_per_query": (2, None),
    "dilemma_model": ("sentence-transformers/all-MiniLM-L6-v2", "bert-base-uncased"),
    "dilemma_steps": (32, None),
    "dilemma_epochs": (1, 1),
    "dilemma_batch_size": (16, 16),
    "dilemma_pca_triplets": (40, 100),
}


@dataclass(frozen=True)
class Profile:
    """A named size preset. ``profile[key]`` returns the size for this profile."""

    name: str
    reason: str

    def __getitem__(self, key: str) -> Any:
        if key not in SIZES:
            raise KeyError(f"no size {key!r}; known: {', '.join(sorted(SIZES))}")
        quick, full = SIZES[key]
        return quick if self.name == "quick" else full

    @property
    def is_quick(self) -> bool:
        return self.name == "quick"

    @property
    def label(self) -> str:
        """How results of this profile are labelled in tables and plots: ``"quick (CPU, small
        subsets; not a paper reproduction)"``, ``"quick (GPU, ...)"`` where CUDA is available
        (the encoders then run there), or ``"full"``."""
        if not self.is_quick:
            return "full"
        import torch

        where = "GPU" if torch.cuda.is_available() else "CPU"
        return f"quick ({where}, small subsets; not a paper reproduction)"


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
    if name not in PROFILES:
        raise ValueError(
            f"unknown profile {name!r}; choose one of {', '.join(PROFILES)} (via {PROFILE_ENV})"
        )
    return Profile(name, reason)
