"""Periodic evaluation during training: Spearman/Pearson of cosine similarity on an STS set.

``STSEvaluator("stsb", "dev")(encoder)`` returns ``{"stsb_dev_spearman": ..., "stsb_dev_pearson":
...}`` (x100, as everywhere in the book). The data is loaded once; each call encodes the distinct
sentences once (:func:`sbert_tutor.evaluation.sts.predict_similarity`). A
:class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder` has no embeddings: its similarity is the score
it predicts for each pair.
"""

from __future__ import annotations

from pathlib import Path

from sbert_tutor.data.sts import STSData, load_sts
from sbert_tutor.encoders.cross_encoder import CrossEncoder
from sbert_tutor.encoders.protocol import Encoder
from sbert_tutor.evaluation.sts import correlations, predict_similarity

__all__ = ["STSEvaluator"]


class STSEvaluator:
    """Callable ``encoder -> {metric: value}`` on one STS task.

    Args:
        task: an STS task name (``"stsb"``, ``"sickr"``, ``"sts12"`` ...); ignored when ``data``
            is given.
        split: ``"dev"`` by default (never tune on test).
        data: your own :class:`~sbert_tutor.data.STSData` instead.
        batch_size: sentences per forward pass.
        name: the metrics' prefix (default ``"<task>_<split>"``, e.g. ``stsb_dev``).
    """

    def __init__(
        self,
        task: str = "stsb",
        split: str = "dev",
        data: STSData | None = None,
        batch_size: int = 64,
        name: str | None = None,
    ) -> None:
        self.data = data if data is not None else load_sts(task, split)
        self.batch_size = batch_size
        self.prefix = name or f"{self.data.name}_{self.data.split}"

    @property
    def primary_metric(self) -> str:
        """The key of the main number (Spearman), as sentence-transformers' evaluators name it."""
        return f"{self.prefix}_spearman"

    @property
    def files(self) -> tuple[Path, ...]:
        return self.data.files

    def __call__(self, encoder: Encoder | CrossEncoder) -> dict[str, float]:
        if isinstance(encoder, CrossEncoder):
            pairs = list(zip(self.data.sentences1, self.data.sentences2, strict=True))
            predicted = encoder.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        else:
            predicted = predict_similarity(
                encoder, self.data, batch_size=self.batch_size, show_progress_bar=False
            )
        spearman, pearson = correlations(predicted, self.data.scores)
        return {f"{self.prefix}_spearman": spearman, f"{self.prefix}_pearson": pearson}
