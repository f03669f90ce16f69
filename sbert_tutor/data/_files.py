"""Reading the local data folder (``SBERT_TUTOR_DATA``) and the errors that point at it."""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sbert_tutor.settings import DATA_ENV, data_dir, hf_offline

# STS and NLI TSVs contain quote characters that are part of the text: never let the csv
# module interpret them (QUOTE_NONE).
csv.field_size_limit(2**31 - 1)


class DataNotFoundError(FileNotFoundError):
    """Raised when a data set is neither in ``SBERT_TUTOR_DATA`` nor reachable on the hub."""


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


def offline_error(what: str) -> DataNotFoundError:
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


def read_tsv(path: Path) -> Iterator[dict[str, str]]:
    """Yield the rows of a tab-separated file (``.gz`` allowed) as dicts keyed by its header.

    Quoting is off: quote characters are text. Rows with a different field count than the
    header are an error, not a silent shift of columns.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        for line_no, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise ValueError(
                    f"{path}:{line_no} has {len(row)} fields, the header has {len(header)}"
                )
            yield dict(zip(header, row, strict=False))


def load_hub_dataset(what: str, dataset_id: str, *args: Any, **kwargs: Any) -> Any:
    """``datasets.load_dataset(dataset_id, ...)`` with errors that say how to get ``what`` another way.

    Offline (``HF_HUB_OFFLINE=1``), without ``datasets``, or when the hub fails, the error names
    ``SBERT_TUTOR_DATA`` as the alternative.
    """
    if hf_offline():
        raise offline_error(what)
    try:
        from datasets import load_dataset
    except ImportError:
        raise offline_error(what) from None
    try:
        return load_dataset(dataset_id, *args, **kwargs)
    except Exception as exc:  # network errors come in many types
        raise offline_error(f"{what} from the hub ({dataset_id}: {exc})") from exc
