r"""Duplicate texts in a batch: false negatives for in-batch-negative losses (chapter 9).

:func:`shared_text_pairs` counts the examples of one batch that share a text;
:func:`duplicate_report` compares plain shuffled batches with
:class:`~sbert_tutor.training.samplers.NoDuplicatesBatchSampler`; :func:`text_repeats` says how
repetitive the training rows are to begin with.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sbert_tutor.training.samplers import NoDuplicatesBatchSampler


def shared_text_pairs(rows: Sequence[Sequence[str]]) -> int:
    """Unordered pairs of examples (of one batch) that share at least one text (after strip).

    With in-batch negatives, each such pair puts a copy of a positive (or of the anchor, or a
    second valid positive of the same premise) among an anchor's negatives: a false negative.
    """
    holders: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        for text in {t.strip() for t in row}:
            holders.setdefault(text, []).append(i)
    pairs = {
        (ids[x], ids[y])
        for ids in holders.values()
        if len(ids) > 1
        for x in range(len(ids))
        for y in range(x + 1, len(ids))
    }
    return len(pairs)


def random_batches(n: int, batch_size: int, seed: int = 0) -> list[list[int]]:
    """A plain shuffled plan: ``permutation(n)`` cut into batches of ``batch_size``."""
    order = np.random.default_rng(seed).permutation(n).tolist()
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def duplicate_report(
    rows: Sequence[Sequence[str]],
    batch_sizes: Sequence[int] = (16, 32, 64, 128, 256),
    seed: int = 0,
    epochs: int = 3,
) -> pd.DataFrame:
    """How often batches hold one text in two examples: random batches vs no-duplicates batches.

    For every batch size, ``epochs`` epochs (seeds ``seed .. seed+epochs-1``) are planned by a
    plain shuffle and by :class:`~sbert_tutor.training.samplers.NoDuplicatesBatchSampler`.
    Columns: ``batch size``, ``sampler``, ``batches``, ``mean batch size``, ``batches with a
    shared text %``, ``shared pairs per batch`` (see :func:`shared_text_pairs`).
    """
    rows = [tuple(r) for r in rows]
    out = []
    for size in batch_sizes:
        for sampler in ("random", "NoDuplicatesBatchSampler"):
            counts, sizes = [], []
            for e in range(epochs):
                if sampler == "random":
                    plan = random_batches(len(rows), size, seed + e)
                else:
                    plan = NoDuplicatesBatchSampler(rows, size, seed + e).batches(0)
                for batch in plan:
                    counts.append(shared_text_pairs([rows[i] for i in batch]))
                    sizes.append(len(batch))
            counts_arr = np.asarray(counts)
            out.append(
                {
                    "batch size": int(size),
                    "sampler": sampler,
                    "batches": len(counts),
                    "mean batch size": float(np.mean(sizes)),
                    "batches with a shared text %": 100.0 * float((counts_arr > 0).mean()),
                    "shared pairs per batch": float(counts_arr.mean()),
                }
            )
    return pd.DataFrame(out)


def text_repeats(rows: Sequence[Sequence[str]]) -> pd.Series:
    """How repetitive the training rows are: examples, distinct texts, texts in >1 example."""
    per_text = Counter(t.strip() for row in rows for t in {s.strip() for s in row})
    return pd.Series(
        {
            "examples": len(rows),
            "distinct texts": len(per_text),
            "texts in more than one example": sum(1 for c in per_text.values() if c > 1),
            "most examples sharing one text": max(per_text.values()),
        },
        name="count",
    )
