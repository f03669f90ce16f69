"""Every setting the library reads, in one place.

=======================================  ==============================================================================
environment variable                     meaning
=======================================  ==============================================================================
``SBERT_TUTOR_DATA``                     Folder with the evaluation/training data: ``stsb/sts-{train,dev,test}.tsv``,
                                         ``sick/SICK_{train,trial,test}.tsv``, ``sts/raw/STS1x/<subset>.tsv``,
                                         ``nli/snli_{dev,test}.tsv`` and ``msmarco/`` (``corpus_mini.tsv``, the
                                         dev subset's and TREC DL19's queries and qrels, BM25 candidates).
                                         Unset: data come from the Hugging Face hub through ``datasets``.
``SBERT_TUTOR_CACHE``                    Folder where data rebuilt from the hub are kept (the MS MARCO files of the
                                         data folder, rebuilt from id lists shipped with the library when
                                         ``SBERT_TUTOR_DATA`` is unset); default ``~/.cache/sbert_tutor``.
``SBERT_TUTOR_MODELS``                   Folder of local models, searched offline: ``<folder>/<org>/<name>`` or
                                         ``<folder>/<name>`` (e.g. ``models/sentence-transformers/all-MiniLM-L6-v2``).
``SBERT_TUTOR_PROFILE``                  ``quick`` (CPU, small subsets), ``t4`` (one T4-class GPU, fp16, from a
                                         downloadable start) or ``paper`` (each paper's own setup; hours of GPU time); unset:
                                         ``t4`` when CUDA is available, else ``quick`` (:mod:`sbert_tutor.book.profiles`).
``HF_HUB_OFFLINE``                       The Hugging Face switch: ``1`` means never touch the network.
``SBERT_TUTOR_CHECK_SIZES``              ``0`` accepts data files whose row count differs from the published size
                                         of their data set (a subset made on purpose); default ``1``: such a file
                                         is refused as incomplete.
``SBERT_TUTOR_TOKENIZER_PARALLELISM``    ``0`` lets ``TOKENIZERS_PARALLELISM=false`` hold while encoding; default:
                                         a fast tokenizer uses all cores in ``encode`` whatever that variable
                                         says, except in forked or ``multiprocessing`` child processes
                                         (:mod:`sbert_tutor.runtime.tokenizing`).
=======================================  ==============================================================================

Where the project is published: one setting, two constants (not environment variables).
:data:`REPOSITORY_URL` is the GitHub repository and :data:`RELEASE_REF` the release (git tag,
``v`` + the version in ``pyproject.toml``) the book's Colab badges open and its install cells
install. ``pyproject.toml``'s ``[project.urls]``, ``_config.yml``'s repository and launch
buttons, the install lines of ``README.md`` and ``book/index.md`` and cells 1-2 of every chapter
are made from them (see README, "Publishing").
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "CACHE_ENV",
    "CHECK_SIZES_ENV",
    "DATA_ENV",
    "MODELS_ENV",
    "OFFLINE_ENV",
    "PROFILE_ENV",
    "RELEASE_REF",
    "REPOSITORY_URL",
    "TOKENIZER_PARALLELISM_ENV",
    "cache_dir",
    "check_sizes",
    "data_dir",
    "hf_offline",
    "models_dir",
]

#: The GitHub repository the project is published at (badges, install cells, project URLs).
REPOSITORY_URL = "https://github.com/sbert-tutor/sbert-tutor"
#: The release the book is written for: the git tag the badges open and the install cells install.
RELEASE_REF = "v0.1.0"

#: The environment variable naming the data folder.
DATA_ENV = "SBERT_TUTOR_DATA"
#: The environment variable naming the cache folder.
CACHE_ENV = "SBERT_TUTOR_CACHE"
#: The environment variable naming a folder of local models.
MODELS_ENV = "SBERT_TUTOR_MODELS"
#: The environment variable naming the book's profile.
PROFILE_ENV = "SBERT_TUTOR_PROFILE"
#: The environment variable naming Hugging Face's offline switch.
OFFLINE_ENV = "HF_HUB_OFFLINE"
#: The environment variable naming whether a data file's row count is checked.
CHECK_SIZES_ENV = "SBERT_TUTOR_CHECK_SIZES"
#: The environment variable naming whether the fast tokenizer may use its own threads.
TOKENIZER_PARALLELISM_ENV = "SBERT_TUTOR_TOKENIZER_PARALLELISM"

_TRUE = {"1", "true", "yes", "on"}


def hf_offline() -> bool:
    """True when the user asked the Hugging Face libraries never to use the network."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in _TRUE or (
        os.environ.get("TRANSFORMERS_OFFLINE", "").strip().lower() in _TRUE
    )


def check_sizes() -> bool:
    """False when ``SBERT_TUTOR_CHECK_SIZES`` turns off the row-count check of data files."""
    return os.environ.get(CHECK_SIZES_ENV, "1").strip().lower() not in {"0", "false", "no", "off"}


def _folder_from_env(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None


def data_dir() -> Path | None:
    """The folder named by ``SBERT_TUTOR_DATA``, or ``None`` when it is unset."""
    return _folder_from_env(DATA_ENV)


def cache_dir() -> Path:
    """The folder named by ``SBERT_TUTOR_CACHE``, else ``~/.cache/sbert_tutor``."""
    return _folder_from_env(CACHE_ENV) or Path.home() / ".cache" / "sbert_tutor"


#: How a loader names the local data folder as its source (``NLIData.source`` and the like): the
#: setting, not the folder's place on the machine that ran it (the files' sha256 say which data).
LOCAL_DATA_SOURCE = f"{DATA_ENV} folder"


def data_label(path: str | Path) -> str:
    """How a data file is named in provenance: relative to the folder the project read it from.

    ``<SBERT_TUTOR_DATA>/msmarco/corpus_mini.tsv`` becomes ``"SBERT_TUTOR_DATA/msmarco/corpus_mini.tsv"``
    and a file in the cache (:func:`cache_dir`) ``"SBERT_TUTOR_CACHE/..."``, so a record names the
    file read, not where those folders sit on the machine that made it; any other file (the user's
    own) keeps the path it was given.
    """
    given = Path(path)
    full = given.expanduser().resolve()
    for env, root in ((DATA_ENV, data_dir()), (CACHE_ENV, cache_dir())):
        if root is None:
            continue
        try:
            return f"{env}/{full.relative_to(root.expanduser().resolve()).as_posix()}"
        except ValueError:
            continue
    return str(given)


def models_dir() -> Path | None:
    """The folder named by ``SBERT_TUTOR_MODELS``, or ``None`` when it is unset."""
    return _folder_from_env(MODELS_ENV)
