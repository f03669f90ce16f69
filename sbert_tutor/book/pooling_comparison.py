r"""The same weights, three poolings: STS correlation and anisotropy side by side (chapter 3).

:func:`compare_pooling` swaps only the pooling step of one encoder
(:meth:`~sbert_tutor.encoder.SentenceEncoder.with_pooling`) and reports STS Spearman/Pearson and
the anisotropy (:func:`sbert_tutor.analysis.anisotropy`) of each; :func:`cosine_groups` collects
the cosines of gold-similar, gold-dissimilar and random pairs for a histogram.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sbert_tutor.analysis import anisotropy, random_pair_cosines
from sbert_tutor.data import STSData, load_sts
from sbert_tutor.embedding import Encoder
from sbert_tutor.encoder import SentenceEncoder
from sbert_tutor.evaluation.sts import predict_similarity, score_pairs
from sbert_tutor.provenance import provenance
from sbert_tutor.results import Result


def compare_pooling(
    encoder: SentenceEncoder,
    modes: Sequence[str] = ("mean", "max", "cls"),
    task: str = "stsb",
    split: str = "test",
    n_pairs: int = 2000,
) -> Result:
    """The same weights with each pooling: STS Spearman/Pearson and anisotropy, one row a mode.

    The encoder's transformer is shared; only the pooling step changes. The result's
    ``provenance`` lists the data files read.
    """
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
    return Result(
        table=pd.DataFrame(rows),
        note=f"{task}/{split}, {len(data)} pairs, Spearman/Pearson x100; same weights, pooling "
        "varies",
        provenance=provenance(data_files=data.files, model=encoder.describe()),
    )


def cosine_groups(
    encoder: Encoder,
    data: STSData,
    n_random: int = 2000,
    high: float = 4.0,
    low: float = 1.0,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Cosines of gold-similar pairs (score >= ``high``), gold-dissimilar pairs (<= ``low``) and random pairs.

    If the space is anisotropic, even the random pairs sit far from 0.
    """
    predicted = predict_similarity(encoder, data)
    sentences = list(dict.fromkeys([*data.sentences1, *data.sentences2]))
    return {
        f"gold >= {high:g}": predicted[data.scores >= high],
        f"gold <= {low:g}": predicted[data.scores <= low],
        "random pairs": random_pair_cosines(encoder.encode(sentences), n_random, seed),
    }
