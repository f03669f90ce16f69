r"""Why cross-encoders do not scale: measured pair-scoring cost vs a bi-encoder (chapter 2; its timer serves chapters 13 and 14 too).

To find the most similar pair among :math:`n` sentences, a cross-encoder must run the full
transformer on every pair: :math:`\binom{n}{2} = n(n-1)/2` forward passes, :math:`O(n^2)`.
A bi-encoder (SBERT) runs the transformer :math:`n` times and then compares embeddings with a
cosine matrix, :math:`n(n-1)/2` dot products of dimension :math:`d` — still quadratic, but each
step is a few nanoseconds instead of milliseconds.

We *measure* three rates on the hardware a run has — cross-encoder pairs/s, bi-encoder
sentences/s, cosine pairs/s — and extrapolate:

.. math::
    t_\text{cross}(n) = \frac{n(n-1)/2}{r_\text{pair}}, \qquad
    t_\text{bi}(n) = \frac{n}{r_\text{sent}} + \frac{n(n-1)/2}{r_\text{cos}}.

Every rate counts what the formulas divide: :math:`r_\text{pair}` and :math:`r_\text{cos}` are both
*distinct pairs* per second. The cosine rate is timed as the method that finds the most similar
pair (:func:`most_similar_pair`): one :math:`n \times n` matrix product, its diagonal (each
sentence with itself) set to :math:`-\infty`, and the position of its maximum; that product
computes :math:`n^2` entries, but it settles only the :math:`n(n-1)/2` distinct pairs, so those
are what it counts.

The cross-encoder is the same BERT fed the pair ``[CLS] s1 [SEP] s2 [SEP]`` with a one-logit head;
its timing does not depend on whether the head was trained, so a fresh head is used.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.published import (
    SBERT_COST_CLAIM,
    SBERT_COST_CLAIM_SOURCE,
    TANEJA_COST_CLAIM,
    TANEJA_COST_CLAIM_SOURCE,
)
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

__all__ = [
    "CostRates",
    "cost_claims_checked",
    "cross_encoder_like",
    "extrapolate",
    "humanize_seconds",
    "measure_rates",
    "median_seconds",
    "most_similar_pair",
    "pair_count",
    "plot_cost_curves",
    "sentence_pool",
]


@dataclass(frozen=True)
class CostRates:
    """Measured throughput on one machine (median over repeats): pairs scored by the cross-encoder,
    sentences encoded, and distinct pairs compared by one cosine-matrix product, per second."""

    cross_pairs_per_s: float
    bi_sentences_per_s: float
    cosine_pairs_per_s: float
    batch_size: int
    n_pairs_timed: int
    n_sentences_timed: int
    device: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def median_seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of ``repeats`` calls of ``fn`` and the last result."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def _median_rate(work: Callable[[], Any], items: int, repeats: int) -> float:
    return items / median_seconds(work, repeats)[0]


def cross_encoder_like(
    encoder: SentenceEncoder,
) -> Callable[[Sequence[str], Sequence[str], int], torch.Tensor]:
    """A pair scorer that runs ``encoder``'s transformer on concatenated pairs, plus a 1-logit head."""
    model, tokenizer = encoder.model, encoder.tokenizer
    head = torch.nn.Linear(model.config.hidden_size, 1).to(encoder.device)

    def score(first: Sequence[str], second: Sequence[str], batch_size: int) -> torch.Tensor:
        logits = []
        with torch.inference_mode():
            for start in range(0, len(first), batch_size):
                batch = tokenizer(
                    list(first[start : start + batch_size]),
                    list(second[start : start + batch_size]),
                    padding=True,
                    truncation=True,
                    max_length=encoder.max_seq_length,
                    return_tensors="pt",
                ).to(encoder.device)
                hidden = model(**batch).last_hidden_state[:, 0]
                logits.append(head(hidden).squeeze(-1))
        return torch.cat(logits)

    return score


def sentence_pool(
    sentences1: Sequence[str], sentences2: Sequence[str], n_sentences: int
) -> list[str]:
    """The first ``n_sentences`` distinct sentences of both sides of the pairs, in order: what
    :func:`measure_rates` encodes and searches for the most similar pair."""
    return list(dict.fromkeys([*sentences1, *sentences2]))[:n_sentences]


def most_similar_pair(emb: torch.Tensor) -> tuple[int, int, float]:
    r"""The most similar pair ``(i, j, score)``, ``i < j``, among the rows of ``emb`` (unit rows:
    the score is their cosine). One :math:`n \times n` product; its diagonal, each row with
    itself (a cosine of 1), is set to :math:`-\infty` so that the maximum is a pair of two
    different rows."""
    scores = emb @ emb.T
    scores.fill_diagonal_(float("-inf"))
    i, j = divmod(int(torch.argmax(scores)), scores.shape[1])
    return min(i, j), max(i, j), float(scores[i, j])


def measure_rates(
    encoder: SentenceEncoder,
    sentences1: Sequence[str],
    sentences2: Sequence[str],
    n_sentences: int,
    batch_size: int = 32,
    repeats: int = 3,
) -> CostRates:
    """Time cross-encoder pair scoring, bi-encoder encoding and the cosine matrix on real text.

    Args:
        encoder: a :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder` (its transformer is reused).
        sentences1, sentences2: the pairs the cross-encoder scores.
        n_sentences: how many sentences the bi-encoder encodes (taken from both sides).

    Returns:
        :class:`CostRates`; ``cosine_pairs_per_s`` counts the :math:`n(n-1)/2` distinct pairs of
        the ``n_sentences`` sentences that one timed cosine-matrix product compares.
    """
    score = cross_encoder_like(encoder)
    score(sentences1[:batch_size], sentences2[:batch_size], batch_size)  # warm-up
    cross = _median_rate(
        lambda: score(sentences1, sentences2, batch_size), len(sentences1), repeats
    )
    pool = sentence_pool(sentences1, sentences2, n_sentences)
    encoder.encode(pool[:batch_size], batch_size=batch_size)  # warm-up
    bi = _median_rate(lambda: encoder.encode(pool, batch_size=batch_size), len(pool), repeats)
    emb = torch.from_numpy(
        encoder.encode(pool, batch_size=batch_size, normalize_embeddings=True)
    ).to(encoder.device)
    # the product computes n^2 entries, but it settles n(n-1)/2 distinct pairs, which is what
    # extrapolate divides by this rate
    cos = _median_rate(lambda: most_similar_pair(emb), pair_count(len(pool)), repeats)
    return CostRates(cross, bi, cos, batch_size, len(sentences1), len(pool), str(encoder.device))


def extrapolate(
    rates: CostRates, sizes: Sequence[int] = (100, 1_000, 10_000, 100_000, 1_000_000)
) -> pd.DataFrame:
    """Seconds to find the most similar pair among ``n`` sentences, for each ``n`` (module docstring)."""
    n = np.asarray(sizes, dtype=np.float64)
    pairs = n * (n - 1) / 2
    cross = pairs / rates.cross_pairs_per_s
    encode = n / rates.bi_sentences_per_s
    cosine = pairs / rates.cosine_pairs_per_s
    return pd.DataFrame(
        {
            "n": n.astype(np.int64),
            "pairs": pairs,
            "cross_encoder_s": cross,
            "bi_encoder_encode_s": encode,
            "bi_encoder_cosine_s": cosine,
            "bi_encoder_s": encode + cosine,
            "speedup": cross / (encode + cosine),
        }
    )


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
    """The published cross-encoder cost claims beside the pair count of the ``n`` they name.

    SBERT's claim (10,000 sentences, about 50 million pairs, 65 hours) is consistent; Taneja et
    al. restate it for 100K sentences, whose pair count is a hundred times larger. The last
    column scales SBERT's 65 hours by the pair count (the same rate per pair).
    """
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
    ax.loglog(
        table["n"],
        table["cross_encoder_s"],
        "o-",
        label="cross-encoder (this run, extrapolated)",
    )
    ax.loglog(
        table["n"],
        table["bi_encoder_s"],
        "s-",
        label="bi-encoder / SBERT (this run, extrapolated)",
    )
    for text, seconds in _SECONDS.items():
        ax.axhline(seconds, color="grey", lw=0.5, ls=":")
        ax.text(table["n"].min(), seconds * 1.15, text, color="grey", fontsize=8)
    if claim:
        ax.loglog(
            [claim["n"]],
            [claim["cross_encoder_hours"] * 3600],
            "r*",
            ms=12,
            label="paper: BERT, 65 h (V100)",
        )
        ax.loglog(
            [claim["n"]], [claim["sbert_seconds"]], "g*", ms=12, label="paper: SBERT, 5 s (V100)"
        )
    ax.set_xlabel("number of sentences n")
    ax.set_ylabel("seconds to find the most similar pair")
    ax.legend(fontsize=8)
    return ax
