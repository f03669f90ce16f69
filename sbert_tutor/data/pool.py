r"""Every distinct text of the project's data sets in one list: a real corpus for search (chapter 16).

Approximate nearest-neighbour indexes are judged on how they behave on real embeddings, which
cluster, unlike random vectors. :func:`load_text_pool` gathers every distinct sentence and
passage the loaders of :mod:`sbert_tutor.data` give, in a fixed order (:data:`POOL_PARTS`, and
within a part the loader's order: split by split, first sentence then second of each pair), and
keeps the first occurrence of each text (exact string match after stripping outer spaces; empty
lines are dropped). The same data folder therefore always gives the same list, so embeddings of
it can be cached by the hash of its texts.

===================  ==================================================================
part                 texts
===================  ==================================================================
``stsb``             STS benchmark train, dev, test (both sentences of each pair)
``sickr``            SICK train, trial, test
``sts12``-``sts16``  the STS12-16 test pairs
``snli``             SNLI dev and test premises and hypotheses
``mr`` ... ``mrpc``  SentEval's seven transfer tasks (every split; MRPC both sentences)
``msmarco``          the 16,799 passages of ``corpus_mini``
===================  ==================================================================

MS MARCO *queries* are no part of the pool: they are what one searches it with
(:func:`sbert_tutor.data.msmarco.load_msmarco_queries`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sbert_tutor.data.msmarco import load_msmarco
from sbert_tutor.data.nli import load_nli
from sbert_tutor.data.senteval import TRANSFER_TASKS, load_transfer
from sbert_tutor.data.sts import SPLITS as STS_SPLITS
from sbert_tutor.data.sts import STS_TASKS, load_sts

__all__ = ["POOL_PARTS", "TextPool", "load_text_pool", "texts_sha256"]

#: The parts of the pool, in the order their texts are taken.
POOL_PARTS: tuple[str, ...] = (
    "stsb",
    "sickr",
    "sts12",
    "sts13",
    "sts14",
    "sts15",
    "sts16",
    "snli",
    *TRANSFER_TASKS,
    "msmarco",
)


@dataclass(frozen=True)
class TextPool:
    """Distinct texts and where each came from.

    Attributes:
        texts: the distinct texts, in pool order (module docstring).
        parts: the part each text was first found in, aligned with ``texts``.
        files: the data files read (hashed into provenance).
        sources: part -> where its data came from, in words.
    """

    texts: list[str]
    parts: list[str]
    files: tuple[Path, ...]
    sources: dict[str, str]

    def __len__(self) -> int:
        return len(self.texts)

    def counts(self) -> dict[str, int]:
        """Distinct texts each part adds (texts already taken from an earlier part not counted)."""
        out = dict.fromkeys(dict.fromkeys(self.parts), 0)
        for part in self.parts:
            out[part] += 1
        return out

    def sha256(self) -> str:
        """Hash of the texts in order (a cache key for their embeddings)."""
        return texts_sha256(self.texts)


def texts_sha256(texts: Iterable[str]) -> str:
    """SHA-256 of the texts, each UTF-8 encoded and ended by a newline byte."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def _part_texts(part: str) -> tuple[list[str], tuple[Path, ...], str]:
    if part in STS_TASKS:
        texts: list[str] = []
        files: list[Path] = []
        source = ""
        for split in STS_SPLITS[part]:
            data = load_sts(part, split)
            texts += [*data.sentences1, *data.sentences2]
            files += data.files
            source = data.source
        return texts, tuple(files), source
    if part == "snli":
        texts, files = [], []
        for split in ("dev", "test"):
            nli = load_nli("snli", split)
            texts += [*nli.premises, *nli.hypotheses]
            files += nli.files
            source = nli.source
        return texts, tuple(files), source
    if part in TRANSFER_TASKS:
        task = load_transfer(part)
        texts = []
        for split in task.splits.values():
            texts += split.sentences
            texts += split.sentences2 or []
        return texts, task.files, task.source
    if part == "msmarco":
        mini = load_msmarco("trec-dl19", corpus="mini")
        corpus_files = tuple(f for f in mini.files if f.name == "corpus_mini.tsv")
        return list(mini.corpus.values()), corpus_files, mini.source
    raise ValueError(f"unknown pool part {part!r}; choose from {', '.join(POOL_PARTS)}")


def load_text_pool(parts: Sequence[str] = POOL_PARTS) -> TextPool:
    """Every distinct text of ``parts`` (default: all of :data:`POOL_PARTS`), in pool order.

    Raises:
        ValueError: an unknown part.
        DataNotFoundError: a part's data can be found neither in ``SBERT_TUTOR_DATA`` nor on
            the hub (as its loader says).
    """
    unknown = [p for p in parts if p not in POOL_PARTS]
    if unknown:
        raise ValueError(f"unknown pool part(s) {unknown}; choose from {', '.join(POOL_PARTS)}")
    first: dict[str, str] = {}
    files: list[Path] = []
    sources: dict[str, str] = {}
    for part in dict.fromkeys(parts):
        texts, part_files, source = _part_texts(part)
        files += part_files
        sources[part] = source
        for text in texts:
            text = text.strip()
            if text and text not in first:
                first[text] = part
    return TextPool(
        texts=list(first),
        parts=list(first.values()),
        files=tuple(dict.fromkeys(files)),
        sources=sources,
    )
