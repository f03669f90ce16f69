r"""The cost of finding the most similar pair: the timer the chapters share (:func:`median_seconds`,
chapters 2, 13, 14 and ``benchmarks/search_speed.py``), the pair count, the published claims
(chapter 9), and chapter 2's durations in words and its figure.

Among :math:`n` sentences a cross-encoder runs the transformer on all :math:`n(n-1)/2` pairs; a
bi-encoder runs it :math:`n` times and compares the embeddings by cosine. From three measured
rates (pairs scored, sentences encoded, pairs compared per second) chapter 2 extrapolates

.. math::
    t_\text{cross}(n) = \frac{n(n-1)/2}{r_\text{pair}}, \qquad
    t_\text{bi}(n) = \frac{n}{r_\text{sent}} + \frac{n(n-1)/2}{r_\text{cos}}.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.published import (
    SBERT_COST_CLAIM,
    SBERT_COST_CLAIM_SOURCE,
    TANEJA_COST_CLAIM,
    TANEJA_COST_CLAIM_SOURCE,
)

__all__ = [
    "cost_claims_checked",
    "humanize_seconds",
    "median_seconds",
    "pair_count",
    "plot_cost_curves",
]


def median_seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of ``repeats`` calls of ``fn`` and the last result."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def humanize_seconds(seconds: float) -> str:
    """3.2 s, 4.1 min, 65 h, 12 days, 3.4 years."""
    for unit, size in (("years", 365 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def pair_count(n: int) -> int:
    r""":math:`\binom{n}{2} = n(n-1)/2`, the pairs a cross-encoder scores to find the closest pair."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return n * (n - 1) // 2


def cost_claims_checked() -> pd.DataFrame:
    """The published cross-encoder cost claims beside the pair count of the ``n`` they name, and
    SBERT's 65 hours scaled by it (the same rate per pair): Taneja et al. restate SBERT's claim
    (10,000 sentences, about 50 million pairs) for 100K sentences, a hundred times the pairs."""
    hours_per_pair = SBERT_COST_CLAIM["cross_encoder_hours"] / pair_count(SBERT_COST_CLAIM["n"])
    rows = []
    for source, claim in (
        (SBERT_COST_CLAIM_SOURCE, SBERT_COST_CLAIM),
        (TANEJA_COST_CLAIM_SOURCE, TANEJA_COST_CLAIM),
    ):
        pairs = pair_count(claim["n"])
        rows.append(
            {
                "source (published)": str(source),
                "sentences n": claim["n"],
                "pairs stated": claim.get("inference_computations", "about 50 million"),
                "hours stated": claim["cross_encoder_hours"],
                "n(n-1)/2": pairs,
                "hours at SBERT's rate per pair": round(pairs * hours_per_pair, 1),
            }
        )
    return pd.DataFrame(rows).set_index("source (published)")


_SECONDS = {"1 s": 1, "1 min": 60, "1 h": 3600, "1 day": 86400, "1 year": 365 * 86400}


def plot_cost_curves(table: pd.DataFrame, claim: Mapping[str, float] | None = None, ax=None):
    """Seconds to find the most similar pair vs collection size, log-log (book chapter 2)."""
    ax = new_axes(ax)
    for column, style, name in (
        ("cross_encoder_s", "o-", "cross-encoder"),
        ("bi_encoder_s", "s-", "bi-encoder / SBERT"),
    ):
        ax.loglog(table["n"], table[column], style, label=f"{name} (this run, extrapolated)")
    for text, seconds in _SECONDS.items():
        ax.axhline(seconds, color="grey", lw=0.5, ls=":")
        ax.text(table["n"].min(), seconds * 1.15, text, color="grey", fontsize=8)
    if claim:
        n, cross_seconds = [claim["n"]], claim["cross_encoder_hours"] * 3600
        ax.loglog(n, [cross_seconds], "r*", ms=12, label="paper: BERT, 65 h (V100)")
        ax.loglog(n, [claim["sbert_seconds"]], "g*", ms=12, label="paper: SBERT, 5 s (V100)")
    ax.set_xlabel("number of sentences n")
    ax.set_ylabel("seconds to find the most similar pair")
    ax.legend(fontsize=8)
    return ax
