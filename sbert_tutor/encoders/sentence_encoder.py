r"""``SentenceEncoder``: a transformer, a pooling and an optional L2 normalisation.

This is the Siamese network of SBERT (book chapter 3): the *same* encoder maps each sentence
:math:`s` to :math:`u = \mathrm{pool}(\mathrm{BERT}(s))` and, with ``normalize=True``,
:math:`u / \lVert u \rVert_2`. Two sentences are compared by :math:`\cos(u, v)`. Models published
with :mod:`~sbert_tutor.encoders.dense` layers after the pooling (LaBSE, sentence-T5, ...) run them too.

``encode`` is built for speed without changing results: it tokenises once, sorts by *token*
count so each batch pads little ("smart batching", SBERT paper section 7), runs without
gradients (:func:`~sbert_tutor.runtime.precision.inference_context`) and returns the embeddings in input
order. Its keywords are sentence-transformers' ``encode``'s, with the same meaning
(``convert_to_tensor``, ``normalize_embeddings``, ``show_progress_bar``, ``precision``,
``prompt_name``, ...), ``similarity`` / ``similarity_pairwise`` compute its
``similarity_fn_name``, and ``encode_query`` / ``encode_document``, ``get_embedding_dimension``,
``truncate_dim`` and ``model_card_data`` are there too, so code written for one runs with the
other, sentence-transformers' own evaluators included. An empty string is embedded as
sentence-transformers embeds it, with one :class:`EmptyTextWarning` counting them.
"""

from __future__ import annotations

import functools
import json
import logging
import warnings
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sbert_tutor.encoders.dense import Dense
from sbert_tutor.encoders.model_card import model_card
from sbert_tutor.encoders.pooling import check_pooling, pool, pooled_dim
from sbert_tutor.encoders.resolve import resolve_model
from sbert_tutor.encoders.st_format import read_st_config, write_st_config
from sbert_tutor.runtime import tokenizing
from sbert_tutor.runtime.batching import (
    CHUNK_BATCHES,
    Batch,
    Bucket,
    DeviceSink,
    HostSink,
    Prefetcher,
    batch_positions,
    bucket_width,
    check_bucket,
    chunk_positions,
    pad_ids,
    resolve_bucket,
    thread_init,
)
from sbert_tutor.runtime.modes import eval_mode
from sbert_tutor.runtime.precision import (
    autocast_dtype,
    compute_context,
    full_precision,
    inference_context,
    resolve_compute_dtype,
)
from sbert_tutor.runtime.tokenizing import tokenizer_parallelism
from sbert_tutor.search.quantize import check_precision, quantize_embeddings
from sbert_tutor.similarity import (
    as_matrix,
    check_similarity_fn_name,
    paired_similarity,
    similarity_matrix,
)
from sbert_tutor.validation import check_device, check_sentences, count_blank

logger = logging.getLogger(__name__)

#: Inputs longer than this many sentences get a progress bar by default.
PROGRESS_THRESHOLD = 2048
#: Encoder-decoder families whose encoder alone makes the token embeddings (as in
#: sentence-transformers): model_type -> transformers class.
_ENCODER_ONLY_CLASSES = {
    "t5": "T5EncoderModel",
    "mt5": "MT5EncoderModel",
    "umt5": "UMT5EncoderModel",
}
_OUTPUT_VALUES = ("sentence_embedding", "token_embeddings")


class TruncationWarning(UserWarning):
    """Some inputs were longer than ``max_seq_length`` tokens and were cut."""


class EmptyTextWarning(UserWarning):
    """Some inputs of :meth:`SentenceEncoder.encode` were empty (or only spaces) and were embedded
    as sentence-transformers embeds them: the special tokens alone."""


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' logging at error level and its progress bars off, restored afterwards."""
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


def _position_limit(config: Any) -> int | None:
    """The model's position limit (``max_position_embeddings``), ``None`` when it has none."""
    limit = getattr(config, "max_position_embeddings", None)
    return int(limit) if isinstance(limit, int) and limit > 0 else None


def default_max_seq_length(model: nn.Module, tokenizer: Any) -> int:
    """sentence-transformers' rule: the tokenizer's ``model_max_length``, capped at the model's
    ``max_position_embeddings``; 512 when neither says anything."""
    candidates = [_position_limit(model.config)]
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_limit, int) and 0 < tok_limit < 10**9:  # "no limit" is stored as 1e30
        candidates.append(tok_limit)
    known = [c for c in candidates if c]
    return min(known) if known else 512


def _load_transformer(folder: str | Path) -> nn.Module:
    """``AutoModel`` for an encoder; the encoder half of T5-family models (as sentence-transformers)."""
    import transformers
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(folder)
    class_name = _ENCODER_ONLY_CLASSES.get(getattr(config, "model_type", ""))
    cls = getattr(transformers, class_name) if class_name else AutoModel
    return cls.from_pretrained(folder)


#: Files a Hugging Face tokenizer is read from (one of them must be in a model folder).
_TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


def check_tokenizer(tokenizer: Any, model: nn.Module, folder: str | Path) -> None:
    """Refuse a tokenizer that cannot feed ``model``: one with fewer than half the tokens of the
    model's vocabulary (``vocab_size`` in ``config.json``).

    That is what a folder without its tokenizer files loads (transformers then builds a tokenizer
    of 5 special tokens, and every word becomes ``[UNK]``), or one whose tokenizer belongs to
    another model. A tokenizer a little smaller than the vocabulary (rows padded to a multiple of
    8 or 64) is normal and passes. Raises ``ValueError`` naming the folder and the files.
    """
    vocab_size = getattr(getattr(model, "config", None), "vocab_size", None)
    if not isinstance(vocab_size, int) or vocab_size <= 0:
        return
    size = len(tokenizer)
    if size * 2 >= vocab_size:
        return
    here = Path(folder)
    present = [name for name in _TOKENIZER_FILES if (here / name).is_file()]
    why = (
        f"no tokenizer file is in {here} (none of {', '.join(_TOKENIZER_FILES)})"
        if not present
        else f"its tokenizer files ({', '.join(present)}) do not belong to this model"
    )
    raise ValueError(
        f"{here}: the tokenizer has {size} tokens but {here / 'config.json'} gives the model "
        f"vocab_size={vocab_size}: {why}. Every word would become an unknown token and the "
        "embeddings would be meaningless. Copy the whole model folder again, tokenizer files "
        "included (or save the tokenizer with the model: tokenizer.save_pretrained(folder))."
    )


class SentenceEncoder(nn.Module):
    """Hugging Face encoder + pooling (+ dense layers) (+ L2 normalisation) = sentence embeddings.

    Args:
        model: a Hugging Face encoder (``AutoModel``) returning ``last_hidden_state``.
        tokenizer: its tokenizer (a fast tokenizer is strongly recommended).
        pooling: ``"mean"``, ``"max"``, ``"cls"`` or another mode of :mod:`sbert_tutor.encoders.pooling`
            (``"cls+mean"`` concatenates).
        normalize: L2-normalise the embeddings by default in :meth:`encode` and :meth:`forward`.
        max_seq_length: longer inputs are truncated (with a :class:`TruncationWarning`); ``None``
            = the tokenizer's ``model_max_length`` capped at the model's position limit.
        do_lower_case: lower-case text before tokenising (sentence-transformers' option).
        name: the name it was loaded by; source: where it was loaded from (in words).
        dense: :class:`~sbert_tutor.encoders.dense.Dense` layers applied after the pooling, in order.
        prompts: named instruction prompts (``{"query": "query: "}``) for ``encode(prompt_name=)``.
        default_prompt_name: the prompt :meth:`encode` prepends when none is given.
        include_prompt: ``False`` leaves the prompt's tokens out of the pooling.
        compute_dtype: the arithmetic :meth:`encode` runs in unless told otherwise: ``"auto"``,
            ``"fp32"``, ``"fp16"``, ``"bf16"`` (:mod:`sbert_tutor.runtime.precision`); ``None`` (default): the
            weights' own dtype, fp32 as loaded.
        truncate_dim: keep the first ``k`` dimensions in every :meth:`encode` that does not say
            otherwise (sentence-transformers' ``truncate_dim``, for Matryoshka models).
        similarity_fn_name: ``"cosine"`` (default), ``"dot"``, ``"euclidean"`` or
            ``"manhattan"``: what :meth:`similarity` and :meth:`similarity_pairwise` compute and
            what sentence-transformers' evaluators score with.

    Attributes:
        training_history: one entry a :func:`~sbert_tutor.training.recipe.fit` run on this
            encoder, oldest first (its loss, data, settings, final loss and evaluations, without
            the loss curve); :meth:`save` writes it into the model card.
        model_card_data: an :class:`EvaluationLog`; sentence-transformers' evaluators, called on
            this encoder, record their metrics there (``model.model_card_data.
            set_evaluation_metrics``), as they do on a ``SentenceTransformer``.
        cudnn_attention: ``None`` (default) leaves cuDNN's attention kernel out of :meth:`encode`
            on CUDA under fp16/bf16, where it plans again for every new batch shape
            (:mod:`sbert_tutor.runtime.precision`); ``True`` allows it (torch's own choice); ``False``
            leaves it out everywhere.

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
        dense: Sequence[nn.Module] = (),
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
        include_prompt: bool = True,
        compute_dtype: str | torch.dtype | None = None,
        truncate_dim: int | None = None,
        similarity_fn_name: str | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = check_pooling(pooling)
        self.normalize = bool(normalize)
        self.dense = nn.ModuleList(dense)
        limit = _position_limit(model.config)
        if max_seq_length is None:
            max_seq_length = default_max_seq_length(model, tokenizer)
        self.max_seq_length = int(min(max_seq_length, limit) if limit else max_seq_length)
        self.do_lower_case = do_lower_case
        self.name = name or getattr(model.config, "_name_or_path", "model")
        self.source = source or "in-memory model"
        self.prompts = dict(prompts or {})
        if default_prompt_name is not None and default_prompt_name not in self.prompts:
            raise ValueError(
                f"default_prompt_name {default_prompt_name!r} is not one of the prompts "
                f"{list(self.prompts)}"
            )
        self.default_prompt_name = default_prompt_name
        self.include_prompt = bool(include_prompt)
        resolve_compute_dtype(compute_dtype, "cpu")  # a bad name fails here, not at encode time
        self.compute_dtype = compute_dtype
        self.cudnn_attention: bool | None = None
        self.training_history: list[dict[str, Any]] = []
        self.model_card_data = EvaluationLog()
        self._check_dense_sizes()
        self.train(model.training)  # the encoder reports the mode of the model it wraps
        if truncate_dim is not None and not 0 < truncate_dim <= self.embedding_dim:
            raise ValueError(
                f"truncate_dim must be between 1 and the embedding size {self.embedding_dim}, "
                f"got {truncate_dim}"
            )
        self.truncate_dim = truncate_dim
        self._similarity_fn_name: str | None = None
        if similarity_fn_name is not None:
            self.similarity_fn_name = similarity_fn_name

    # ------------------------------------------------------------------ loading / saving
    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path,
        pooling: str | None = None,
        max_seq_length: int | None = None,
        normalize: bool | None = None,
        device: str | torch.device | None = None,
        compute_dtype: str | torch.dtype | None = None,
        *,
        revision: str | None = None,
        cache_folder: str | Path | None = None,
        truncate_dim: int | None = None,
        similarity_fn_name: str | None = None,
    ) -> SentenceEncoder:
        """Load a plain Hugging Face model or a sentence-transformers folder of any version.

        A sentence-transformers folder (written by version 1.x to 6.x, see
        :mod:`sbert_tutor.encoders.st_format`) brings its own pooling, dense layers, normalisation,
        ``max_seq_length`` and prompts; arguments given here override them (an overriding
        ``pooling`` is used *instead of* reading the folder's pooling file). A plain Hugging Face
        model defaults to mean pooling and no normalisation. ``max_seq_length`` defaults to what
        sentence-transformers uses: the folder's value, else the tokenizer's ``model_max_length``
        capped at the model's position limit. Where the model came from (local, models folder,
        hub, packaged copy) is logged and kept in ``source``; see
        :func:`sbert_tutor.encoders.resolve.resolve_model`. ``compute_dtype`` sets ``encoder.compute_dtype``
        (e.g. ``"auto"``: bf16/fp16 mixed precision on a GPU for every :meth:`encode`).

        The keyword-only arguments are sentence-transformers' (``SentenceTransformer(...)``), with
        its meaning: ``revision`` a hub branch, tag or commit (only the hub can give one; a local
        folder with ``revision`` is a ``ValueError``); ``cache_folder`` where hub downloads go;
        ``truncate_dim`` the dimensions every :meth:`encode` keeps; ``similarity_fn_name``
        overrides the folder's (``config_sentence_transformers.json``; cosine when it names none).

        Raises:
            ValueError: an unknown pooling, or a device this machine does not have; a folder
                whose tokenizer cannot feed the model (``check_tokenizer``: tokenizer files
                missing, or far fewer tokens than the model's vocabulary).
            NotImplementedError: the folder needs a module sbert_tutor does not run, or its
                pooling config names no pooling mode (the message names the file and what to do).
        """
        from transformers import AutoTokenizer

        if pooling is not None:
            pooling = check_pooling(pooling)
        target = check_device(device) if device is not None else default_device()
        resolved = resolve_model(name_or_path, revision=revision, cache_folder=cache_folder)
        st = read_st_config(resolved.path, pooling=pooling)
        folder = st.transformer_path if st else resolved.path
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(folder, **(st.tokenizer_kwargs if st else {}))
            model = _load_transformer(folder)
        check_tokenizer(tokenizer, model, folder)
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
            dense=[Dense.load(entry.path) for entry in st.dense] if st else (),
            prompts=st.prompts if st else None,
            default_prompt_name=st.default_prompt_name if st else None,
            include_prompt=st.include_prompt if st else True,
            compute_dtype=compute_dtype,
            truncate_dim=truncate_dim,
            similarity_fn_name=similarity_fn_name
            if similarity_fn_name is not None
            else (st.similarity_fn_name if st else None),
        )
        logger.info(
            "loaded %s from %s (%s; pooling=%s, normalize=%s, max_seq_length=%d)",
            resolved.name,
            resolved.source,
            st.layout if st else "plain Hugging Face model",
            pooling,
            normalize,
            encoder.max_seq_length,
        )
        encoder.eval()
        return encoder.to(target)

    def save(self, path: str | Path) -> Path:
        """Write a folder that :meth:`from_pretrained` and sentence-transformers 2.x-6.x read.

        Pooling, dense layers, normalisation, ``max_seq_length`` and prompts are saved with the
        weights, so exporting a model never silently loses them. A model card, ``README.md``, says
        where the model came from, what it is, how to use it and how sbert_tutor trained it
        (:mod:`sbert_tutor.encoders.model_card`). Like sentence-transformers, saving overwrites the files
        of an earlier save in ``path``, ``README.md`` included; unlike it, the card is always
        written anew (sentence-transformers copies the card of a model it loaded and did not
        train), so a loaded model's own card is not carried over: its ``base_model`` links to it.
        """
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        write_st_config(
            folder,
            dim=int(self.model.config.hidden_size),
            pooling=self.pooling,
            normalize=self.normalize,
            max_seq_length=self.max_seq_length,
            do_lower_case=self.do_lower_case,
            dense=tuple(self.dense),
            include_prompt=self.include_prompt,
            prompts=self.prompts,
            default_prompt_name=self.default_prompt_name,
            similarity_fn_name=self._similarity_fn_name,
        )
        (folder / "sbert_tutor.json").write_text(json.dumps(self.describe(), indent=2))
        card = model_card(self.describe(), self.model, self.training_history, folder)
        (folder / "README.md").write_text(card, encoding="utf-8")
        return folder

    def with_pooling(self, pooling: str, normalize: bool | None = None) -> SentenceEncoder:
        """A new encoder sharing this one's transformer, tokenizer, dense layers and training
        history, another pooling."""
        encoder = SentenceEncoder(
            self.model,
            self.tokenizer,
            pooling=pooling,
            normalize=self.normalize if normalize is None else normalize,
            max_seq_length=self.max_seq_length,
            do_lower_case=self.do_lower_case,
            name=self.name,
            source=self.source,
            dense=list(self.dense),
            prompts=self.prompts,
            default_prompt_name=self.default_prompt_name,
            include_prompt=self.include_prompt,
            truncate_dim=self.truncate_dim,
            similarity_fn_name=self._similarity_fn_name,
        )
        encoder.training_history = list(self.training_history)
        return encoder

    def _check_dense_sizes(self) -> None:
        size = pooled_dim(self.pooling, int(self.model.config.hidden_size))
        for i, layer in enumerate(self.dense):
            if getattr(layer, "in_features", size) != size:
                raise ValueError(
                    f"dense layer {i} expects {layer.in_features} inputs but gets {size} "
                    f"(pooling {self.pooling!r}); choose a pooling of that size"
                )
            size = getattr(layer, "out_features", size)

    # ------------------------------------------------------------------ properties
    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def embedding_dim(self) -> int:
        """Size of the sentence embedding (after pooling and dense layers)."""
        if len(self.dense):
            return int(self.dense[-1].out_features)
        return pooled_dim(self.pooling, int(self.model.config.hidden_size))

    def get_embedding_dimension(self) -> int:
        """sentence-transformers' name: the size :meth:`encode` returns, ``truncate_dim`` when set."""
        return self.embedding_dim if self.truncate_dim is None else self.truncate_dim

    def get_sentence_embedding_dimension(self) -> int:
        """sentence-transformers' older name of :meth:`get_embedding_dimension` (the same value;
        6.x still answers to it)."""
        return self.get_embedding_dimension()

    @property
    def similarity_fn_name(self) -> str:
        """sentence-transformers' ``similarity_fn_name``: ``"cosine"`` unless set (to ``"dot"``,
        ``"euclidean"`` or ``"manhattan"``, or by the model folder); :meth:`similarity` and
        :meth:`similarity_pairwise` compute it."""
        return self._similarity_fn_name or "cosine"

    @similarity_fn_name.setter
    def similarity_fn_name(self, value: str | None) -> None:
        self._similarity_fn_name = None if value is None else check_similarity_fn_name(value)

    def describe(self) -> dict[str, Any]:
        """The settings that determine the embeddings (recorded with every result)."""
        info: dict[str, Any] = {
            "name": self.name,
            "source": self.source,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "max_seq_length": self.max_seq_length,
            "embedding_dim": self.embedding_dim,
        }
        if len(self.dense):
            info["dense"] = [layer.config() for layer in self.dense]
        if self.default_prompt_name is not None:
            info["default_prompt"] = self.prompts[self.default_prompt_name]
        if self.compute_dtype is not None:
            info["compute_dtype"] = str(self.compute_dtype).replace("torch.", "")
        if self.truncate_dim is not None:
            info["truncate_dim"] = self.truncate_dim
        if self._similarity_fn_name is not None:
            info["similarity_fn_name"] = self._similarity_fn_name
        return info

    # ------------------------------------------------------------------ tokenisation
    def _texts(self, sentences: Sequence[str], prompt: str | None = None) -> list[str]:
        """What the tokenizer sees: stripped, prompt first, lower-cased if the model says so."""
        texts = [s.strip() for s in sentences]
        if prompt:
            texts = [prompt + s for s in texts]
        if self.do_lower_case:
            texts = [s.lower() for s in texts]
        return texts

    @property
    def _left_padding(self) -> bool:
        return getattr(self.tokenizer, "padding_side", "right") == "left"

    def token_ids(
        self, sentences: Sequence[str], prompt: str | None = None
    ) -> tuple[list[list[int]], int]:
        """Tokenise without padding; cut to ``max_seq_length``. Returns (ids, number truncated).

        Leading and trailing spaces are stripped (as sentence-transformers did up to 5.x; 6.x
        keeps them, which changes byte-level BPE tokens only). ``prompt`` (an instruction such as
        ``"query: "``) is put before every sentence. A fast tokenizer runs its Rust side directly,
        on all cores (:mod:`sbert_tutor.runtime.tokenizing`).
        """
        texts = self._texts(sentences, prompt)
        with quiet_transformers(), tokenizer_parallelism():
            ids, cut = tokenizing.token_ids(self.tokenizer, texts, self.max_seq_length)
        return ids, sum(cut)

    def collate(self, ids: Sequence[list[int]], bucket: Bucket = None) -> dict[str, torch.Tensor]:
        """Pad a batch of token-id lists into ``input_ids`` and ``attention_mask`` tensors.

        Padding goes where the tokenizer puts it (``padding_side``, right for BERT-like models).
        The width is the longest row, or with ``bucket`` (a multiple such as 32, or a ladder of
        widths; see :func:`sbert_tutor.runtime.batching.resolve_bucket` for the ``"auto"`` rule) that
        rounded up, never past ``max_seq_length``; the extra positions are masked padding.
        """
        if not ids:
            raise ValueError("collate needs at least one row of token ids")
        longest = max(len(x) for x in ids)
        width = bucket_width(longest, check_bucket(bucket), limit=self.max_seq_length)
        pad_id = self.tokenizer.pad_token_id or 0
        input_ids, mask = pad_ids(ids, width, pad_id, left=self._left_padding)
        return {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(mask)}

    def tokenize(self, sentences: Sequence[str]) -> dict[str, torch.Tensor]:
        """Tokenise, truncate (warning with a count) and pad ``sentences`` into one batch."""
        items = check_sentences(sentences)
        ids, truncated = self.token_ids(items)
        _warn_truncated(truncated, len(items), self.max_seq_length)
        return self.collate(ids)

    def _prompt_text(self, prompt: str | None, prompt_name: str | None) -> str | None:
        """The prompt :meth:`encode` uses: ``prompt``, else the named one, else the default."""
        if prompt is not None:
            return prompt
        name = prompt_name if prompt_name is not None else self.default_prompt_name
        if name is None:
            return None
        if name not in self.prompts:
            known = ", ".join(repr(k) for k in self.prompts) or "none"
            raise ValueError(
                f"prompt_name {name!r} is not one of this model's prompts ({known}); pass "
                "prompt='...' to give the text itself"
            )
        return self.prompts[name]

    def _prompt_length(self, prompt: str | None) -> int:
        """Tokens of ``prompt`` left out of the pooling (0 unless ``include_prompt`` is off)."""
        if not prompt or self.include_prompt:
            return 0
        text = prompt.lower() if self.do_lower_case else prompt
        with quiet_transformers():
            ids = self.tokenizer(text)["input_ids"]
        special = set(getattr(self.tokenizer, "all_special_ids", ()))
        return len(ids) - (1 if ids and ids[-1] in special else 0)

    # ------------------------------------------------------------------ forward / encode
    def embed_tokens(
        self, hidden: torch.Tensor, attention_mask: torch.Tensor, prompt_length: int = 0
    ):
        """Token embeddings -> sentence embeddings: pooling, then the dense layers (no normalising)."""
        emb = pool(hidden, attention_mask, self.pooling, prompt_length=prompt_length)
        for layer in self.dense:
            emb = layer(emb)
        return emb

    def _finish(
        self,
        hidden: torch.Tensor,
        mask: torch.Tensor,
        prompt_length: int = 0,
        normalize: bool = False,
        truncate_dim: int | None = None,
        extra_normalize: bool = False,
        autocast_device: torch.device | None = None,
    ) -> torch.Tensor:
        """What :meth:`encode` does after the transformer, in fp32 (outside autocast when
        ``autocast_device`` is given): pooling, dense layers, normalisation, ``truncate_dim``."""
        with full_precision(autocast_device) if autocast_device is not None else nullcontext():
            emb = self.embed_tokens(hidden.float(), mask, prompt_length)
            if normalize:
                emb = F.normalize(emb, p=2, dim=-1)
            if truncate_dim is not None:
                emb = emb[:, :truncate_dim]
            if extra_normalize:
                emb = F.normalize(emb, p=2, dim=-1)
        return emb

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Embeddings ``[batch, d]`` with gradients (for training); normalised if ``normalize``.

        The inputs are :meth:`tokenize`'s (``token_type_ids`` for models that take segments; all
        zeros when left out). Any other keyword is a ``TypeError``: Hugging Face models accept
        and silently drop keywords they do not know, so nothing else is passed on.
        """
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        hidden = self.model(
            input_ids=input_ids, attention_mask=attention_mask, **extra
        ).last_hidden_state
        emb = self.embed_tokens(hidden, attention_mask)
        return F.normalize(emb, p=2, dim=-1) if self.normalize else emb

    def _batches(
        self,
        texts: list[str],
        batch_size: int,
        sort: bool,
        chunk_size: int | None,
        bucket: Bucket,
        pin: bool,
        truncated: list[int],
    ) -> Iterator[Batch]:
        """The batches of :meth:`encode`, in order: tokenise a chunk, sort it, pad, pin (CUDA).

        ``chunk_size=None`` tokenises everything first and sorts all by token count; otherwise
        see ``sbert_tutor.runtime.batching.chunk_positions``. ``truncated[0]`` counts inputs cut to
        ``max_seq_length``.
        """
        pad_id = self.tokenizer.pad_token_id or 0
        left = self._left_padding
        chunks = chunk_positions([len(t) for t in texts], chunk_size, sort)
        for chunk in chunks:
            with quiet_transformers():
                ids, cut = tokenizing.token_ids(
                    self.tokenizer, [texts[i] for i in chunk], self.max_seq_length
                )
            truncated[0] += sum(cut)
            lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
            for rows in batch_positions(np.arange(len(chunk)), lengths, batch_size, sort):
                longest = int(lengths[rows].max())
                width = bucket_width(longest, bucket, limit=self.max_seq_length)
                input_ids, mask = pad_ids([ids[j] for j in rows], width, pad_id, left=left)
                tensors = {
                    "input_ids": torch.from_numpy(input_ids),
                    "attention_mask": torch.from_numpy(mask),
                }
                if pin:
                    tensors = {k: v.pin_memory() for k, v in tensors.items()}
                yield Batch(chunk[rows], lengths[rows], tensors)

    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int = 32,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        show_progress_bar: bool | None = None,
        output_value: str | None = "sentence_embedding",
        precision: str | None = "float32",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: str | torch.device | None = None,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
        sort_by_length: bool = True,
        compute_dtype: str | torch.dtype | None = None,
        bucket: int | Sequence[int] | str | None = "auto",
        pipeline: bool | None = None,
    ) -> Any:
        r"""Embed sentences: by default a ``float32`` array ``[n, d]`` in input order.

        The keywords up to ``truncate_dim`` are sentence-transformers' (``SentenceTransformer.
        encode``) and mean what they mean there, so code written for one runs with the other.

        Args:
            sentences: strings (a clear error names the first one that is not: ``None``, a
                number). A single string gives a single vector ``[d]``; an empty list gives an
                empty result (``[0, d]``). An empty string is embedded as sentence-transformers
                embeds it (the special tokens alone), with one :class:`EmptyTextWarning` that
                counts them, so one empty field does not stop a whole corpus.
            batch_size: sentences per forward pass.
            prompt_name: an instruction put before every sentence, by its name in the model's
                ``prompts``; the model's default prompt applies otherwise.
            prompt: the instruction as text (``prompt=""`` for none); wins over ``prompt_name``.
            show_progress_bar: tqdm bar; ``None`` shows one for more than 2,048 sentences.
            output_value: ``"sentence_embedding"``, or ``"token_embeddings"``: one
                ``[tokens, hidden]`` tensor a sentence.
            precision: ``"float32"`` (or ``None``, as sentence-transformers' evaluators pass it),
                ``"int8"``, ``"uint8"``, ``"binary"`` or ``"ubinary"`` (:mod:`sbert_tutor.search.quantize`;
                int8/uint8 ranges come from this call's embeddings).
            convert_to_numpy: ``False`` (and no tensor): a list of 1-D tensors.
            convert_to_tensor: one ``torch.Tensor`` on the compute device.
            device: where to run; ``None`` keeps the model's device. The model goes back to its
                device afterwards; a device this machine lacks is a ``ValueError`` before any work.
            normalize_embeddings: ``True``: :math:`u / \lVert u \rVert_2`, after ``truncate_dim``.
                ``False`` adds nothing: a model that normalises (``normalize``) still does.
            truncate_dim: keep the first ``k`` dimensions (Matryoshka models); ``None``: the
                encoder's ``truncate_dim`` (all dimensions unless set).
            sort_by_length: smart batching (sort by token count); ``False`` keeps input order,
                which only exists to measure what sorting buys (book: computational efficiency).
            compute_dtype: ``"auto"``, ``"fp32"``, ``"fp16"`` or ``"bf16"`` (or a torch dtype):
                the transformer runs under autocast in that precision, the pooling in fp32, and
                the embeddings come back as float32 (:mod:`sbert_tutor.runtime.precision`). ``None``: the
                encoder's ``compute_dtype``, which by default is the weights' own dtype.
            bucket: round each batch's width up to a multiple (``32``) or a ladder of widths;
                ``None`` pads to the longest row; ``"auto"`` buckets by 32 on CUDA under fp16/bf16
                only (:func:`sbert_tutor.runtime.batching.resolve_bucket`). Padding is masked, so the
                embeddings do not change beyond rounding.
            pipeline: tokenise and pad the next batches in a background thread while the current
                one is computed, copy without waiting and synchronise once at the end (instead of
                once per batch); batches then come from chunks of 16 batches sorted by length.
                ``None``: on CUDA only. Same embeddings as the serial path.
        """
        single = isinstance(sentences, str)
        if precision is None:
            precision = "float32"
        if truncate_dim is None:
            truncate_dim = self.truncate_dim
        items = check_sentences(
            [sentences] if single else sentences, allow_empty=True, allow_blank=True
        )
        _warn_blank(items)
        tokens_out = _check_output(
            len(items), batch_size, output_value, precision, truncate_dim, self.embedding_dim
        )
        plan = self._compute_plan(device, compute_dtype, bucket, pipeline)
        text_prompt = self._prompt_text(prompt, prompt_name)
        finish = functools.partial(
            self._finish,
            prompt_length=self._prompt_length(text_prompt),
            normalize=self.normalize,
            truncate_dim=truncate_dim,
            extra_normalize=normalize_embeddings,
            autocast_device=plan.device if plan.cast_to is not None else None,
        )
        n = len(items)
        width = self.embedding_dim if truncate_dim is None else truncate_dim
        tokens: list[Any] = [None] * n
        sink: HostSink | DeviceSink = (
            DeviceSink(width, plan.device)
            if convert_to_tensor or not convert_to_numpy or tokens_out
            else HostSink(n, width, plan.device, asynchronous=plan.pipelined)
        )
        if show_progress_bar is None:
            show_progress_bar = n > PROGRESS_THRESHOLD
        truncated = [0]
        texts = self._texts(items, text_prompt)
        states = self._hidden_states(
            texts, batch_size, sort_by_length, plan, show_progress_bar, truncated
        )
        with closing(states):
            for batch, hidden, mask in states:
                if tokens_out:
                    _keep_tokens(tokens, batch, hidden, left=self._left_padding)
                else:
                    sink.add(batch.positions, finish(hidden, mask))
        _warn_truncated(truncated[0], n, self.max_seq_length)
        if tokens_out:
            return tokens[0] if single else tokens
        return _convert(sink.finish(), precision, convert_to_tensor, convert_to_numpy, single)

    def _compute_plan(
        self,
        device: str | torch.device | None,
        compute_dtype: str | torch.dtype | None,
        bucket: int | Sequence[int] | str | None,
        pipeline: bool | None,
    ) -> _ComputePlan:
        """Where and in which arithmetic :meth:`encode` runs (its speed keywords, resolved)."""
        target = check_device(device) if device is not None else self.device
        weights = next(self.model.parameters()).dtype
        setting = compute_dtype if compute_dtype is not None else self.compute_dtype
        cast_to = autocast_dtype(
            resolve_compute_dtype(setting, target),
            weights,
            explicit=not (isinstance(setting, str) and setting.strip().lower() == "auto"),
        )
        padding_side = "left" if self._left_padding else "right"
        return _ComputePlan(
            device=target,
            weights=weights,
            cast_to=cast_to,
            bucket=resolve_bucket(bucket, target, cast_to or weights, padding_side),
            pipelined=target.type == "cuda" if pipeline is None else bool(pipeline),
        )

    def _hidden_states(
        self,
        texts: list[str],
        batch_size: int,
        sort_by_length: bool,
        plan: _ComputePlan,
        show_progress_bar: bool,
        truncated: list[int],
    ) -> Iterator[tuple[Batch, torch.Tensor, torch.Tensor]]:
        """``(batch, last hidden state, attention mask)`` for every batch of :meth:`encode`.

        The model runs on ``plan.device`` in eval mode without gradients
        (:func:`~sbert_tutor.runtime.precision.inference_context`) and in the plan's precision; those
        settings hold while the caller handles a batch, and closing the generator
        (``contextlib.closing``) restores them and puts the model back on its device
        in its train/eval mode, even when the caller fails. ``truncated[0]`` counts the inputs
        cut to ``max_seq_length``.
        """
        from tqdm.auto import tqdm

        batches = self._batches(
            texts,
            batch_size,
            sort_by_length,
            batch_size * CHUNK_BATCHES if plan.pipelined else None,
            plan.bucket,
            pin=plan.device.type == "cuda",
            truncated=truncated,
        )
        home = self.device
        moved = plan.device != home
        if moved:
            self.to(plan.device)
        source: Any = batches
        try:
            with (
                eval_mode(self),  # every submodule gets its own mode back
                inference_context(plan.cast_to),
                tokenizer_parallelism(),
                compute_context(plan.device, plan.cast_to, plan.weights, self.cudnn_attention),
            ):
                if plan.pipelined:
                    source = Prefetcher(batches, init=thread_init(plan.device))
                total = -(-len(texts) // batch_size)
                bar = tqdm(
                    source, total=total, desc="encode", unit="batch", disable=not show_progress_bar
                )
                for batch in bar:
                    inputs = {
                        k: v.to(plan.device, non_blocking=plan.pipelined)
                        for k, v in batch.tensors.items()
                    }
                    hidden = self.model(**inputs).last_hidden_state
                    yield batch, hidden, inputs["attention_mask"]
        finally:
            if isinstance(source, Prefetcher):
                source.close()
            if moved:
                self.to(home)

    def encode_query(
        self,
        sentences: str | Sequence[str],
        batch_size: int = 32,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        show_progress_bar: bool | None = None,
        output_value: str | None = "sentence_embedding",
        precision: str | None = "float32",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: str | torch.device | None = None,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
        sort_by_length: bool = True,
        compute_dtype: str | torch.dtype | None = None,
        bucket: int | Sequence[int] | str | None = "auto",
        pipeline: bool | None = None,
    ) -> Any:
        """:meth:`encode` for queries, as sentence-transformers' ``encode_query``: with neither
        ``prompt_name`` nor ``prompt`` given, the model's prompt named ``"query"``, and no prompt
        when it has none (never the default prompt: a sentence-transformers 6.x model always
        carries a ``"query"`` prompt, ``""`` unless its folder sets one). Every other keyword
        is :meth:`encode`'s, passed on unchanged."""
        return self._encode_as("query", locals())

    def encode_document(
        self,
        sentences: str | Sequence[str],
        batch_size: int = 32,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        show_progress_bar: bool | None = None,
        output_value: str | None = "sentence_embedding",
        precision: str | None = "float32",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: str | torch.device | None = None,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
        sort_by_length: bool = True,
        compute_dtype: str | torch.dtype | None = None,
        bucket: int | Sequence[int] | str | None = "auto",
        pipeline: bool | None = None,
    ) -> Any:
        """:meth:`encode` for documents, as sentence-transformers' ``encode_document``: with
        neither ``prompt_name`` nor ``prompt`` given, the model's prompt named ``"document"``, and
        no prompt when it has none (as :meth:`encode_query`; sentence-transformers 6.x would try
        ``"passage"`` and ``"corpus"`` only for a model without a ``"document"`` prompt, which its
        loader never leaves). Every other keyword is :meth:`encode`'s, passed on unchanged."""
        return self._encode_as("document", locals())

    def _encode_as(self, role: str, arguments: dict[str, Any]) -> Any:
        """:meth:`encode` with the arguments of :meth:`encode_query` / :meth:`encode_document`
        (``locals()``, the same names as :meth:`encode`'s), ``prompt`` chosen for ``role``."""
        arguments = {k: v for k, v in arguments.items() if k != "self"}
        arguments["prompt"] = self._role_prompt(role, arguments["prompt_name"], arguments["prompt"])
        return self.encode(**arguments)

    def _role_prompt(self, role: str, prompt_name: str | None, prompt: str | None) -> str | None:
        """The ``prompt`` to pass: the prompt of ``role`` (``""`` when the model has none) when the
        caller chose none, by name or text: sentence-transformers' rule for ``encode_query`` /
        ``encode_document``; else the caller's ``prompt``."""
        if prompt_name is None and prompt is None:
            return self.prompts.get(role, "")
        return prompt

    def similarity(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:
        r"""Similarity of every pair of rows, ``[n, m]``, by ``similarity_fn_name``, as
        sentence-transformers' ``model.similarity``.

        Cosine (the default) is :math:`S_{ij} = a_i \cdot b_j / (\lVert a_i \rVert \lVert b_j
        \rVert)`; ``dot``, ``euclidean`` (negated distance) and ``manhattan`` (negated) are
        :func:`sbert_tutor.similarity.similarity_matrix`, computed in float64 on the CPU and
        returned as a float32 CPU tensor. Inputs: arrays or tensors ``[n, d]`` or ``[d]``, or
        lists of 1-D ones (what :meth:`encode` returns for each of its output types).
        """
        return torch.from_numpy(
            similarity_matrix(
                as_matrix(embeddings1), as_matrix(embeddings2), self.similarity_fn_name
            )
        ).float()

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:
        r"""Similarity of aligned rows, ``[n]``, by ``similarity_fn_name``, as
        sentence-transformers' ``model.similarity_pairwise``
        (:func:`sbert_tutor.similarity.paired_similarity`; float32 CPU tensor)."""
        return torch.from_numpy(
            paired_similarity(
                as_matrix(embeddings1), as_matrix(embeddings2), self.similarity_fn_name
            )
        ).float()


class EvaluationLog:
    """Where sentence-transformers' evaluators leave their metrics when they run on a
    :class:`SentenceEncoder` (its ``model_card_data``; a ``SentenceTransformer`` keeps them in its
    model card data the same way). ``results`` holds one entry a call, oldest first: the
    evaluator's class name, its metrics, epoch and step. Kept in memory only (not saved)."""

    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []

    def set_evaluation_metrics(
        self, evaluator: Any, metrics: dict[str, Any], epoch: int = 0, step: int = 0
    ) -> None:
        """Record one evaluation (the method sentence-transformers' evaluators call)."""
        self.results.append(
            {
                "evaluator": type(evaluator).__name__,
                "metrics": dict(metrics),
                "epoch": epoch,
                "step": step,
            }
        )

    def __repr__(self) -> str:
        return f"EvaluationLog({len(self.results)} results)"


@dataclass(frozen=True)
class _ComputePlan:
    """Where and how :meth:`SentenceEncoder.encode` runs: the device, the weights' dtype, the
    autocast dtype (``None``: the weights' own), the padding buckets, the pipelined path."""

    device: torch.device
    weights: torch.dtype
    cast_to: torch.dtype | None
    bucket: Bucket
    pipelined: bool


def _check_output(
    n: int,
    batch_size: int,
    output_value: str | None,
    precision: str,
    truncate_dim: int | None,
    embedding_dim: int,
) -> bool:
    """Check :meth:`SentenceEncoder.encode`'s output keywords before any work; ``True`` when
    token embeddings are asked for."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    check_precision(precision)
    if output_value not in _OUTPUT_VALUES:
        raise ValueError(
            f"output_value={output_value!r} is not supported; use 'sentence_embedding' "
            "(the default) or 'token_embeddings'"
        )
    tokens_out = output_value == "token_embeddings"
    if tokens_out and precision != "float32":
        raise ValueError("precision applies to sentence embeddings, not to token_embeddings")
    if truncate_dim is not None and not 0 < truncate_dim <= embedding_dim:
        raise ValueError(
            f"truncate_dim must be between 1 and the embedding size {embedding_dim}, "
            f"got {truncate_dim}"
        )
    if precision in ("int8", "uint8") and n == 1:
        raise ValueError(
            f"precision={precision!r} takes each dimension's range from the batch, which one "
            "sentence cannot give; encode several sentences, or encode in float32 and call "
            "sbert_tutor.search.quantize.quantize_embeddings with calibration_embeddings="
        )
    return tokens_out


def _keep_tokens(tokens: list[Any], batch: Batch, hidden: torch.Tensor, left: bool) -> None:
    """Each row's token embeddings ``[tokens, hidden]`` (right padding cut off, as in
    sentence-transformers) into ``tokens`` at its input position, as float32 copies."""
    for row, (i, length) in enumerate(zip(batch.positions, batch.lengths, strict=True)):
        end = batch.width if left else int(length)
        tokens[i] = hidden[row, :end].float().clone()


def _convert(
    embeddings: np.ndarray | torch.Tensor,
    precision: str,
    convert_to_tensor: bool,
    convert_to_numpy: bool,
    single: bool,
) -> Any:
    """The return value sentence-transformers gives for the same keywords (``embeddings``: the
    numpy array, or one tensor on the device, rows in input order)."""
    if precision != "float32":
        value: Any = quantize_embeddings(embeddings, precision)
        if convert_to_tensor:
            value = torch.as_tensor(value)
        elif not convert_to_numpy:
            value = list(torch.from_numpy(value))
    elif isinstance(embeddings, np.ndarray) or convert_to_tensor:
        value = embeddings
    else:
        value = list(embeddings)
    return value[0] if single else value


def _warn_blank(items: Sequence[str]) -> None:
    """One :class:`EmptyTextWarning` counting the empty strings of an :meth:`encode` call."""
    count, first = count_blank(items)
    if count:
        warnings.warn(
            f"{count} of {len(items)} inputs are empty strings (or only spaces; the first is "
            f"sentences[{first}]); they are embedded as sentence-transformers embeds them (the "
            "special tokens alone), which carries no meaning: drop or fill them if that matters",
            EmptyTextWarning,
            stacklevel=3,
        )


def _warn_truncated(truncated: int, total: int, max_seq_length: int) -> None:
    if truncated:
        warnings.warn(
            f"{truncated} of {total} inputs are longer than max_seq_length={max_seq_length} tokens "
            "and were truncated; pass max_seq_length=... to from_pretrained to change the limit",
            TruncationWarning,
            stacklevel=3,
        )


__all__ = ["EmptyTextWarning", "EvaluationLog", "SentenceEncoder", "TruncationWarning"]
