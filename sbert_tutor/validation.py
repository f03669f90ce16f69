"""Input checks shared by the encoder, the data loaders and the evaluators.

Every check raises an error that says what was wrong *and what to do*: a practitioner calling
the library on their own data should never have to read a stack trace to find the bad row.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from typing import Any

import numpy as np

__all__ = ["OptionError", "check_choice"]

#: How an :class:`OptionError` writes an option: ``(name, example value) -> text``.
Spelling = Callable[[str, Any], str]


def python_spelling(name: str, value: Any) -> str:
    """An option as a Python keyword argument: ``score_range=(0, 1)``."""
    return f"{name}={value!r}"


class OptionError(ValueError):
    """A ``ValueError`` whose advice names options the caller can change.

    The message is a template in which ``{name}`` stands for an option, written the way the
    caller spells it: a keyword argument in Python by default (``python_spelling``), or as
    :meth:`spelled` is told, e.g. ``objective_options={'score_range': (0, 1)}`` under
    :func:`~sbert_tutor.training.recipe.fit` or ``--score-range 0 1`` under the command line
    (``sbert_tutor.cli.cli_spelling``). Literal braces in the template are doubled.

    Attributes:
        template: the message with ``{name}`` placeholders.
        options: each option's example value, in the caller's terms.

    Example:
        >>> err = OptionError("scores above 1: pass {score_range}", {"score_range": (0, 5)})
        >>> str(err)
        'scores above 1: pass score_range=(0, 5)'
        >>> str(err.spelled(lambda name, value: "--" + name.replace("_", "-")))
        'scores above 1: pass --score-range'
    """

    def __init__(
        self, template: str, options: Mapping[str, Any], spelling: Spelling = python_spelling
    ) -> None:
        self.template = template
        self.options = dict(options)
        self.spelling = spelling
        words = {name: spelling(name, value) for name, value in self.options.items()}
        super().__init__(template.format(**words))

    def spelled(self, spelling: Spelling) -> OptionError:
        """The same error, its options written with ``spelling``."""
        return OptionError(self.template, self.options, spelling).with_traceback(self.__traceback__)


def check_sentences(
    sentences: object,
    name: str = "sentences",
    *,
    allow_empty: bool = False,
    allow_blank: bool = False,
) -> list[str]:
    """Return ``sentences`` as a list of strings, or raise a helpful error.

    A single string is rejected (rather than silently treated as a list of characters). An empty
    list is an error unless ``allow_empty`` (``encode([])`` returns an empty result). An empty or
    whitespace-only string is an error unless ``allow_blank`` (``encode`` embeds it, as
    sentence-transformers does, and warns with a count: see ``count_blank``). ``None`` and
    non-strings are always a ``TypeError`` naming the first one.
    """
    if isinstance(sentences, str):
        raise TypeError(
            f"{name} must be a list of strings, got a single string; wrap it: [{sentences[:40]!r}]"
        )
    if sentences is None or not isinstance(sentences, Iterable):
        raise TypeError(f"{name} must be a list of strings, got {type(sentences).__name__}")
    items = list(sentences)
    if not items and not allow_empty:
        raise ValueError(f"{name} is empty: pass at least one sentence")
    for i, s in enumerate(items):
        if not isinstance(s, str):
            raise TypeError(
                f"{name}[{i}] is {type(s).__name__} ({s!r}), not str: every item must be a string "
                "(drop or fill missing values before encoding)"
            )
        if not allow_blank and not s.strip():
            raise ValueError(
                f"{name}[{i}] is an empty string: an empty sentence has no meaning to embed; "
                "remove it or replace it with text"
            )
    return items


def count_blank(sentences: Sequence[str]) -> tuple[int, int | None]:
    """``(number of empty or whitespace-only strings, position of the first)``; ``None`` if none."""
    blank = [i for i, s in enumerate(sentences) if not s.strip()]
    return len(blank), (blank[0] if blank else None)


def check_pairs(pairs: object, name: str = "pairs") -> tuple[list[str], list[str]]:
    """Return text pairs as two lists (first texts, second texts), or raise a helpful error.

    ``pairs`` is a list (or tuple, or 2-D array) of ``(text1, text2)`` items, each a tuple or
    list of two non-empty strings. An empty list gives two empty lists (scoring nothing is not
    an error, as in sentence-transformers). One pair on its own is the caller's business (a
    cross-encoder wraps it first).
    """
    if isinstance(pairs, str) or pairs is None or not isinstance(pairs, Iterable):
        raise TypeError(
            f"{name} must be a list of (text1, text2) pairs, got {type(pairs).__name__}"
        )
    items = pairs.tolist() if isinstance(pairs, np.ndarray) else list(pairs)
    firsts: list[str] = []
    seconds: list[str] = []
    for i, pair in enumerate(items):
        if isinstance(pair, np.ndarray):
            pair = pair.tolist()
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            what = (
                f"a {type(pair).__name__} of length {len(pair)}"
                if isinstance(pair, (tuple, list))
                else f"{type(pair).__name__} ({pair!r:.60})"
            )
            raise TypeError(
                f"{name}[{i}] is {what}, not a pair: every item must be (text1, text2), e.g. "
                "[('query', 'passage'), ...]"
            )
        for j, text in enumerate(pair):
            if not isinstance(text, str):
                raise TypeError(
                    f"{name}[{i}][{j}] is {type(text).__name__} ({text!r}), not str: both texts "
                    "of a pair must be strings (drop or fill missing values first)"
                )
            if not text.strip():
                raise ValueError(
                    f"{name}[{i}][{j}] is an empty string: an empty text has nothing to compare; "
                    "remove the pair or replace the text"
                )
        firsts.append(pair[0])
        seconds.append(pair[1])
    return firsts, seconds


def check_same_length(named: Mapping[str, Sized]) -> int:
    """Check that all named sequences (``{name: sequence}``) have one length and return it."""
    lengths = {k: len(v) for k, v in named.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k}={n}" for k, n in lengths.items())
        raise ValueError(f"length mismatch: {desc}; each pair needs exactly one item in every list")
    return next(iter(lengths.values()))


def check_scores(scores: Iterable[object], name: str = "scores") -> np.ndarray:
    """Return gold scores as a float64 array; reject NaN, infinities and non-numbers."""
    values = []
    for i, s in enumerate(scores):
        try:
            f = float(s)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise TypeError(f"{name}[{i}] = {s!r} is not a number") from None
        if not math.isfinite(f):
            raise ValueError(
                f"{name}[{i}] is {f}: gold scores must be finite numbers; drop that pair or fix its label"
            )
        values.append(f)
    return np.asarray(values, dtype=np.float64)


def check_choice(
    name: object, choices: Sequence[str], what: str, *, key: str | None = None, other: str = ""
) -> str:
    """Return ``key`` (default: ``name`` stripped and lower-cased) if it is one of ``choices``.

    Otherwise raise ``ValueError("unknown <what> <name>; valid names: ...")`` with the closest
    valid name as a "Did you mean" hint. ``key`` is the caller's normalised spelling (aliases
    resolved); ``other`` adds what else is accepted, e.g. ``" (or a path to a .tsv file)"``.

    Example:
        >>> check_choice("STSB", ("stsb", "sickr"), "STS task")
        'stsb'
    """
    key = str(name).strip().lower() if key is None else key
    if key in choices:
        return key
    close = difflib.get_close_matches(key, list(choices), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"unknown {what} {name!r}; valid names: {', '.join(choices)}{other}.{hint}")


def check_device(device: object) -> Any:
    """Return ``device`` as a ``torch.device`` that exists on this machine, or raise ``ValueError``.

    ``"cuda"`` on a PyTorch build without CUDA (or with no visible GPU), ``"cuda:3"`` on a
    one-GPU machine and ``"mps"`` off Apple silicon are refused here, with what to do, before
    any model is moved or any work is done.
    """
    import torch

    try:
        dev = torch.device(device)  # type: ignore[arg-type]
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(
            f"device {device!r} is not a device name; use 'cpu', 'cuda', 'cuda:0', 'cuda:1', ... "
            "or 'mps'"
        ) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = (
                "this PyTorch build has no CUDA support (a CPU-only wheel)"
                if torch.version.cuda is None
                else "no CUDA GPU is visible (check the driver and CUDA_VISIBLE_DEVICES)"
            )
            raise ValueError(
                f"device {device!r} asked for, but {why}. Use device='cpu' (or leave device unset "
                "to pick the GPU when there is one), or install a CUDA build of PyTorch."
            )
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ValueError(
                f"device {device!r} asked for, but this machine has {count} visible CUDA "
                f"device(s): cuda:0 to cuda:{count - 1}"
            )
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(
                f"device {device!r} asked for, but Apple's MPS backend is not available here; "
                "use device='cpu' or 'cuda'"
            )
    return dev
