"""Reading the local data folder (``SBERT_TUTOR_DATA``), checked, with errors that point at it.

Every loader reads its tab-separated files through ``read_table``, which refuses a file
rather than load part of it: a file that does not end with a newline (a copy or download cut
short), a line with too few or too many fields, a header without the columns the loader needs,
no data rows, bytes that are not UTF-8, an incomplete gzip stream, and (``read_data_file``)
a row count that differs from the published size of a named data set (``KNOWN_ROWS``).
Every message names the file, the line and what to do. ``Table.numbers`` does the same for
a column that must hold numbers.
"""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sbert_tutor.settings import CHECK_SIZES_ENV, DATA_ENV, check_sizes, data_dir, hf_offline

#: Published row counts (data rows, header excluded) of the named data sets, by path inside the
#: data folder: the sizes their sources state (STSb, SICK, SentEval's STS12-16, SNLI 1.0, MS MARCO,
#: SentEval's transfer tasks).
STS_SUBSET_ROWS: dict[str, dict[str, int]] = {
    "STS12": {
        "MSRpar": 750,
        "MSRvid": 750,
        "SMTeuroparl": 459,
        "surprise.OnWN": 750,
        "surprise.SMTnews": 399,
    },
    "STS13": {"FNWN": 189, "headlines": 750, "OnWN": 561},
    "STS14": {
        "deft-forum": 450,
        "deft-news": 300,
        "headlines": 750,
        "images": 750,
        "OnWN": 750,
        "tweet-news": 750,
    },
    "STS15": {
        "answers-forums": 375,
        "answers-students": 750,
        "belief": 375,
        "headlines": 750,
        "images": 750,
    },
    "STS16": {
        "answer-answer": 254,
        "headlines": 249,
        "plagiarism": 230,
        "postediting": 244,
        "question-question": 209,
    },
}
#: Data rows (header excluded) of every named file, by path inside the data folder:
#: ``read_data_file`` refuses a file of another size.
KNOWN_ROWS: dict[str, int] = {
    "stsb/sts-train.tsv": 5749,
    "stsb/sts-dev.tsv": 1500,
    "stsb/sts-test.tsv": 1379,
    "sick/SICK_train.tsv": 4500,
    "sick/SICK_trial.tsv": 500,
    "sick/SICK_test.tsv": 4927,
    "nli/snli_dev.tsv": 9842,
    "nli/snli_test.tsv": 9824,
    "msmarco/dev_small/queries.tsv": 6980,
    "msmarco/dev_small/qrels.tsv": 7437,
    "msmarco/dev_small_subset/queries.tsv": 540,
    "msmarco/dev_small_subset/qrels.tsv": 540,
    "msmarco/dev_small_subset/bm25_candidates.tsv": 12000,
    "msmarco/trec_dl2019/queries.tsv": 43,
    "msmarco/trec_dl2019/qrels.tsv": 9260,
    "msmarco/trec_dl2020/queries.tsv": 200,
    "msmarco/trec_dl2020/qrels.tsv": 11386,
    "msmarco/corpus_mini.tsv": 16799,
    "msmarco/train_triples_toy.tsv.gz": 100,
    # SentEval's transfer tasks (one item a line; MRPC after its header line)
    "senteval/MR/rt-polarity.pos": 5331,
    "senteval/MR/rt-polarity.neg": 5331,
    "senteval/CR/custrev.pos": 2407,
    "senteval/CR/custrev.neg": 1368,
    "senteval/SUBJ/subj.objective": 5000,
    "senteval/SUBJ/subj.subjective": 5000,
    "senteval/MPQA/mpqa.pos": 3312,
    "senteval/MPQA/mpqa.neg": 7294,
    "senteval/SST/binary/sentiment-train": 67349,
    "senteval/SST/binary/sentiment-dev": 872,
    "senteval/SST/binary/sentiment-test": 1821,
    "senteval/TREC/train_5500.label": 5452,
    "senteval/TREC/TREC_10.label": 500,
    "senteval/MRPC/msr_paraphrase_train.txt": 4076,
    "senteval/MRPC/msr_paraphrase_test.txt": 1725,
    **{
        f"sts/{variant}/{year}/{subset}.tsv": rows
        for variant in ("raw", "senteval_tok")
        for year, subsets in STS_SUBSET_ROWS.items()
        for subset, rows in subsets.items()
    },
}
_AGAIN = "copy or download it again"


class DataNotFoundError(FileNotFoundError):
    """Raised when a data set is neither in ``SBERT_TUTOR_DATA`` nor reachable on the hub."""


class DataFileError(ValueError):
    """A data file is damaged or malformed; the message names the file, the line, what to do."""


def local_root() -> Path | None:
    """The data folder named by ``SBERT_TUTOR_DATA`` (checked to exist), or ``None`` if unset."""
    root = data_dir()
    if root is None:
        return None
    if not root.is_dir():
        raise DataNotFoundError(
            f"{DATA_ENV}={root} is not a folder. Point {DATA_ENV} at the data folder "
            "(its layout is listed in sbert_tutor.settings), or unset it to "
            "download from the Hugging Face hub."
        )
    return root


def local_file(root: Path, relative: str) -> Path:
    """``root / relative``, or a :class:`DataNotFoundError` that names the file and the setting."""
    path = root / relative
    if not path.is_file():
        raise DataNotFoundError(
            f"{path} does not exist. {DATA_ENV}={root} must contain {relative} "
            "(the layout is listed in sbert_tutor.settings)."
        )
    return path


def _offline_error(what: str) -> DataNotFoundError:
    """The error for 'no local folder and no hub': it says both ways out."""
    why = (
        "HF_HUB_OFFLINE=1 is set"
        if hf_offline()
        else "the hub could not be reached (or `datasets` is not installed)"
    )
    return DataNotFoundError(
        f"cannot load {what}: {DATA_ENV} is not set and {why}. Either set "
        f"{DATA_ENV}=/path/to/data (the layout of the project's shared/data folder) or go online "
        "with `pip install datasets` and HF_HUB_OFFLINE unset."
    )


# ----------------------------------------------------------------------------- checked reading


@dataclass(frozen=True)
class Table:
    """The checked rows of a tab-separated file with a header line.

    Attributes:
        path: the file.
        header: its column names (line 1).
        rows: the data rows, each with exactly one field per column; row ``i`` is on line
            ``i + 2`` of the file (``line``).
    """

    path: Path
    header: tuple[str, ...]
    rows: list[list[str]]

    def __len__(self) -> int:
        return len(self.rows)

    @staticmethod
    def line(i: int) -> int:
        """The file line of data row ``i`` (1-based; line 1 is the header)."""
        return i + 2

    def where(self, i: int) -> str:
        """``path:line`` of data row ``i``, for messages."""
        return f"{self.path}:{self.line(i)}"

    def column(self, name: str) -> list[str]:
        """One column's values, in file order."""
        j = self.header.index(name)
        return [row[j] for row in self.rows]

    def texts(self, name: str) -> list[str]:
        """A text column whose every value must be non-empty (after stripping spaces)."""
        values = self.column(name)
        for i, text in enumerate(values):
            if not text.strip():
                raise DataFileError(
                    f"{self.where(i)}: {name} is empty. Every row needs a text there: fix or "
                    f"remove that line (or {_AGAIN} if the file should be the published one)."
                )
        return values

    def records(self) -> Iterator[dict[str, str]]:
        """The rows as dicts keyed by the header."""
        for row in self.rows:
            yield dict(zip(self.header, row, strict=True))

    def numbers(
        self,
        name: str,
        integer: bool = False,
        low: float | None = None,
        high: float | None = None,
    ) -> list[Any]:
        """A column parsed as finite numbers (``int`` values with ``integer=True``), each within
        ``[low, high]`` when given.

        Raises:
            DataFileError: naming the file, the line and the value that is not a (finite,
                whole, in-range) number.
        """
        out: list[Any] = []
        for i, text in enumerate(self.column(name)):
            try:
                value = float(text)
            except ValueError:
                raise DataFileError(
                    f"{self.where(i)}: {name} is {text!r}, which is not a number. Fix or remove "
                    f"that line (or {_AGAIN} if the file should be the published one)."
                ) from None
            if not math.isfinite(value):
                raise DataFileError(
                    f"{self.where(i)}: {name} is {text!r}; {name} must be a finite number. Fix "
                    "or remove that line."
                )
            if integer:
                if not value.is_integer():
                    raise DataFileError(
                        f"{self.where(i)}: {name} is {text!r}, not an integer. Fix or remove "
                        "that line."
                    )
                value = int(value)
            if (low is not None and value < low) or (high is not None and value > high):
                raise DataFileError(
                    f"{self.where(i)}: {name} is {text!r}, outside the data set's scale "
                    f"[{low:g}, {high:g}]. Fix or remove that line (or {_AGAIN})."
                )
            out.append(value)
        return out


def _raw_text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataFileError(
                f"{path} is not a complete gzip file ({exc}): it was probably cut off while "
                f"being copied or downloaded; {_AGAIN}."
            ) from None
    if not data:
        raise DataFileError(
            f"{path}:1: the file is empty (0 bytes), but a data file needs a header line and data "
            f"rows: {_AGAIN}."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = data[exc.start : exc.end]
        raise DataFileError(
            f"{path}:{line}: byte {bad!r} at column {column} is not UTF-8. Data files are "
            "UTF-8: convert the file (e.g. `iconv -f latin1 -t utf-8`) or "
            f"{_AGAIN}."
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def check_final_newline(path: Path, text: str | bytes) -> None:
    """Refuse a file whose last line has no newline: a copy or download cut off mid-line."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    if not text.endswith(newline):  # type: ignore[arg-type]
        last = text.count(newline) + 1  # type: ignore[arg-type]
        raise DataFileError(
            f"{path}:{last}: the last line does not end with a newline, so the file was probably "
            f"cut off mid-line: {_AGAIN}. (A file you wrote yourself must end with a newline.)"
        )


def check_row_count(
    path: Path, rows: int, expected_rows: int | None, what: str, first_line: int = 2
) -> None:
    """Refuse ``rows`` data rows (from line ``first_line`` on) where the data set has another count.

    Skipped when ``expected_rows`` is ``None`` or ``SBERT_TUTOR_CHECK_SIZES=0``.
    """
    if expected_rows is not None and rows != expected_rows and check_sizes():
        raise DataFileError(
            f"{path}: {rows:,} data rows (lines {first_line}-{rows + first_line - 1}), but {what} "
            f"has {expected_rows:,}: the file is incomplete or not the published one; {_AGAIN}. "
            f"If you changed it on purpose, set {CHECK_SIZES_ENV}=0."
        )


def read_table(
    path: Path,
    columns: Sequence[str] = (),
    expected_rows: int | None = None,
    what: str | None = None,
) -> Table:
    """Read and check a tab-separated file with a header line (``.gz`` allowed).

    Quoting is off: quote characters are text (the data folder's sentences contain them).

    Args:
        path: the file.
        columns: columns the caller needs; a header without them is an error.
        expected_rows: the published number of data rows; another count is an error unless
            ``SBERT_TUTOR_CHECK_SIZES=0``.
        what: the data set's name, for messages.

    Raises:
        DataFileError: see the module docstring; the message names the file and the line.
    """
    path = Path(path)
    what = what or path.name
    text = _raw_text(path)
    check_final_newline(path, text)
    lines = text[:-1].split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    header = tuple(lines[0].split("\t"))
    missing = [c for c in columns if c not in header]
    if missing:
        raise DataFileError(
            f"{path}:1: the header has columns {list(header)}, but {what} needs "
            f"{list(columns)} (missing {missing}). Is this the right file? Otherwise {_AGAIN}."
        )
    rows = [line.split("\t") for line in lines[1:]]
    for i, row in enumerate(rows):
        if len(row) != len(header):
            found = "an empty line" if row == [""] else f"{len(row)} fields"
            raise DataFileError(
                f"{path}:{Table.line(i)}: {found}, but the header (line 1) has {len(header)} "
                "columns: a tab inside a text, a missing field or a line broken in two. Fix that "
                f"line, or {_AGAIN}."
            )
    if not rows:
        raise DataFileError(
            f"{path}:2: a header (line 1) but no data rows; {what} needs at least one: {_AGAIN}."
        )
    check_row_count(path, len(rows), expected_rows, what)
    return Table(path, header, rows)


def read_data_file(
    root: Path, relative: str, columns: Sequence[str] = (), what: str | None = None
) -> Table:
    """``read_table`` of ``root / relative``, checked against its size in ``KNOWN_ROWS``."""
    return read_table(
        local_file(root, relative), columns, KNOWN_ROWS.get(relative), what or relative
    )


def read_tsv(path: Path) -> Iterator[dict[str, str]]:
    """Yield the rows of a checked tab-separated file (``.gz`` allowed) as dicts keyed by its header.

    Kept for callers that iterate; see ``read_table`` for the checks.
    """
    yield from read_table(path).records()


def load_hub_dataset(
    what: str, dataset_id: str, name: str | None = None, *, split: str, streaming: bool = False
) -> Any:
    """``datasets.load_dataset(dataset_id, name, split=split, streaming=streaming)`` with errors
    that say how to get ``what`` another way.

    Offline (``HF_HUB_OFFLINE=1``), without ``datasets``, or when the hub fails, the error names
    ``SBERT_TUTOR_DATA`` as the alternative. The parameters are ``load_dataset``'s that the
    library uses, named, so a misspelt one is Python's own ``TypeError`` rather than a hub error.
    """
    if hf_offline():
        raise _offline_error(what)
    try:
        from datasets import load_dataset
    except ImportError:
        raise _offline_error(what) from None
    try:
        names = () if name is None else (name,)
        extra = {"streaming": True} if streaming else {}
        return load_dataset(dataset_id, *names, split=split, **extra)  # the call as written before
    except Exception as exc:  # network errors come in many types
        raise _offline_error(f"{what} from the hub ({dataset_id}: {exc})") from exc


__all__ = ["DataFileError", "DataNotFoundError", "local_file", "local_root", "read_tsv"]
