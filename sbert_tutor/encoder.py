r"""``SentenceEncoder``: a transformer, a pooling and an optional L2 normalisation.

This is the Siamese network of SBERT (book chapter 3): the *same* encoder maps each sentence
:math:`s` to :math:`u = \mathrm{pool}(\mathrm{BERT}(s))` and, with ``normalize=True``,
:math:`u / \lVert u \rVert_2`. Two sentences are compared by :math:`\cos(u, v)`.

``encode`` is built for speed without changing results: it tokenises once, sorts by *token*
count so each batch pads little ("smart batching", SBERT paper section 7), runs under
``torch.inference_mode`` and returns the embeddings in input order.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sbert_tutor.pooling import check_pooling, pool
from sbert_tutor.resolve import resolve_model
from sbert_tutor.st_format import read_st_config, write_st_config
from sbert_tutor.validation import check_sentences

logger = logging.getLogger(__name__)

#: Inputs longer than this many sentences get a progress bar by default.
PROGRESS_THRESHOLD = 2048


class TruncationWarning(UserWarning):
    """Some inputs were longer than ``max_seq_length`` tokens and were cut."""


@contextmanager
def _quiet_transformers():
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def default_device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SentenceEncoder(nn.Module):
    """Hugging Face encoder + pooling (+ L2 normalisation) = sentence embeddings.

    Args:
        model: a Hugging Face encoder (``AutoModel``) returning ``last_hidden_state``.
        tokenizer: its tokenizer (a fast tokenizer is strongly recommended).
        pooling: ``"mean"``, ``"max"`` or ``"cls"`` (:mod:`sbert_tutor.pooling`).
        normalize: L2-normalise the embeddings by default in :meth:`encode` and :meth:`forward`.
        max_seq_length: longer inputs are truncated (with a :class:`TruncationWarning`).
        do_lower_case: lower-case text before tokenising (sentence-transformers' option).
        name: the name it was loaded by; source: where it was loaded from (in words).

    Example:
        >>> enc = SentenceEncoder.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
        >>> u = enc.encode(["A man plays guitar.", "Someone plays an instrument."])  # doctest: +SKIP
        >>> float(u[0] @ u[1])  # cosine, since this model normalises  # doctest: +SKIP
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        pooling: str = "mean",
        normalize: bool = False,
        max_seq_length: int | None = None,
        do_lower_case: bool = False,
        name: str | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = check_pooling(pooling)
        self.normalize = bool(normalize)
        limit = getattr(model.config, "max_position_embeddings", 512)
        self.max_seq_length = int(min(max_seq_length or limit, limit))
        self.do_lower_case = do_lower_case
        self.name = name or getattr(model.config, "_name_or_path", "model")
        self.source = source or "in-memory model"

    # ------------------------------------------------------------------ loading / saving
    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path,
        pooling: str | None = None,
        max_seq_length: int | None = None,
        normalize: bool | None = None,
        device: str | torch.device | None = None,
    ) -> SentenceEncoder:
        """Load a plain Hugging Face model or a sentence-transformers folder.

        A sentence-transformers folder brings its own pooling, normalisation and
        ``max_seq_length``; arguments given here override them. A plain Hugging Face model
        defaults to mean pooling, no normalisation, and its position limit (512 for BERT).
        Where the model came from (local, models folder, hub, packaged copy) is logged and kept
        in :attr:`source`; see :func:`sbert_tutor.resolve.resolve_model`.
        """
        from transformers import AutoModel, AutoTokenizer

        resolved = resolve_model(name_or_path)
        st = read_st_config(resolved.path)
        folder = st.transformer_path if st else resolved.path
        with _quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(folder)
            model = AutoModel.from_pretrained(folder)
        if pooling is None:
            pooling = (st.pooling if st else None) or "mean"
        if normalize is None:
            normalize = st.normalize if st else False
        if max_seq_length is None and st is not None:
            max_seq_length = st.max_seq_length
        encoder = cls(
            model,
            tokenizer,
            pooling=pooling,
            normalize=normalize,
            max_seq_length=max_seq_length,
            do_lower_case=st.do_lower_case if st else False,
            name=resolved.name,
            source=resolved.source,
        )
        logger.info(
            "loaded %s from %s (pooling=%s, normalize=%s)",
            resolved.name,
            resolved.source,
            pooling,
            normalize,
        )
        encoder.eval()
        return encoder.to(device or default_device())

    def save(self, path: str | Path) -> Path:
        """Write a folder that :meth:`from_pretrained` and sentence-transformers both read.

        Pooling and normalisation are saved with the weights, so exporting a model never
        silently loses them.
        """
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        write_st_config(
            folder,
            dim=self.embedding_dim,
            pooling=self.pooling,
            normalize=self.normalize,
            max_seq_length=self.max_seq_length,
            do_lower_case=self.do_lower_case,
        )
        (folder / "sbert_tutor.json").write_text(json.dumps(self.describe(), indent=2))
        return folder

    def with_pooling(self, pooling: str, normalize: bool | None = None) -> SentenceEncoder:
        """A new encoder sharing this one's transformer and tokenizer, with another pooling."""
        return SentenceEncoder(
            self.model,
            self.tokenizer,
            pooling=pooling,
            normalize=self.normalize if normalize is None else normalize,
            max_seq_length=self.max_seq_length,
            do_lower_case=self.do_lower_case,
            name=self.name,
            source=self.source,
        )

    # ------------------------------------------------------------------ properties
    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def embedding_dim(self) -> int:
        return int(self.model.config.hidden_size)

    def describe(self) -> dict[str, Any]:
        """The settings that determine the embeddings (recorded with every result)."""
        return {
            "name": self.name,
            "source": self.source,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "max_seq_length": self.max_seq_length,
            "embedding_dim": self.embedding_dim,
        }

    # ------------------------------------------------------------------ tokenisation
    def token_ids(self, sentences: Sequence[str]) -> tuple[list[list[int]], int]:
        """Tokenise without padding; cut to ``max_seq_length``. Returns (ids, number truncated)."""
        texts = [s.strip() for s in sentences]
        if self.do_lower_case:
            texts = [s.lower() for s in texts]
        with _quiet_transformers():
            encoded = self.tokenizer(texts, truncation=True, max_length=self.max_seq_length)
        ids = encoded["input_ids"]
        if encoded.encodings is not None:  # fast tokenizer: the Rust side records what it cut
            truncated = sum(bool(e.overflowing) for e in encoded.encodings)
        else:  # slow tokenizer: count without truncation
            with _quiet_transformers():
                full = self.tokenizer(texts, truncation=False)["input_ids"]
            truncated = sum(len(x) > self.max_seq_length for x in full)
        return ids, truncated

    def collate(self, ids: Sequence[list[int]]) -> dict[str, torch.Tensor]:
        """Pad a batch of token-id lists into ``input_ids`` and ``attention_mask`` tensors."""
        width = max(len(x) for x in ids)
        pad_id = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = torch.as_tensor(x, dtype=torch.long)
            attention_mask[row, : len(x)] = 1
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    def tokenize(self, sentences: Sequence[str]) -> dict[str, torch.Tensor]:
        """Tokenise, truncate (warning with a count) and pad ``sentences`` into one batch."""
        items = check_sentences(sentences)
        ids, truncated = self.token_ids(items)
        _warn_truncated(truncated, len(items), self.max_seq_length)
        return self.collate(ids)

    # ------------------------------------------------------------------ forward / encode
    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kwargs: Any
    ) -> torch.Tensor:
        """Embeddings ``[batch, d]`` with gradients (for training); normalised if :attr:`normalize`."""
        hidden = self.model(
            input_ids=input_ids, attention_mask=attention_mask, **kwargs
        ).last_hidden_state
        emb = pool(hidden, attention_mask, self.pooling)
        return F.normalize(emb, p=2, dim=-1) if self.normalize else emb

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        normalize: bool | None = None,
        show_progress: bool | None = None,
        device: str | torch.device | None = None,
        sort_by_length: bool = True,
    ) -> np.ndarray:
        """Embed sentences: ``float32`` array ``[n, d]`` in input order.

        Args:
            sentences: non-empty strings (a clear error names the first bad item).
            batch_size: sentences per forward pass.
            normalize: L2-normalise; ``None`` uses the model's own setting.
            show_progress: tqdm bar; ``None`` shows one for more than 2,048 sentences.
            device: where to run; ``None`` keeps the model's device.
            sort_by_length: smart batching (sort by token count); ``False`` keeps input order,
                which only exists to measure what sorting buys (book: computational efficiency).
        """
        from tqdm.auto import tqdm

        items = check_sentences(sentences)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        normalize = self.normalize if normalize is None else normalize
        if device is not None:
            self.to(device)
        target = self.device
        ids, truncated = self.token_ids(items)
        _warn_truncated(truncated, len(items), self.max_seq_length)
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        order = np.argsort(-lengths, kind="stable") if sort_by_length else np.arange(len(ids))
        out = np.empty((len(items), self.embedding_dim), dtype=np.float32)
        if show_progress is None:
            show_progress = len(items) > PROGRESS_THRESHOLD
        was_training = self.training
        self.eval()
        pin = target.type == "cuda"
        with torch.inference_mode():
            starts = range(0, len(items), batch_size)
            for start in tqdm(starts, desc="encode", unit="batch", disable=not show_progress):
                index = order[start : start + batch_size]
                batch = self.collate([ids[i] for i in index])
                if pin:
                    batch = {k: v.pin_memory() for k, v in batch.items()}
                batch = {k: v.to(target, non_blocking=pin) for k, v in batch.items()}
                hidden = self.model(**batch).last_hidden_state
                emb = pool(hidden, batch["attention_mask"], self.pooling).float()
                if normalize:
                    emb = F.normalize(emb, p=2, dim=-1)
                out[index] = emb.cpu().numpy()
        self.train(was_training)
        return out


def _warn_truncated(truncated: int, total: int, max_seq_length: int) -> None:
    if truncated:
        warnings.warn(
            f"{truncated} of {total} inputs are longer than max_seq_length={max_seq_length} tokens "
            "and were truncated; pass max_seq_length=... to from_pretrained to change the limit",
            TruncationWarning,
            stacklevel=3,
        )
