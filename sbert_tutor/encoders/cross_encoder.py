r"""``CrossEncoder``: both texts of a pair through one transformer, a classification head on top.

A bi-encoder (:class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder`) embeds each text on its own and
compares the vectors. A cross-encoder reads the pair *together*, as one input
``[CLS] a [SEP] b [SEP]`` with segment ids 0 for ``a`` and 1 for ``b``, so every attention layer
relates the tokens of one text to those of the other. A classification head maps the first
token's representation :math:`h` (through BERT's pooler for BERT models) to ``num_labels`` = L
logits

.. math::

    z = W h + b \in \mathbb{R}^{L}, \qquad \text{score} = a(z),

where :math:`a` is the activation saved with the model: by default :math:`\sigma(z) =
1 / (1 + e^{-z})` for one label (a relevance or similarity score in (0, 1)) and the identity for
several (``apply_softmax=True`` then gives class probabilities). The price of reading pairs
together: nothing can be pre-computed, every pair costs a forward pass, so a cross-encoder
re-ranks a bi-encoder's top hits (:meth:`CrossEncoder.rank`) rather than searching a corpus.

The folders are sentence-transformers' (:mod:`sbert_tutor.encoders.cross_encoder_folder`); ``predict`` and
``rank`` take sentence-transformers' keywords and return what it returns, so code written for one
runs with the other. Training: :func:`sbert_tutor.training.recipe.fit` with a cross-encoder loss
(``ce_bce``, ``ce_mse``).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from sbert_tutor.encoders.cross_encoder_folder import (
    load_activation,
    read_cross_encoder_folder,
    write_cross_encoder_config,
)
from sbert_tutor.encoders.dense import activation_name
from sbert_tutor.encoders.resolve import resolve_model
from sbert_tutor.encoders.sentence_encoder import (
    PROGRESS_THRESHOLD,
    TruncationWarning,
    default_device,
    default_max_seq_length,
    quiet_transformers,
)
from sbert_tutor.runtime import tokenizing
from sbert_tutor.runtime.batching import (
    Bucket,
    batch_positions,
    bucket_width,
    check_bucket,
    pad_ids,
)
from sbert_tutor.runtime.modes import eval_mode
from sbert_tutor.validation import check_device, check_pairs

__all__ = ["CrossEncoder", "NewHeadWarning"]

logger = logging.getLogger(__name__)

Pair = tuple[str, str] | list[str]


class NewHeadWarning(UserWarning):
    """The folder had no trained classification head: a new one was initialised at random."""


def _is_single_pair(inputs: object) -> bool:
    """One ``(text1, text2)`` pair given on its own, rather than a list of pairs."""
    return (
        isinstance(inputs, (tuple, list))
        and len(inputs) == 2
        and all(isinstance(text, str) for text in inputs)
    )


class CrossEncoder(nn.Module):
    """A Hugging Face sequence-classification model that scores text pairs.

    Args:
        model: an ``AutoModelForSequenceClassification`` (its ``config.num_labels`` outputs).
        tokenizer: its tokenizer (a fast tokenizer is strongly recommended).
        max_seq_length: pairs longer than this many tokens are cut, the longer text first (with a
            :class:`~sbert_tutor.encoders.sentence_encoder.TruncationWarning`); ``None`` = the tokenizer's
            ``model_max_length`` capped at the model's position limit (sentence-transformers'
            rule).
        activation_fn: applied to the logits by :meth:`predict`; ``None`` = sigmoid for one
            label, identity for several (sentence-transformers' default).
        name: the name it was loaded by; source: where it was loaded from (in words).

    Attributes:
        training_history: one entry a :func:`~sbert_tutor.training.recipe.fit` run on this model
            (loss, data, steps, final loss), oldest first, as on
            :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder`.

    Example:
        >>> ce = CrossEncoder.from_pretrained("cross-encoder/ms-marco-MiniLM-L6-v2")  # doctest: +SKIP
        >>> ce.predict([("How many people live in Berlin?", "Berlin has 3.5 million people.")])  # doctest: +SKIP
        >>> ce.rank("How many people live in Berlin?", passages, top_k=3)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        max_seq_length: int | None = None,
        activation_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
        name: str | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        limit = getattr(model.config, "max_position_embeddings", None)
        if max_seq_length is None:
            max_seq_length = default_max_seq_length(model, tokenizer)
        elif isinstance(limit, int) and limit > 0:
            max_seq_length = min(int(max_seq_length), limit)
        if int(max_seq_length) < 1:
            raise ValueError(f"max_seq_length must be >= 1, got {max_seq_length}")
        self.max_seq_length = int(max_seq_length)
        self.activation_fn = (
            activation_fn if activation_fn is not None else load_activation(None, self.num_labels)
        )
        self.name = name or getattr(model.config, "_name_or_path", "model")
        self.source = source or "in-memory model"
        self.training_history: list[dict[str, Any]] = []
        self.train(model.training)  # the cross-encoder reports the mode of the model it wraps

    # ------------------------------------------------------------------ loading / saving
    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path,
        num_labels: int | None = None,
        max_seq_length: int | None = None,
        activation_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
        device: str | torch.device | None = None,
    ) -> CrossEncoder:
        """Load a sentence-transformers CrossEncoder folder (any version) or a Hugging Face model.

        Hub names are downloaded when online and read from the hub cache offline; local folders
        and packaged copies are found as for the :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder`
        (:func:`sbert_tutor.encoders.resolve.resolve_model`); ``source`` says which was used. The
        activation and ``max_seq_length`` come from the folder
        (:mod:`sbert_tutor.encoders.cross_encoder_folder`) unless given here.

        A model without a trained classification head (a plain Hugging Face model, a bi-encoder
        folder) gets a new one, initialised at random, with ``num_labels`` outputs (default 1,
        as in sentence-transformers) and a :class:`NewHeadWarning`: train it before trusting its
        scores.

        Raises:
            ValueError: a device this machine does not have.
            sbert_tutor.encoders.st_format.UnsupportedModelError: a folder sbert_tutor cannot run (the
                message says what to do).
        """
        from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

        target = check_device(device) if device is not None else default_device()
        resolved = resolve_model(name_or_path)
        folder = read_cross_encoder_folder(resolved.path)
        path = folder.transformer_path
        with quiet_transformers():
            config = AutoConfig.from_pretrained(path)
            architectures = getattr(config, "architectures", None) or []
            if num_labels is None and not any(
                a.endswith("ForSequenceClassification") for a in architectures
            ):
                num_labels = 1  # sentence-transformers' rule for a model without a head
            kwargs = {} if num_labels is None else {"num_labels": int(num_labels)}
            tokenizer = AutoTokenizer.from_pretrained(path, **folder.tokenizer_kwargs)
            model, info = AutoModelForSequenceClassification.from_pretrained(
                path, output_loading_info=True, **kwargs
            )
        new = sorted(info.get("missing_keys", ()))
        if new:
            warnings.warn(
                f"{resolved.name} has no trained classification head: {', '.join(new)} were "
                f"initialised at random (num_labels={model.config.num_labels}), so its scores mean "
                "nothing yet. Train it first, e.g. sbert_tutor.fit(model, 'ce_bce', pairs).",
                NewHeadWarning,
                stacklevel=2,
            )
        if activation_fn is None:
            activation_fn = load_activation(folder.activation, model.config.num_labels)
        encoder = cls(
            model,
            tokenizer,
            max_seq_length=max_seq_length if max_seq_length is not None else folder.max_seq_length,
            activation_fn=activation_fn,
            name=resolved.name,
            source=resolved.source,
        )
        logger.info(
            "loaded cross-encoder %s from %s (%s; num_labels=%d, activation=%s, max_seq_length=%d)",
            resolved.name,
            resolved.source,
            folder.layout,
            encoder.num_labels,
            type(encoder.activation_fn).__name__,
            encoder.max_seq_length,
        )
        encoder.eval()
        return encoder.to(target)

    def save(self, path: str | Path) -> Path:
        """Write a folder that :meth:`from_pretrained` and sentence-transformers' ``CrossEncoder``
        (2.x-6.x) load with the same scores: the Hugging Face model, the tokenizer with
        ``model_max_length`` = ``max_seq_length``, and the activation in ``config.json``.

        Raises:
            TypeError: the activation is not a ``torch.nn`` module (it could not be named).
        """
        activation_name(self.activation_fn)  # fail before writing anything
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        _set_model_max_length(folder / "tokenizer_config.json", self.max_seq_length)
        write_cross_encoder_config(folder, self.activation_fn)
        return folder

    # ------------------------------------------------------------------ properties
    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def num_labels(self) -> int:
        """Outputs of the classification head (1: one score a pair)."""
        return int(self.model.config.num_labels)

    def describe(self) -> dict[str, Any]:
        """The settings that determine the scores (recorded with every result)."""
        activation = self.activation_fn
        return {
            "name": self.name,
            "source": self.source,
            "kind": "cross-encoder",
            "num_labels": self.num_labels,
            "activation": type(activation).__name__
            if isinstance(activation, nn.Module)
            else repr(activation),
            "max_seq_length": self.max_seq_length,
        }

    # ------------------------------------------------------------------ tokenisation
    @property
    def _left_padding(self) -> bool:
        return getattr(self.tokenizer, "padding_side", "right") == "left"

    @property
    def _uses_segments(self) -> bool:
        """Whether the model takes ``token_type_ids`` (BERT does; RoBERTa ignores, DistilBERT
        refuses them): the tokenizer's ``model_input_names`` says."""
        return "token_type_ids" in getattr(self.tokenizer, "model_input_names", ())

    def pair_ids(
        self, firsts: Sequence[str], seconds: Sequence[str]
    ) -> tuple[list[list[int]], list[list[int]], int]:
        """Tokenise pairs without padding, cut to ``max_seq_length`` (longest text first).

        Returns (ids, segment ids, number of pairs cut). Texts are used as given (no stripping),
        as sentence-transformers' ``CrossEncoder`` does.
        """
        with quiet_transformers(), tokenizing.tokenizer_parallelism():
            ids, types, cut = tokenizing.pair_token_ids(
                self.tokenizer, firsts, seconds, self.max_seq_length
            )
        return ids, types, sum(cut)

    def collate(
        self, ids: Sequence[list[int]], type_ids: Sequence[list[int]], bucket: Bucket = None
    ) -> dict[str, torch.Tensor]:
        """Pad a batch of pairs into ``input_ids``, ``attention_mask`` (and ``token_type_ids``
        when the model takes them), to the longest row or, with ``bucket``, that rounded up
        (:func:`sbert_tutor.runtime.batching.bucket_width`); padding is masked."""
        if not ids:
            raise ValueError("collate needs at least one pair of token ids")
        longest = max(len(x) for x in ids)
        width = bucket_width(longest, check_bucket(bucket), limit=self.max_seq_length)
        left = self._left_padding
        input_ids, mask = pad_ids(ids, width, self.tokenizer.pad_token_id or 0, left=left)
        batch = {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(mask)}
        if self._uses_segments:
            segments, _ = pad_ids(type_ids, width, 0, left=left)
            batch["token_type_ids"] = torch.from_numpy(segments)
        return batch

    def tokenize(self, pairs: Sequence[Pair]) -> dict[str, torch.Tensor]:
        """Tokenise, truncate (warning with a count) and pad ``pairs`` into one batch."""
        firsts, seconds = check_pairs(pairs)
        if not firsts:
            raise ValueError("pairs is empty: pass at least one (text1, text2) pair")
        ids, types, cut = self.pair_ids(firsts, seconds)
        _warn_truncated(cut, len(firsts), self.max_seq_length)
        return self.collate(ids, types)

    # ------------------------------------------------------------------ forward / predict
    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The logits :math:`z` ``[batch, num_labels]``, with gradients (for training)."""
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).logits

    def predict(
        self,
        inputs: Sequence[Pair] | Pair,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        activation_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
        apply_softmax: bool = False,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
    ) -> Any:
        """Score pairs: by default a ``float32`` array ``[n]`` (``[n, num_labels]`` for several
        labels) in input order, :math:`a(z)` for each pair.

        Args:
            inputs: ``(text1, text2)`` pairs of non-empty strings (a clear error names the first
                bad item); one pair on its own gives one score. An empty list gives an empty array.
            batch_size: pairs per forward pass (pairs are sorted by token count, so each batch
                pads little; the scores come back in input order).
            show_progress_bar: a tqdm bar; ``None`` shows one for more than 2,048 pairs.
            activation_fn: instead of the model's ``activation_fn`` for this call
                (``torch.nn.Identity()`` gives the raw logits).
            apply_softmax: with several labels, softmax over each row after the activation.
            convert_to_numpy, convert_to_tensor: the return type, as in sentence-transformers: an
                array; one tensor on the model's device; or (both off) a list of tensors.
        """
        from tqdm.auto import tqdm

        single = _is_single_pair(inputs)
        firsts, seconds = check_pairs([inputs] if single else inputs, "inputs")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        activation = self.activation_fn if activation_fn is None else activation_fn
        n = len(firsts)
        if show_progress_bar is None:
            show_progress_bar = n > PROGRESS_THRESHOLD
        device = self.device
        parts: list[torch.Tensor] = []  # scores in plan order
        order: list[np.ndarray] = []  # input positions, in plan order
        if n:
            ids, types, cut = self.pair_ids(firsts, seconds)
            lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
            plan = batch_positions(np.arange(n), lengths, batch_size, sort=True)
            # every submodule gets its own mode back
            with eval_mode(self), torch.inference_mode():
                bar = tqdm(plan, desc="predict", unit="batch", disable=not show_progress_bar)
                for rows in bar:
                    batch = self.collate([ids[i] for i in rows], [types[i] for i in rows])
                    logits = self(**{k: v.to(device) for k, v in batch.items()})
                    out = activation(logits.float())
                    if self.num_labels == 1 and out.ndim > 1:
                        out = out.squeeze(-1)
                    if apply_softmax and out.ndim > 1:
                        out = torch.softmax(out, dim=1)
                    parts.append(out)
                    order.append(rows)
            _warn_truncated(cut, n, self.max_seq_length)
        if not n:
            result = torch.tensor([], device=device)
        else:  # rows back in input order, on the device
            stacked = torch.cat(parts)
            result = torch.empty_like(stacked)
            result[torch.from_numpy(np.concatenate(order)).to(stacked.device)] = stacked
        if convert_to_tensor:
            value: Any = result
        elif convert_to_numpy:
            value = result.cpu().numpy() if n else np.array([])
        else:
            value = list(result)
        return value[0] if single else value

    def rank(
        self,
        query: str,
        documents: Sequence[str],
        top_k: int | None = None,
        return_documents: bool = False,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        activation_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> list[dict[str, Any]]:
        """Score ``query`` against every document and sort, best first.

        Returns sentence-transformers' list of ``{"corpus_id": i, "score": s}`` (with
        ``"text"`` when ``return_documents``), sorted by score (ties keep document order), the
        first ``top_k`` (all for ``None``).

        Raises:
            ValueError: the model has more than one label (score pairs with :meth:`predict`).
        """
        if self.num_labels != 1:
            raise ValueError(
                f"rank needs one score a pair, but this model has num_labels={self.num_labels}; "
                "use predict(pairs) and pick the label you rank by"
            )
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        if isinstance(documents, str):
            raise TypeError("documents must be a list of strings, got one string; wrap it: [doc]")
        docs = list(documents)
        scores = self.predict(
            [(query, doc) for doc in docs],
            batch_size=batch_size,
            show_progress_bar=show_progress_bar,
            activation_fn=activation_fn,
            convert_to_tensor=True,
        ).tolist()
        results: list[dict[str, Any]] = []
        for i, score in enumerate(scores):
            results.append({"corpus_id": i, "score": score})
            if return_documents:
                results[-1]["text"] = docs[i]
        results.sort(key=lambda r: r["score"], reverse=True)
        return results[:top_k]


def _set_model_max_length(path: Path, max_seq_length: int) -> None:
    """Record ``max_seq_length`` as the saved tokenizer's ``model_max_length`` (where
    sentence-transformers' CrossEncoder reads it)."""
    import json

    cfg = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    cfg["model_max_length"] = int(max_seq_length)
    path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")


def _warn_truncated(truncated: int, total: int, max_seq_length: int) -> None:
    if truncated:
        warnings.warn(
            f"{truncated} of {total} pairs are longer than max_seq_length={max_seq_length} tokens "
            "together and were cut (the longer text first); pass max_seq_length=... to "
            "CrossEncoder.from_pretrained to change the limit",
            TruncationWarning,
            stacklevel=3,
        )
