"""The project's MS MARCO files, rebuilt from the hub when ``SBERT_TUTOR_DATA`` is unset (chapters 4, 5, 12, 13).

The data folder's ``msmarco/corpus_mini.tsv`` (16,799 passages), ``dev_small_subset/`` (540 dev-small
queries, their qrels, the BM25 top-20 candidates of 600 queries) were selected from public MS MARCO
data; only their *ids* ship with the library (``ID_DIR``, no query or passage text):

==================================  =========================================================
``ids/corpus_mini.tsv.gz``          ``pid``, ``origin`` of the 16,799 passages, in file order
``ids/dev_small_subset.tsv.gz``     ``qid`` of the 540 dev-subset queries, in file order
``ids/trec_dl2019.tsv.gz``          ``qid`` of the 43 judged TREC DL 2019 queries, in file order
``ids/bm25_candidates.tsv.gz``      the candidate file itself (ids, ranks, labels: no text)
==================================  =========================================================

With them ``hub_msmarco_folder`` rebuilds the same files from ``mteb/msmarco`` (``HUB_ID``):
query texts from its ``queries`` configuration, the dev-small qrels from its ``default``
configuration (split ``dev``) and the passages from one streamed pass over its 8,841,823-passage
``corpus`` configuration (a few minutes, once: the result is kept under ``SBERT_TUTOR_CACHE``).
The rebuilt folder has the data folder's layout, so the same checked readers read it and the
records are the same as from the data folder (the test-suite checks this against a faked hub
serving the real files).
"""

from __future__ import annotations

import gzip
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sbert_tutor.data.files import (
    KNOWN_ROWS,
    DataFileError,
    DataNotFoundError,
    load_hub_dataset,
    read_table,
)
from sbert_tutor.settings import CACHE_ENV, DATA_ENV, cache_dir

__all__ = ["mini_corpus_head"]

logger = logging.getLogger(__name__)

#: Hub source of the full collection, all queries and the dev / DL19 qrels.
HUB_ID = "mteb/msmarco"
MINI_CORPUS = "msmarco/corpus_mini.tsv"
_SUBSET = "msmarco/dev_small_subset"
BM25_CANDIDATES = f"{_SUBSET}/bm25_candidates.tsv"
#: The id lists shipped with the library.
ID_DIR = Path(__file__).parent / "ids"
#: The id list behind each rebuilt file, shipped with the library (made by ``write_id_lists``).
ID_FILES = {
    "corpus_mini": ID_DIR / "corpus_mini.tsv.gz",
    "dev_small_subset": ID_DIR / "dev_small_subset.tsv.gz",
    "trec_dl2019": ID_DIR / "trec_dl2019.tsv.gz",
    "bm25_candidates": ID_DIR / "bm25_candidates.tsv.gz",
}


def hub_folder() -> Path:
    """Where the rebuilt files live: ``SBERT_TUTOR_CACHE/hub_data`` (data-folder layout)."""
    return cache_dir() / "hub_data"


def _ids(key: str, column: str) -> list[str]:
    return read_table(ID_FILES[key], (column,), what=f"the id list {ID_FILES[key].name}").column(
        column
    )


def _corpus_mini_pids() -> list[str]:
    """The 16,799 ``corpus_mini`` passage ids, in the data folder's order (ascending pid)."""
    return _ids("corpus_mini", "pid")


def topic_qids(name: str) -> list[str]:
    """The qids of ``dev_small_subset`` or ``trec_dl2019``, in the data folder's file order."""
    return _ids(name, "qid")


def bm25_candidates_file() -> Path:
    """The shipped BM25 candidate list (ids, ranks and labels; no text)."""
    return ID_FILES["bm25_candidates"]


# ------------------------------------------------------------------------------------ writing
def _clean(text: Any, what: str) -> str:
    value = "" if text is None else str(text)
    if "\t" in value or "\n" in value or "\r" in value:
        raise DataFileError(
            f"{what} from {HUB_ID} contains a tab or line break, so it cannot be stored as a "
            f"tab-separated line; set {DATA_ENV}=/path/to/data to read local copies of the data files instead."
        )
    return value


def _write(path: Path, header: Sequence[str], rows: Iterable[Sequence[str]]) -> Path:
    """Write a TSV atomically (a half-written file is never left under the final name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    tmp.replace(path)
    return path


def _missing(what: str, ids: Sequence[str], total: int) -> DataNotFoundError:
    return DataNotFoundError(
        f"{HUB_ID} lacks {len(ids):,} of the {total:,} {what} the library's id lists name "
        f"(e.g. {', '.join(ids[:3])}), so the library's MS MARCO files cannot be rebuilt from "
        f"it. Set {DATA_ENV} to a local data folder with msmarco/ in it instead."
    )


def _hub(what: str, name: str, split: str, streaming: bool = False) -> Any:
    return load_hub_dataset(what, HUB_ID, name, split=split, streaming=streaming)


def _build_subset_topics(folder: Path) -> None:
    qids = topic_qids("dev_small_subset")
    wanted = set(qids)
    raw = _hub("the MS MARCO dev-small qrels", "default", split="dev")
    by_qid: dict[str, list[tuple[str, str]]] = {}
    for qid, pid, grade in zip(raw["query-id"], raw["corpus-id"], raw["score"], strict=True):
        if str(qid) in wanted:
            by_qid.setdefault(str(qid), []).append((str(pid), f"{int(float(grade))}"))
    lost = [q for q in qids if q not in by_qid]
    if lost:
        raise _missing("dev-subset queries with qrels", lost, len(qids))
    table = _hub("the MS MARCO queries", "queries", split="queries")
    texts = {
        str(q): t for q, t in zip(table["_id"], table["text"], strict=True) if str(q) in wanted
    }
    lost = [q for q in qids if q not in texts]
    if lost:
        raise _missing("dev-subset queries", lost, len(qids))
    _write(
        folder / _SUBSET / "qrels.tsv",
        ("qid", "pid", "relevance"),
        ((q, p, g) for q in qids for p, g in by_qid[q]),
    )
    _write(
        folder / _SUBSET / "queries.tsv",
        ("qid", "query"),
        ((q, _clean(texts[q], f"query {q}")) for q in qids),
    )


def _stream_passages(wanted: Sequence[str]) -> Iterator[tuple[str, str]]:
    """``(pid, passage)`` of ``wanted`` pids, in collection order, stopping once all are seen."""
    left = set(wanted)
    stream = _hub("the MS MARCO collection", "corpus", split="corpus", streaming=True)
    for row in stream:
        pid = str(row["_id"])
        if pid in left:
            title = (row.get("title") or "").strip()
            text = row["text"]
            yield pid, _clean(f"{title} {text}" if title else text, f"passage {pid}")
            left.discard(pid)
            if not left:
                return
    if left:
        raise _missing("corpus_mini passages", sorted(left, key=int), len(wanted))


def _build_corpus(folder: Path) -> None:
    table = read_table(ID_FILES["corpus_mini"], ("pid", "origin"), what="the corpus_mini id list")
    pids, origins = table.column("pid"), table.column("origin")
    logger.warning(
        "%s is not set: rebuilding corpus_mini (%d passages) from %s with one streamed pass "
        "over its 8.8M-passage collection (a few minutes, once; kept in %s, set %s to move it)",
        DATA_ENV,
        len(pids),
        HUB_ID,
        folder,
        CACHE_ENV,
    )
    texts = dict(_stream_passages(pids))
    _write(
        folder / MINI_CORPUS,
        ("pid", "passage", "origin"),
        ((p, texts[p], o) for p, o in zip(pids, origins, strict=True)),
    )


def _expected_ids(relative: str) -> tuple[str, list[str]]:
    """The id column of a rebuilt file and the ids it must hold, in order (the shipped lists)."""
    if relative == MINI_CORPUS:
        return "pid", _corpus_mini_pids()
    if relative == f"{_SUBSET}/queries.tsv":
        return "qid", topic_qids("dev_small_subset")
    if relative == f"{_SUBSET}/qrels.tsv":
        return "qid", topic_qids("dev_small_subset")  # one positive each, in the list's order
    return "pid", read_table(bm25_candidates_file()).column("pid")


def _complete(folder: Path, relative: str) -> bool:
    """A rebuilt file that exists, is well formed and holds the shipped list's ids in order
    (else it is rebuilt: a file cut short, or one made from another version's lists)."""
    path = folder / relative
    if not path.is_file():
        return False
    column, ids = _expected_ids(relative)
    try:
        table = read_table(path, (column,), expected_rows=KNOWN_ROWS.get(relative))
    except DataFileError:
        return False
    return table.column(column) == ids


def hub_msmarco_folder(corpus: bool = True, topics: bool = True) -> Path:
    """A folder in the data folder's layout holding the dev subset (``topics``) and
    ``corpus_mini.tsv`` (``corpus``), rebuilt from the hub on first use (module docstring).

    Raises:
        DataNotFoundError: the hub cannot be reached or lacks an id (the message says to set
            ``SBERT_TUTOR_DATA``).
    """
    folder = hub_folder()
    if topics and not all(
        _complete(folder, f"{_SUBSET}/{name}.tsv") for name in ("queries", "qrels")
    ):
        _build_subset_topics(folder)
    if topics and not _complete(folder, BM25_CANDIDATES):
        rows = read_table(bm25_candidates_file(), what="the BM25 candidate list")
        _write(folder / BM25_CANDIDATES, rows.header, rows.rows)
    if corpus and not _complete(folder, MINI_CORPUS):
        _build_corpus(folder)
    return folder


def mini_corpus_head(n: int) -> tuple[list[str], str]:
    """The first ``n`` passages of ``corpus_mini`` (file order) from the hub, and where from.

    Reads the rebuilt ``corpus_mini.tsv`` when it exists; otherwise streams only the collection's
    prefix that holds those ``n`` passages (the collection and the list are in pid order).
    """
    folder = hub_folder()
    if _complete(folder, MINI_CORPUS):
        table = read_table(folder / MINI_CORPUS, ("passage",))
        return table.texts("passage")[:n], str(folder / MINI_CORPUS)
    pids = _corpus_mini_pids()[:n]
    texts = dict(_stream_passages(pids))
    return [texts[p] for p in pids], f"hub:{HUB_ID}[corpus] (first {len(pids)} corpus_mini pids)"


# ------------------------------------------------------------------------------ making the lists
def write_id_lists(root: Path, out: Path = ID_DIR) -> dict[str, Path]:
    """Write the id lists from a data folder ``root`` (how ``ID_FILES`` were made).

    Only ids, origins, ranks and labels are written (no text), gzipped without a timestamp so
    the same folder always gives the same bytes.
    """

    def put(key: str, header: Sequence[str], rows: Iterable[Sequence[str]]) -> Path:
        text = "\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows)
        path = out / ID_FILES[key].name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
        return path

    corpus = read_table(root / MINI_CORPUS, ("pid", "origin"))
    subset = read_table(root / _SUBSET / "queries.tsv", ("qid",))
    dl19 = read_table(root / "msmarco/trec_dl2019/queries.tsv", ("qid",))
    bm25 = read_table(root / BM25_CANDIDATES)
    return {
        "corpus_mini": put(
            "corpus_mini",
            ("pid", "origin"),
            zip(corpus.column("pid"), corpus.column("origin"), strict=True),
        ),
        "dev_small_subset": put("dev_small_subset", ("qid",), ([q] for q in subset.column("qid"))),
        "trec_dl2019": put("trec_dl2019", ("qid",), ([q] for q in dl19.column("qid"))),
        "bm25_candidates": put("bm25_candidates", bm25.header, bm25.rows),
    }
