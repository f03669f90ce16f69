r"""Looking inside an embedding space (book chapter 3).

*Anisotropy* (Ethayarajh, 2019): if embeddings occupy a narrow cone, even unrelated sentences have
a high cosine. We estimate it as the mean cosine of random sentence pairs,

.. math:: A = \mathbb{E}_{i \ne j}\left[\cos(u_i, u_j)\right],

over ``n_pairs`` pairs :math:`(i, j)` drawn uniformly with :math:`i \ne j`. An isotropic space gives
:math:`A \approx 0`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.similarity import normalize_rows


def random_pairs(n: int, n_pairs: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` index pairs ``(i, j)`` with ``i != j``, uniform over ``range(n)``."""
    if n < 2:
        raise ValueError("need at least 2 embeddings to form a pair")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=n_pairs)
    j = (i + rng.integers(1, n, size=n_pairs)) % n  # never equal to i
    return i, j


def random_pair_cosines(embeddings: np.ndarray, n_pairs: int = 2000, seed: int = 0) -> np.ndarray:
    """Cosines of ``n_pairs`` random pairs of rows (the sample behind :func:`anisotropy`)."""
    unit = normalize_rows(embeddings)
    i, j = random_pairs(len(unit), n_pairs, seed)
    return np.sum(unit[i] * unit[j], axis=1)


def anisotropy(embeddings: np.ndarray, n_pairs: int = 2000, seed: int = 0) -> float:
    """Mean cosine of random pairs (module docstring)."""
    return float(random_pair_cosines(embeddings, n_pairs, seed).mean())


def compare_pooling(
    encoder: Any,
    modes: Sequence[str] = ("mean", "max", "cls"),
    task: str = "stsb",
    split: str = "test",
    n_pairs: int = 2000,
) -> pd.DataFrame:
    """The same weights with each pooling: STS Spearman/Pearson and anisotropy, one row a mode.

    The encoder's transformer is shared; only the pooling step changes.
    """
    from sbert_tutor.data import load_sts
    from sbert_tutor.evaluation.sts import predict_similarity, score_pairs

    data = load_sts(task, split)
    sentences = list(dict.fromkeys([*data.sentences1, *data.sentences2]))
    rows = []
    for mode in modes:
        variant = encoder.with_pooling(mode)
        block = score_pairs(data, predict_similarity(variant, data))
        emb = variant.encode(sentences, normalize=False)
        rows.append(
            {
                "pooling": mode,
                "spearman": block["spearman"]["all"],
                "pearson": block["pearson"]["all"],
                "anisotropy": anisotropy(emb, n_pairs),
            }
        )
    table = pd.DataFrame(rows)
    table.attrs["note"] = (
        f"{task}/{split}, {len(data)} pairs, Spearman/Pearson x100; same weights, pooling varies"
    )
    table.attrs["files"] = [str(f) for f in data.files]
    return table


def cosine_groups(
    encoder: Any,
    data: Any,
    n_random: int = 2000,
    high: float = 4.0,
    low: float = 1.0,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Cosines of gold-similar pairs (score >= ``high``), gold-dissimilar pairs (<= ``low``) and random pairs.

    If the space is anisotropic, even the random pairs sit far from 0.
    """
    from sbert_tutor.evaluation.sts import predict_similarity

    predicted = predict_similarity(encoder, data)
    sentences = list(dict.fromkeys([*data.sentences1, *data.sentences2]))
    return {
        f"gold >= {high:g}": predicted[data.scores >= high],
        f"gold <= {low:g}": predicted[data.scores <= low],
        "random pairs": random_pair_cosines(encoder.encode(sentences), n_random, seed),
    }
