r"""A weak, cheap start model for the quick profile's training chapters (6 to 12), and the
start models of every profile.

``all-MiniLM-L6-v2`` was already trained on about a billion sentence pairs with the very losses
chapters 6-12 teach, so a few dozen steps barely move it; the papers' ``bert-base-uncased`` is
not available to the quick profile (no hub) and far too slow on a CPU. :class:`WeakStart` keeps
the token embeddings and the **first** ``layers`` transformer layers of ``all-MiniLM-L6-v2``:
its mean-pooled embeddings are close to averaged token embeddings (the "avg. embeddings" row of
SBERT's Table 1) with a little context mixed in, so it scores far below the full model on STSb
and has room to learn, and one layer trains several times faster a step than six. Its layer and
embeddings are still MiniLM's (distilled, then trained contrastively): it is *not* BERT-base,
and the chapters say so next to every table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the encoder (torch) loads only when a model does
    from sbert_tutor.encoders.cross_encoder import CrossEncoder
    from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

__all__ = [
    "CrossEncoderStart",
    "MINILM",
    "Start",
    "WeakStart",
    "load_start",
    "start_label",
    "start_name",
    "start_pooling",
]

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class WeakStart:
    """``base`` cut to its first ``layers`` transformer layers (embeddings, pooling and
    normalisation kept).

    Example:
        >>> WeakStart(layers=1).label
        'all-MiniLM-L6-v2, first 1 layer'
    """

    layers: int = 1
    base: str = MINILM

    def __post_init__(self) -> None:
        if isinstance(self.layers, bool) or int(self.layers) != self.layers or self.layers < 0:
            raise ValueError(f"WeakStart: layers must be an integer >= 0, got {self.layers!r}")

    @property
    def label(self) -> str:
        """The start model in words (used as its name in every log and table)."""
        short = self.base.rsplit("/", 1)[-1]
        unit = "layer" if self.layers == 1 else "layers"
        return f"{short}, first {self.layers} {unit}"

    def load(self) -> SentenceEncoder:
        """A fresh copy: ``base`` loaded, then every layer from ``layers`` on removed."""
        from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

        encoder = SentenceEncoder.from_pretrained(self.base)
        _cut(encoder.model, self)
        encoder.name = self.label
        return encoder


def _cut(model: Any, start: WeakStart) -> None:
    """Keep the first ``start.layers`` transformer layers of a Hugging Face ``model``, in place."""
    import torch.nn as nn

    stack = model.base_model.encoder.layer
    if start.layers > len(stack):
        raise ValueError(
            f"WeakStart: {start.base} has {len(stack)} transformer layers, cannot keep "
            f"{start.layers}; choose layers <= {len(stack)}"
        )
    model.base_model.encoder.layer = nn.ModuleList(list(stack)[: start.layers])
    model.config.num_hidden_layers = start.layers


def load_start(model: Any) -> SentenceEncoder:
    """A fresh encoder from a hub name / folder, a :class:`WeakStart` or any start with a
    ``load()`` (e.g. :class:`Start`, a name with its pooling); an encoder
    is returned as it is."""
    from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

    if isinstance(model, SentenceEncoder):
        return model
    if hasattr(model, "load"):
        return model.load()
    return SentenceEncoder.from_pretrained(model)


def start_label(model: Any) -> str:
    """How a start model is named in the chapters' tables (its ``label`` when it has one)."""
    label = getattr(model, "label", None)
    return label if isinstance(label, str) else str(model).rsplit("/", 1)[-1]


@dataclass(frozen=True)
class CrossEncoderStart:
    """A start model read as a cross-encoder: its transformer (cut like a
    :class:`~sbert_tutor.book.weak_start.WeakStart` when it is one) with a new one-logit head,
    drawn with ``seed``. ``load()`` and ``label`` make it a start of
    :func:`~sbert_tutor.book.seeds.seeded_variants`, like a bi-encoder's start."""

    start: str | Start | WeakStart
    seed: int = 0

    @property
    def label(self) -> str:
        return f"{start_label(self.start)}, as a cross-encoder (new one-logit head)"

    def load(self) -> CrossEncoder:
        import warnings

        import torch

        from sbert_tutor.encoders.cross_encoder import CrossEncoder, NewHeadWarning

        torch.manual_seed(self.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NewHeadWarning)  # the new head is the point
            ce = CrossEncoder.from_pretrained(start_name(self.start), num_labels=1)
        if isinstance(self.start, WeakStart):
            _cut(ce.model, self.start)
        ce.name = self.label
        return ce


@dataclass(frozen=True)
class Start:
    """A start model by name with the pooling put on it (``None``: the model's own; a plain
    Hugging Face model then gets mean pooling).

    Example:
        >>> Start("bert-base-uncased", "cls").label
        'bert-base-uncased, cls pooling'
    """

    name: str
    pooling: str | None = None

    @property
    def label(self) -> str:
        """The start model in words (its name in every log and table)."""
        short = self.name.rsplit("/", 1)[-1]
        return f"{short}, {self.pooling} pooling" if self.pooling else short

    def load(self) -> SentenceEncoder:
        """A fresh encoder: ``name`` with ``pooling``."""
        from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

        return SentenceEncoder.from_pretrained(self.name, pooling=self.pooling)


def start_name(start: str | Start | WeakStart) -> str:
    """The hub name behind a start model (a :class:`WeakStart`'s base model)."""
    if isinstance(start, WeakStart):
        return start.base
    return start.name if isinstance(start, Start) else str(start)


def start_pooling(start: str | Start | WeakStart) -> str:
    """The pooling a start model's runs use: :class:`Start`'s, else ``"mean"`` (a plain hub
    model's default, and all-MiniLM-L6-v2's own)."""
    return (start.pooling if isinstance(start, Start) else None) or "mean"
