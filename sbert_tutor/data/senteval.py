r"""SentEval's seven transfer tasks: MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC (book chapter 11a).

Each task is sentences (MRPC: sentence pairs) with a class label; the transfer evaluation
(:mod:`sbert_tutor.evaluation.transfer`) trains a logistic regression on frozen embeddings.

**Local** (``SBERT_TUTOR_DATA`` set): the folder ``senteval/`` in SentEval's own layout (the same as
SentEval's ``data/downstream/``, so a folder made by SentEval's download script works too). The
files are read as SentEval's loaders read them:

========  ====================================  ============  ====================================
task      files                                 encoding      one item
========  ====================================  ============  ====================================
MR        ``MR/rt-polarity.{pos,neg}``          latin-1       a line (label 1 = pos, 0 = neg)
CR        ``CR/custrev.{pos,neg}``              latin-1       a line (1 = pos, 0 = neg)
SUBJ      ``SUBJ/subj.{objective,subjective}``  latin-1       a line (1 = objective, 0 = subjective)
MPQA      ``MPQA/mpqa.{pos,neg}``               latin-1       a line (1 = pos, 0 = neg)
SST-2     ``SST/binary/sentiment-{train,dev,    UTF-8         ``sentence<TAB>label`` (1 = positive)
          test}``
TREC      ``TREC/{train_5500,TREC_10}.label``   latin-1       ``COARSE:fine question``; the coarse
                                                              class is the label (6 classes)
MRPC      ``MRPC/msr_paraphrase_{train,test}    UTF-8 (BOM)   header line, then ``Quality  #1 ID
          .txt``                                              #2 ID  #1 String  #2 String`` (tabs)
========  ====================================  ============  ====================================

Text is whitespace-normalised exactly as SentEval does (``" ".join(line.split())``: SentEval splits
each line into tokens and the SBERT batcher joins them with spaces). Two details:

* Lines are split at ``\n`` only. The MR and SUBJ files contain the byte 0x85 (an ellipsis in
  Windows-1252, "next line" in latin-1); Python's ``str.splitlines``, which SentEval's loader calls,
  treats it as a line break and cuts 23 MR and 21 SUBJ sentences in two (10,685 and 10,021 items
  instead of 10,662 and 10,000). SentEval's download script never meets this: it passes the files
  through ``cat -v`` first, which rewrites the byte as ``M-^E``. Here the byte stays inside its
  line and, being whitespace to ``str.split``, becomes a space.
* Empty lines are items, as in SentEval (CR has 4, MPQA 3): they keep their label so the sizes are
  SentEval's. The evaluator gives an empty sentence a zero feature vector.

Sizes (SentEval's): MR 10,662, CR 3,775, SUBJ 10,000, MPQA 10,606; SST-2 67,349 / 872 / 1,821;
TREC 5,452 / 500; MRPC 4,076 / 1,725 pairs.

**Hub** (``SBERT_TUTOR_DATA`` unset): the copies in ``HUB_DATASETS``. They differ from
SentEval's files; ``HUB_NOTES`` says how, and every loaded task carries its note.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sbert_tutor.data.files import (
    KNOWN_ROWS,
    DataFileError,
    check_final_newline,
    check_row_count,
    load_hub_dataset,
    local_file,
    local_root,
)
from sbert_tutor.settings import LOCAL_DATA_SOURCE

__all__ = ["TRANSFER_TASKS", "TransferSplit", "TransferTask", "load_transfer"]

logger = logging.getLogger(__name__)

#: SentEval's seven transfer tasks (SBERT's Table 5), in its order.
TRANSFER_TASKS = ("mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc")
#: Each task's name as the papers' tables print it.
DISPLAY_NAMES = {
    "mr": "MR",
    "cr": "CR",
    "subj": "SUBJ",
    "mpqa": "MPQA",
    "sst2": "SST2",
    "trec": "TREC",
    "mrpc": "MRPC",
}
#: Class names by label id, in SentEval's numbering.
_LABEL_NAMES: dict[str, tuple[str, ...]] = {
    "mr": ("negative", "positive"),
    "cr": ("negative", "positive"),
    "subj": ("subjective", "objective"),
    "mpqa": ("negative", "positive"),
    "sst2": ("negative", "positive"),
    "trec": ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"),
    "mrpc": ("not paraphrase", "paraphrase"),
}
#: Splits of each task: ``all`` for the tasks SentEval scores by cross-validation.
SPLITS: dict[str, tuple[str, ...]] = {
    "mr": ("all",),
    "cr": ("all",),
    "subj": ("all",),
    "mpqa": ("all",),
    "sst2": ("train", "dev", "test"),
    "trec": ("train", "test"),
    "mrpc": ("train", "test"),
}
# task -> (folder, ((file, label), ...)): the label-1 file first, as SentEval concatenates them.
_BINARY_FILES = {
    "mr": ("MR", (("rt-polarity.pos", 1), ("rt-polarity.neg", 0))),
    "cr": ("CR", (("custrev.pos", 1), ("custrev.neg", 0))),
    "subj": ("SUBJ", (("subj.objective", 1), ("subj.subjective", 0))),
    "mpqa": ("MPQA", (("mpqa.pos", 1), ("mpqa.neg", 0))),
}
_SPLIT_FILES = {
    "sst2": {s: f"SST/binary/sentiment-{s}" for s in ("train", "dev", "test")},
    "trec": {"train": "TREC/train_5500.label", "test": "TREC/TREC_10.label"},
    "mrpc": {"train": "MRPC/msr_paraphrase_train.txt", "test": "MRPC/msr_paraphrase_test.txt"},
}
_MRPC_HEADER = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]


@dataclass(frozen=True)
class HubPart:
    """One hub split that feeds one of our splits: its id, split and columns."""

    dataset_id: str
    split: str
    text_columns: tuple[str, ...] = ("text",)
    label_column: str = "label"


#: Hub copies used when ``SBERT_TUTOR_DATA`` is unset: task -> our split -> the hub parts joined.
HUB_DATASETS: dict[str, dict[str, tuple[HubPart, ...]]] = {
    "mr": {
        "all": tuple(
            HubPart("cornell-movie-review-data/rotten_tomatoes", s)
            for s in ("train", "validation", "test")
        )
    },
    "cr": {"all": tuple(HubPart("SetFit/SentEval-CR", s) for s in ("train", "test"))},
    "subj": {"all": tuple(HubPart("SetFit/subj", s) for s in ("train", "test"))},
    "mpqa": {"all": tuple(HubPart("jxm/mpqa", s, ("sentence",)) for s in ("train", "dev", "test"))},
    "sst2": {
        "train": (HubPart("stanfordnlp/sst2", "train", ("sentence",)),),
        "dev": (HubPart("stanfordnlp/sst2", "validation", ("sentence",)),),
        "test": (HubPart("SetFit/sst2", "test"),),
    },
    "trec": {
        "train": (HubPart("CogComp/trec", "train", label_column="coarse_label"),),
        "test": (HubPart("CogComp/trec", "test", label_column="coarse_label"),),
    },
    "mrpc": {
        "train": (
            HubPart("SetFit/mrpc", "train", ("text1", "text2")),
            HubPart("SetFit/mrpc", "validation", ("text1", "text2")),
        ),
        "test": (HubPart("SetFit/mrpc", "test", ("text1", "text2")),),
    },
}
#: Hub label id -> SentEval label id, where the two differ. CogComp/trec numbers its coarse classes
#: ABBR, ENTY, DESC, HUM, LOC, NUM; SentEval ABBR, DESC, ENTY, HUM, LOC, NUM.
_HUB_LABEL_MAPS: dict[str, dict[int, int]] = {"trec": {0: 0, 1: 2, 2: 1, 3: 3, 4: 4, 5: 5}}
#: How each hub copy differs from SentEval's files (kept on every task loaded from the hub).
HUB_NOTES = {
    "mr": "rotten_tomatoes: the 10,662 sentences of MR, split 8,530/1,066/1,066 (rejoined here), "
    "UTF-8 text instead of the latin-1 files",
    "cr": "SetFit/SentEval-CR: a port of SentEval's CR split into train/test (rejoined here); "
    "its empty lines may be dropped",
    "subj": "SetFit/subj: SentEval's SUBJ split 8,000/2,000 (rejoined here); label ids follow "
    "the hub copy, which does not change accuracy",
    "mpqa": "jxm/mpqa: 8,603/256/2,000 phrases (rejoined: 10,859), not SentEval's 10,606",
    "sst2": "train and dev from stanfordnlp/sst2 (GLUE: 67,349 phrases, 872 sentences); GLUE's "
    "test has no labels, so test comes from SetFit/sst2 (1,821 labelled sentences)",
    "trec": "CogComp/trec: 5,452/500 questions with the original quotes; coarse labels renumbered "
    "to SentEval's order",
    "mrpc": "SetFit/mrpc (GLUE's MRPC): train 3,668 + validation 408 = SentEval's 4,076 train "
    "pairs; test 1,725",
}


@dataclass(frozen=True)
class TransferSplit:
    """Sentences (or sentence pairs) with integer class labels.

    Attributes:
        sentences: the texts, whitespace-normalised; ``""`` for an empty line of the file.
        labels: class ids, int64, aligned with ``sentences``.
        sentences2: the second sentence of each pair (MRPC), else ``None``.
    """

    sentences: list[str]
    labels: np.ndarray
    sentences2: list[str] | None = None

    def __post_init__(self) -> None:
        n = len(self.sentences)
        if len(self.labels) != n or (self.sentences2 is not None and len(self.sentences2) != n):
            raise ValueError(
                f"sentences ({n}), labels ({len(self.labels)})"
                + (
                    f" and sentences2 ({len(self.sentences2)})"
                    if self.sentences2 is not None
                    else ""
                )
                + " must have the same length"
            )

    def __len__(self) -> int:
        return len(self.sentences)

    def class_counts(self) -> dict[int, int]:
        """Items per label id."""
        ids, counts = np.unique(self.labels, return_counts=True)
        return {int(i): int(c) for i, c in zip(ids, counts, strict=True)}


@dataclass(frozen=True)
class TransferTask:
    """One transfer task: its splits, class names and where it came from.

    Attributes:
        name: ``"mr"`` ... ``"mrpc"``.
        splits: ``{"all": ...}`` for MR, CR, SUBJ, MPQA (scored by cross-validation);
            ``train``/``dev``/``test`` for SST-2; ``train``/``test`` for TREC and MRPC.
        label_names: class names by label id.
        source: a folder or hub ids, in words.
        files: local files read (hashed into provenance); empty for hub data.
        note: how the source differs from SentEval's files (hub copies), else ``""``.
    """

    name: str
    splits: dict[str, TransferSplit]
    label_names: tuple[str, ...]
    source: str
    files: tuple[Path, ...] = ()
    note: str = ""
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def display_name(self) -> str:
        return DISPLAY_NAMES[self.name]

    @property
    def is_pair_task(self) -> bool:
        return next(iter(self.splits.values())).sentences2 is not None

    def sizes(self) -> dict[str, int]:
        """Items per split."""
        return {name: len(split) for name, split in self.splits.items()}

    def to_frame(self) -> pd.DataFrame:
        """All items as a DataFrame: split, sentence(s), label id and class name."""
        frames = []
        for name, split in self.splits.items():
            frame = pd.DataFrame({"split": name, "sentence": split.sentences})
            if split.sentences2 is not None:
                frame["sentence2"] = split.sentences2
            frame["label"] = split.labels
            frame["class"] = [self.label_names[i] for i in split.labels]
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)


def check_transfer_task(name: str) -> str:
    """Normalise a task name (``"SST-2"`` -> ``"sst2"``) or raise ``ValueError`` listing valid ones."""
    key = str(name).strip().lower().replace("-", "").replace("_", "")
    key = {"sst": "sst2", "msrp": "mrpc"}.get(key, key)
    if key not in TRANSFER_TASKS:
        close = difflib.get_close_matches(key, TRANSFER_TASKS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"unknown transfer task {name!r}; valid names: {', '.join(TRANSFER_TASKS)}.{hint}"
        )
    return key


def parse_transfer_tasks(tasks: str | Sequence[str]) -> list[str]:
    """``"all"`` -> the seven tasks; ``"mr,trec"`` or a list -> those (validated, deduplicated)."""
    if isinstance(tasks, str):
        tasks = list(TRANSFER_TASKS) if tasks.strip().lower() == "all" else tasks.split(",")
    names = [check_transfer_task(t) for t in tasks if str(t).strip()]
    if not names:
        raise ValueError(f"no task given; choose from {', '.join(TRANSFER_TASKS)} or 'all'")
    return list(dict.fromkeys(names))


def load_transfer(name: str) -> TransferTask:
    """Load one transfer task with all its splits.

    Args:
        name: ``"mr"``, ``"cr"``, ``"subj"``, ``"mpqa"``, ``"sst2"``, ``"trec"`` or ``"mrpc"``
            (case-insensitive; ``"SST-2"`` works).

    Returns:
        :class:`TransferTask`.

    Raises:
        ValueError: unknown task, or a malformed line (the message names file and line).
        DataNotFoundError: neither ``SBERT_TUTOR_DATA`` nor the hub can provide the data.
    """
    task = check_transfer_task(name)
    root = local_root()
    data = _load_local(root, task) if root is not None else _load_hub(task)
    logger.info("loaded %s: %s from %s", task, data.sizes(), data.source)
    return data


# ---------------------------------------------------------------------------------------- local
#: Files published without a final newline (Microsoft's MRPC files); their counts still tell a cut.
_NO_FINAL_NEWLINE = ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt")


def _lines(path: Path, encoding: str, relative: str, header: bool = False) -> list[str]:
    """The lines of ``path`` (split at ``\\n`` only), decoded and checked.

    Refused, naming the file and the line: an empty file, a last line without a newline (a cut
    copy; MRPC's files are published without one), bytes that do not decode, and a number of
    items (after the header line, if ``header``) other than the published one in ``KNOWN_ROWS``
    (``SBERT_TUTOR_CHECK_SIZES=0`` skips that).
    """
    raw = path.read_bytes()
    if not raw.strip():
        raise DataFileError(
            f"{path} is empty: expected one item a line (see sbert_tutor.data.senteval)"
        )
    if path.name not in _NO_FINAL_NEWLINE:
        check_final_newline(path, raw)
    chunks = raw.split(b"\n")
    if chunks[-1] == b"":  # the file ends with a newline
        chunks.pop()
    lines = []
    for line_no, chunk in enumerate(chunks, start=1):
        try:
            lines.append(chunk.decode(encoding))
        except UnicodeDecodeError as exc:
            raise DataFileError(
                f"{path}:{line_no}: not {encoding} text ({exc.reason} at byte {exc.start} of the "
                "line); the SentEval files are latin-1 (MR, CR, SUBJ, MPQA, TREC) or UTF-8 (SST, "
                "MRPC)"
            ) from None
    first = 2 if header else 1
    what = f"SentEval's {relative.split('/')[1]} ({path.name})"
    check_row_count(path, len(lines) - first + 1, KNOWN_ROWS.get(relative), what, first)
    return lines


def _words(text: str) -> str:
    """SentEval's tokens joined by single spaces."""
    return " ".join(text.split())


def _read_binary(root: Path, task: str) -> tuple[TransferSplit, tuple[Path, ...]]:
    folder, parts = _BINARY_FILES[task]
    sentences: list[str] = []
    labels: list[int] = []
    files = []
    for filename, label in parts:
        relative = f"senteval/{folder}/{filename}"
        path = local_file(root, relative)
        files.append(path)
        lines = _lines(path, "latin-1", relative)
        sentences += [_words(line) for line in lines]
        labels += [label] * len(lines)
    return TransferSplit(sentences, np.asarray(labels, dtype=np.int64)), tuple(files)


def _parse_sst(path: Path, line_no: int, line: str) -> tuple[str, int]:
    fields = line.strip().split("\t")
    if len(fields) != 2 or fields[1] not in ("0", "1"):
        raise DataFileError(
            f"{path}:{line_no}: expected 'sentence<TAB>label' with label 0 or 1, got {line[:80]!r}"
        )
    return _words(fields[0]), int(fields[1])


def _parse_trec(path: Path, line_no: int, line: str) -> tuple[str, int]:
    coarse, sep, rest = line.strip().partition(":")
    fine_and_question = rest.split(" ", 1)
    if not sep or coarse not in _LABEL_NAMES["trec"] or len(fine_and_question) != 2:
        raise DataFileError(
            f"{path}:{line_no}: expected 'COARSE:fine question' with COARSE one of "
            f"{', '.join(_LABEL_NAMES['trec'])}, got {line[:80]!r}"
        )
    return _words(fine_and_question[1]), _LABEL_NAMES["trec"].index(coarse)


def _read_lines_as(
    path: Path,
    relative: str,
    encoding: str,
    parse: Callable[[Path, int, str], tuple[str, int]],
) -> TransferSplit:
    sentences, labels = [], []
    for line_no, line in enumerate(_lines(path, encoding, relative), start=1):
        sentence, label = parse(path, line_no, line)
        sentences.append(sentence)
        labels.append(label)
    return TransferSplit(sentences, np.asarray(labels, dtype=np.int64))


def _read_mrpc(path: Path, relative: str) -> TransferSplit:
    lines = _lines(path, "utf-8", relative, header=True)
    header = lines[0].lstrip("\ufeff").strip().split("\t")
    if header != _MRPC_HEADER:
        raise DataFileError(
            f"{path}:1: expected the MRPC header {' | '.join(_MRPC_HEADER)} (tab-separated), "
            f"got {lines[0][:80]!r}"
        )
    first, second, labels = [], [], []
    for line_no, line in enumerate(lines[1:], start=2):
        fields = line.strip().split("\t")
        if len(fields) != 5 or fields[0] not in ("0", "1"):
            raise DataFileError(
                f"{path}:{line_no}: expected 5 tab-separated fields (quality 0 or 1, two ids, two "
                f"sentences), got {len(fields)} in {line[:80]!r}"
            )
        first.append(_words(fields[3]))
        second.append(_words(fields[4]))
        labels.append(int(fields[0]))
    return TransferSplit(first, np.asarray(labels, dtype=np.int64), second)


def _load_local(root: Path, task: str) -> TransferTask:
    if task in _BINARY_FILES:
        split, files = _read_binary(root, task)
        splits = {"all": split}
    else:
        relatives = {s: f"senteval/{f}" for s, f in _SPLIT_FILES[task].items()}
        paths = {s: local_file(root, r) for s, r in relatives.items()}
        files = tuple(paths.values())
        if task == "mrpc":
            splits = {s: _read_mrpc(paths[s], r) for s, r in relatives.items()}
        elif task == "sst2":
            splits = {
                s: _read_lines_as(paths[s], r, "utf-8", _parse_sst) for s, r in relatives.items()
            }
        else:
            splits = {
                s: _read_lines_as(paths[s], r, "latin-1", _parse_trec) for s, r in relatives.items()
            }
    return TransferTask(
        name=task,
        splits=splits,
        label_names=_LABEL_NAMES[task],
        source=LOCAL_DATA_SOURCE,
        files=files,
    )


# ------------------------------------------------------------------------------------------ hub
def _hub_labels(task: str, values: Sequence[object], where: str) -> list[int]:
    mapping = _HUB_LABEL_MAPS.get(task)
    n_classes = len(_LABEL_NAMES[task])
    labels = []
    for i, value in enumerate(values):
        label = int(value)  # type: ignore[call-overload]
        label = mapping.get(label, -1) if mapping else label
        if not 0 <= label < n_classes:
            raise ValueError(
                f"{where} row {i}: label {value!r} is not one of the {n_classes} classes of {task}"
            )
        labels.append(label)
    return labels


def _load_hub(task: str) -> TransferTask:
    splits = {}
    ids = []
    for split, parts in HUB_DATASETS[task].items():
        first: list[str] = []
        second: list[str] | None = [] if len(parts[0].text_columns) == 2 else None
        labels: list[int] = []
        for part in parts:
            where = f"{part.dataset_id}[{part.split}]"
            ds = load_hub_dataset(f"{task}/{split}", part.dataset_id, split=part.split)
            missing = [c for c in (*part.text_columns, part.label_column) if c not in ds]
            if missing:
                raise ValueError(f"{where} has no column(s) {', '.join(missing)}")
            first += [_words(str(t)) for t in ds[part.text_columns[0]]]
            if second is not None:
                second += [_words(str(t)) for t in ds[part.text_columns[1]]]
            labels += _hub_labels(task, ds[part.label_column], where)
            ids.append(where)
        splits[split] = TransferSplit(first, np.asarray(labels, dtype=np.int64), second)
    return TransferTask(
        name=task,
        splits=splits,
        label_names=_LABEL_NAMES[task],
        source="hub:" + ", ".join(ids),
        note=HUB_NOTES[task],
    )


# ------------------------------------------------------------------------------------ subsets
def _stratified_indices(labels: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices drawn without replacement, class shares kept (largest remainder), sorted."""
    classes, counts = np.unique(labels, return_counts=True)
    exact = counts * n / len(labels)
    take = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - take), kind="stable")[: n - take.sum()]:
        take[i] += 1
    chosen = [
        rng.choice(np.flatnonzero(labels == c), size=t, replace=False)
        for c, t in zip(classes, take, strict=True)
    ]
    return np.sort(np.concatenate(chosen))


def subsample(task: TransferTask, max_items: int, seed: int = 1111) -> TransferTask:
    """At most ``max_items`` items of every split: a seeded draw that keeps the class shares.

    For quick runs (the book's quick profile); the result's ``meta["subsample"]`` records the cap.
    """
    if max_items < 1:
        raise ValueError(f"max_items must be >= 1, got {max_items}")
    rng = np.random.default_rng(seed)
    splits = {}
    for name, split in task.splits.items():
        if len(split) <= max_items:
            splits[name] = split
            continue
        keep = _stratified_indices(split.labels, max_items, rng)
        splits[name] = TransferSplit(
            [split.sentences[i] for i in keep],
            split.labels[keep],
            None if split.sentences2 is None else [split.sentences2[i] for i in keep],
        )
    return TransferTask(
        name=task.name,
        splits=splits,
        label_names=task.label_names,
        source=task.source,
        files=task.files,
        note=task.note,
        meta={**task.meta, "subsample": f"at most {max_items} items a split, seed {seed}"},
    )
