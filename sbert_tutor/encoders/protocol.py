"""What the library asks of a model that embeds text, and encoding each distinct text once.

:class:`Encoder` is the one method every evaluator and analysis calls: ``encode(texts,
batch_size=..., show_progress_bar=...)`` -> ``[n, d]`` array, with sentence-transformers' keyword
names. :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder` is one, and so is a sentence-transformers
``SentenceTransformer``; so is a thin wrapper around any other model (a function that returns an
array per list of texts is enough to wrap). ``encode_texts`` is how the library calls it.

:func:`encode_unique` is the pattern behind pair scoring, triplet embeddings and fixed-embedding
analyses: texts repeat (a premise with three hypotheses, a query with ten passages), so each
distinct text is encoded once and the rows are handed back aligned with the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import numpy as np

__all__ = ["Encoder", "encode_unique"]


class Encoder(Protocol):
    """Anything with ``encode(texts, batch_size=..., show_progress_bar=...) -> [n, d] array``.

    Evaluators also record ``describe()`` (a dict of the model's settings) when the encoder
    has one.
    """

    def encode(
        self,
        sentences: Sequence[str],
        *,
        batch_size: int = ...,
        show_progress_bar: bool | None = ...,
    ) -> np.ndarray: ...


def encode_texts(
    encoder: Encoder, texts: Sequence[str], *, batch_size: int, show_progress_bar: bool | None
) -> Any:
    """``encoder.encode(texts, batch_size=batch_size, show_progress_bar=show_progress_bar)``:
    the one call every evaluator makes, in sentence-transformers' keywords."""
    return encoder.encode(texts, batch_size=batch_size, show_progress_bar=show_progress_bar)


def encode_unique(
    encoder: Encoder,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    show_progress_bar: bool | None = False,
    order: Literal["first", "sorted"] = "first",
) -> np.ndarray:
    """Embeddings of ``texts``, row ``i`` for ``texts[i]``, encoding each distinct text once.

    Args:
        encoder: an :class:`Encoder`.
        texts: texts with repeats, e.g. ``[*sentences1, *sentences2]`` of STS pairs; split the
            result back with ``emb[:n], emb[n:]`` or ``emb.reshape(n, k, -1)``.
        batch_size, show_progress_bar: passed to ``encoder.encode`` (``show_progress_bar`` as
            ``show_progress_bar``, through ``encode_texts``).
        order: the order the distinct texts are encoded in: ``"first"`` appearance or
            ``"sorted"``. With smart batching it decides which texts share a padded batch, which
            can move an embedding by about 1e-7 (float32 rounding); results stay reproducible
            for one order.

    Returns:
        ``[len(texts), d]``, the encoder's dtype and normalisation.

    Example:
        >>> class Lengths:
        ...     def encode(self, sentences, *, batch_size=64, show_progress_bar=None):
        ...         return np.array([[len(s)] for s in sentences], dtype=np.float32)
        >>> encode_unique(Lengths(), ["ab", "c", "ab"]).ravel().tolist()
        [2.0, 1.0, 2.0]
    """
    texts = list(texts)
    if order == "first":
        distinct = list(dict.fromkeys(texts))
    elif order == "sorted":
        distinct = sorted(set(texts))
    else:
        raise ValueError(f"order must be 'first' or 'sorted', got {order!r}")
    position = {text: i for i, text in enumerate(distinct)}
    emb = np.asarray(
        encode_texts(encoder, distinct, batch_size=batch_size, show_progress_bar=show_progress_bar)
    )
    return emb[[position[text] for text in texts]]
