"""Tokenising many sentences fast: the Rust tokenizer directly, with its own threads.

A Hugging Face *fast* tokenizer is a Rust ``tokenizers.Tokenizer`` behind a Python wrapper. For a
batch of sentences the Rust side splits the work over all cores (``rayon``) unless the
environment says ``TOKENIZERS_PARALLELISM=false``, which notebooks and forked data loaders often
set; the wrapper then builds Python dictionaries per sentence (ids, type ids, mask), which costs
more than the Rust work once that runs in parallel.

``token_ids`` asks the Rust tokenizer for the ids alone (same truncation and special tokens as
the wrapper; a tokenizer class that changes how it encodes keeps its wrapper),
``pair_token_ids`` does the same for text pairs (a cross-encoder's input), and
``tokenizer_parallelism`` lets it use its threads whatever the environment says, where that is
safe: never in a process forked from one that may have used them (the threads do not survive a
fork, and the tokenizer would wait for them for ever) nor in a ``multiprocessing`` worker, and
``SBERT_TUTOR_TOKENIZER_PARALLELISM=0`` turns the override off.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sbert_tutor.settings import TOKENIZER_PARALLELISM_ENV

__all__: list[str] = []

#: The tokenizers library's switch, and the values it reads as "off" (its own list).
PARALLELISM_ENV = "TOKENIZERS_PARALLELISM"
_FALSE_VALUES = frozenset({"", "off", "false", "f", "no", "n", "0"})
#: Ours (:mod:`sbert_tutor.settings`): ``0`` keeps whatever ``TOKENIZERS_PARALLELISM`` says.
OVERRIDE_ENV = TOKENIZER_PARALLELISM_ENV

#: Wrapper methods that, when a tokenizer class redefines them, may change the ids it produces.
_ENCODING_METHODS = (
    "__call__",
    "_call_one",
    "encode_plus",
    "batch_encode_plus",
    "_encode_plus",
    "_batch_encode_plus",
    "set_truncation_and_padding",
    "prepare_for_tokenization",
)

_forked = False
_lock = threading.Lock()
_holders = 0
_saved: str | None = None


def _mark_forked() -> None:
    """In a child forked while the override was active: put the user's value back there."""
    global _forked, _holders, _saved
    _forked = True
    if _holders:
        if _saved is None:
            os.environ.pop(PARALLELISM_ENV, None)
        else:
            os.environ[PARALLELISM_ENV] = _saved
    _holders, _saved = 0, None


os.register_at_fork(after_in_child=_mark_forked)


def _parallelism_override_allowed() -> bool:
    """Whether ``tokenizer_parallelism`` may turn the tokenizer's threads on here."""
    if os.environ.get(OVERRIDE_ENV, "1").strip().lower() in _FALSE_VALUES:
        return False
    return not _forked and multiprocessing.parent_process() is None


@contextmanager
def tokenizer_parallelism() -> Iterator[bool]:
    """While active, fast tokenizers use their own threads even under
    ``TOKENIZERS_PARALLELISM=false``; the variable is restored afterwards. Yields whether it
    changed anything. Re-entrant and safe across threads (the first holder saves the user's
    value, the last restores it); see the module docstring for where it stays off.
    """
    global _holders, _saved
    value = os.environ.get(PARALLELISM_ENV)
    wanted = (
        value is not None
        and value.strip().lower() in _FALSE_VALUES
        and _parallelism_override_allowed()
    )
    with _lock:
        active = _holders > 0
        if wanted or active:
            if not active:
                _saved = value
                os.environ[PARALLELISM_ENV] = "true"
            _holders += 1
    if not (wanted or active):
        yield False
        return
    try:
        yield True
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and not _forked:
                if _saved is None:
                    os.environ.pop(PARALLELISM_ENV, None)
                else:
                    os.environ[PARALLELISM_ENV] = _saved
                _saved = None


def _defining_class(cls: type, name: str) -> type | None:
    return next((klass for klass in cls.__mro__ if name in vars(klass)), None)


def rust_tokenizer(tokenizer: Any) -> Any | None:
    """The Rust tokenizer of a fast tokenizer whose class encodes as its base class does.

    ``None`` for a slow (Python) tokenizer, or when the tokenizer's class redefines a method
    through which the wrapper encodes (it may add text, change truncation, ...): such tokenizers
    keep their wrapper.
    """
    if not getattr(tokenizer, "is_fast", False):
        return None
    cls = type(tokenizer)
    base = _defining_class(cls, "backend_tokenizer")
    if base is None:
        return None
    mro = cls.__mro__
    depth = mro.index(base)
    for name in _ENCODING_METHODS:
        owner = _defining_class(cls, name)
        if owner is not None and mro.index(owner) < depth:
            return None
    return tokenizer.backend_tokenizer


def _configure(backend: Any, tokenizer: Any, max_length: int) -> None:
    """Truncation to ``max_length`` on the tokenizer's side, no padding, special tokens handled as
    the wrapper handles them: the state the wrapper itself sets before each call."""
    target = {
        "max_length": int(max_length),
        "stride": 0,
        "strategy": "longest_first",
        "direction": getattr(tokenizer, "truncation_side", "right"),
    }
    current = backend.truncation
    if current is None or {k: current.get(k) for k in target} != target:
        backend.enable_truncation(**target)
    if backend.padding is not None:
        backend.no_padding()
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    if getattr(backend, "encode_special_tokens", split) != split:
        backend.encode_special_tokens = split


def token_ids(
    tokenizer: Any, texts: Sequence[str], max_length: int
) -> tuple[list[list[int]], list[bool]]:
    """Ids of ``texts`` (special tokens added, cut to ``max_length``) and which were cut.

    The Rust tokenizer when ``rust_tokenizer`` allows it, else the wrapper (the same ids, by
    the test suite); truncation is read from the tokenizer itself, or for a slow tokenizer by
    tokenising again without truncation.
    """
    texts = list(texts)
    if not texts:
        return [], []
    backend = rust_tokenizer(tokenizer)
    if backend is not None:
        _configure(backend, tokenizer, max_length)
        encode = getattr(backend, "encode_batch_fast", None) or backend.encode_batch
        encodings = encode(texts, add_special_tokens=True)
        return [e.ids for e in encodings], [bool(e.overflowing) for e in encodings]
    encoded = tokenizer(texts, truncation=True, max_length=max_length)
    ids = encoded["input_ids"]
    if encoded.encodings is not None:
        cut = [bool(e.overflowing) for e in encoded.encodings]
    else:
        full = tokenizer(texts, truncation=False)["input_ids"]
        cut = [len(x) > max_length for x in full]
    return ids, cut


def pair_token_ids(
    tokenizer: Any, firsts: Sequence[str], seconds: Sequence[str], max_length: int
) -> tuple[list[list[int]], list[list[int]], list[bool]]:
    """Ids and segment ids of text pairs joined as one input, and which pairs were cut.

    Each pair becomes ``[CLS] first [SEP] second [SEP]`` (or the tokenizer's own template) with
    segment (token type) ids 0 for the first part and 1 for the second. A pair longer than
    ``max_length`` tokens is cut ``"longest_first"``: one token at a time from whichever text is
    longer, as the Hugging Face wrapper (and sentence-transformers' ``CrossEncoder``) does. The
    Rust tokenizer when ``rust_tokenizer`` allows it, else the wrapper (the same ids).
    """
    firsts, seconds = list(firsts), list(seconds)
    if len(firsts) != len(seconds):
        raise ValueError(f"{len(firsts)} first texts but {len(seconds)} second texts")
    if not firsts:
        return [], [], []
    backend = rust_tokenizer(tokenizer)
    if backend is not None:
        _configure(backend, tokenizer, max_length)
        encode = getattr(backend, "encode_batch_fast", None) or backend.encode_batch
        encodings = encode(list(zip(firsts, seconds, strict=True)), add_special_tokens=True)
        return (
            [e.ids for e in encodings],
            [e.type_ids for e in encodings],
            [bool(e.overflowing) for e in encodings],
        )
    encoded = tokenizer(
        firsts,
        seconds,
        truncation="longest_first",
        max_length=max_length,
        return_token_type_ids=True,
    )
    ids = encoded["input_ids"]
    full = tokenizer(firsts, seconds, truncation=False)["input_ids"]
    cut = [len(x) > max_length for x in full]
    return ids, encoded["token_type_ids"], cut
