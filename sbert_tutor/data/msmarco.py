r"""MS MARCO passage retrieval: queries, a passage corpus and relevance judgements (chapters 4-5).

A retrieval test collection has three parts: queries :math:`q`, a corpus of passages :math:`d`,
and *qrels*, the judged grades :math:`g(q, d)` (unjudged passages count as grade 0). The loaders
here return all three as plain dicts keyed by string ids, the input of
:func:`sbert_tutor.evaluation.retrieval.evaluate_retrieval`.

Datasets (:data:`DATASETS`)
---------------------------
======================  ======================  ===================  =====================================
name                    queries                 qrels                corpus
======================  ======================  ===================  =====================================
``msmarco-dev-subset``  540 dev-small queries   540, binary          ``mini`` (default) or ``full``
``trec-dl19``           43 judged TREC DL 2019  9,260, graded 0-3    ``mini`` (default) or ``full``
``trec-dl20``           54 judged of 200        11,386, graded 0-3   ``full`` only
``msmarco-dev``         6,980 dev small         7,437, binary        ``full`` only
======================  ======================  ===================  =====================================

* ``mini`` is ``msmarco/corpus_mini.tsv`` of the data folder (without one: rebuilt from the hub,
  see Sources): 16,799 real passages holding every relevant passage of ``msmarco-dev-subset`` and
  of ``trec-dl19``.
  Every other passage of it is a distractor, so retrieval over it is **far easier** than over the
  full collection and its numbers must not be compared with published full-collection numbers.
* ``full`` is the whole 8,841,823-passage collection. It is not in the data folder: it is
  *streamed* from the Hugging Face hub (:class:`StreamedCorpus`), one passage at a time, so that
  it never has to fit in memory.
* ``trec-dl20`` and ``msmarco-dev`` refuse the ``mini`` corpus: it holds only 6 of the 3,606
  relevant DL20 passages and 550 of the 7,437 relevant dev-small passages, so every metric would
  mostly measure what is missing.

Relevance threshold
-------------------
MS MARCO dev qrels are binary (grade 1). TREC DL qrels are graded 0-3 and TREC counts a passage
as relevant for the *binary* measures (MRR, recall, precision, MAP) when :math:`g \ge 2`
(grade 1 means "related", not relevant); nDCG uses the graded gains. Each record carries its
``relevance_threshold`` (1 or 2) so evaluators never have to guess.

Sources
-------
* **Local** (``SBERT_TUTOR_DATA`` set): the folder's ``msmarco/`` files.
* **Hub** (``SBERT_TUTOR_DATA`` unset, or ``corpus="full"``): ``mteb/msmarco`` (``HUB_ID``),
  BEIR's MS MARCO as plain data files: configuration ``corpus`` (split ``corpus``, columns
  ``_id``, ``title``, ``text``), ``queries`` (split ``queries``, ``_id``, ``text``) and
  ``default`` = qrels (split ``dev`` = the 7,437 dev-small qrels, ``test`` = the 9,260 TREC DL
  2019 qrels; columns ``query-id``, ``corpus-id``, ``score``). ``corpus_mini`` and the dev
  subset are rebuilt from it with the id lists shipped in the library
  (:mod:`sbert_tutor.data.msmarco_hub`; the BM25 candidates *are* such a list), so they give the
  same records with and without the data folder. TREC DL 2020 has no copy there: its topics need
  the data folder. The ids and columns follow the dataset card; the test-suite serves the data
  folder's files in these shapes from a faked ``datasets.load_dataset`` and compares.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sbert_tutor.data.files import (
    KNOWN_ROWS,
    DataNotFoundError,
    Table,
    load_hub_dataset,
    local_file,
    local_root,
    read_data_file,
    read_table,
)
from sbert_tutor.data.msmarco_hub import (
    BM25_CANDIDATES,
    HUB_ID,
    MINI_CORPUS,
    bm25_candidates_file,
    hub_msmarco_folder,
    mini_corpus_head,
    topic_qids,
)
from sbert_tutor.settings import DATA_ENV, LOCAL_DATA_SOURCE, hf_offline
from sbert_tutor.stats import seeded_subset
from sbert_tutor.validation import check_choice

logger = logging.getLogger(__name__)

#: The datasets :func:`load_msmarco` loads (described in the module docstring).
DATASETS: tuple[str, ...] = ("msmarco-dev-subset", "trec-dl19", "trec-dl20", "msmarco-dev")
_CORPORA: tuple[str, ...] = ("mini", "full")

#: The corpus each dataset uses when none is asked for.
_DEFAULT_CORPUS = {
    "msmarco-dev-subset": "mini",
    "trec-dl19": "mini",
    "trec-dl20": "full",
    "msmarco-dev": "full",
}
#: Lowest grade the binary measures count as relevant (TREC DL passage convention: 2).
_RELEVANCE_THRESHOLD = {
    "msmarco-dev-subset": 1,
    "trec-dl19": 2,
    "trec-dl20": 2,
    "msmarco-dev": 1,
}
#: Local topic folders (under ``msmarco/`` of the data folder).
_LOCAL_TOPICS = {
    "msmarco-dev-subset": "dev_small_subset",
    "trec-dl19": "trec_dl2019",
    "trec-dl20": "trec_dl2020",
    "msmarco-dev": "dev_small",
}
#: dataset -> qrels split of ``HUB_ID`` (the dev subset is rebuilt from the ``dev`` split).
_HUB_QRELS_SPLIT = {"msmarco-dev": "dev", "trec-dl19": "test"}
#: Datasets whose topics are rebuilt from the hub with the shipped qid lists.
_REBUILT_TOPICS = ("msmarco-dev-subset",)
#: Passages in the full MS MARCO v1 passage collection.
FULL_COLLECTION_SIZE = 8_841_823

Qrels = dict[str, dict[str, int]]


@dataclass(frozen=True)
class StreamedCorpus:
    """A passage collection read one passage at a time (the 8.8M-passage MS MARCO collection).

    It behaves like a read-only ``{pid: passage}`` mapping for *iteration* only:
    :meth:`items` yields ``(pid, passage)`` pairs in collection order and ``len()`` is the
    passage count when known. Nothing is kept in memory; every :meth:`items` call starts a new
    pass (for the hub: a new streaming read).

    Attributes:
        source: where the passages come from, in words.
        size: the number of passages, or ``None`` when unknown.
        open_rows: a function returning a fresh iterable of ``(pid, passage)`` pairs.
    """

    source: str
    size: int | None
    open_rows: Callable[[], Iterable[tuple[str, str]]] = field(repr=False)

    def items(self) -> Iterator[tuple[str, str]]:
        """``(pid, passage)`` pairs, in collection order."""
        for pid, text in self.open_rows():
            yield str(pid), text

    def __iter__(self) -> Iterator[str]:
        return (pid for pid, _ in self.items())

    def __len__(self) -> int:
        if self.size is None:
            raise TypeError(f"the size of {self.source} is unknown until it has been read")
        return self.size


Corpus = Mapping[str, str] | StreamedCorpus


@dataclass(frozen=True)
class MSMarcoData:
    """Queries, qrels and a corpus: one retrieval test collection.

    Attributes:
        name: the dataset (one of :data:`DATASETS`).
        queries: ``{qid: query}``, only queries that have judgements.
        qrels: ``{qid: {pid: grade}}``, as published (graded for TREC DL, binary for dev).
        corpus: ``{pid: passage}`` (``mini``) or a :class:`StreamedCorpus` (``full``).
        corpus_name: ``"mini"`` or ``"full"``.
        relevance_threshold: lowest grade the binary measures count as relevant.
        source: where the topics and the corpus came from, in words.
        files: local files read (hashed into provenance).
        notes: caveats a reader of any number computed on this data must see.
    """

    name: str
    queries: dict[str, str]
    qrels: Qrels
    corpus: Corpus
    corpus_name: str
    relevance_threshold: int
    source: str
    files: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def n_judgements(self) -> int:
        """Number of (query, passage) judgements in the qrels."""
        return sum(len(v) for v in self.qrels.values())

    def grade_counts(self) -> dict[int, int]:
        """How many judgements have each grade, lowest grade first."""
        counts: dict[int, int] = {}
        for docs in self.qrels.values():
            for grade in docs.values():
                counts[grade] = counts.get(grade, 0) + 1
        return dict(sorted(counts.items()))

    def describe(self) -> dict[str, Any]:
        """Sizes, threshold and source: recorded with every result computed on this data."""
        try:
            n_passages: int | None = len(self.corpus)
        except TypeError:
            n_passages = None
        return {
            "dataset": self.name,
            "corpus": self.corpus_name,
            "queries": len(self.queries),
            "judgements": self.n_judgements,
            "passages": n_passages,
            "relevance_threshold": self.relevance_threshold,
            "source": self.source,
        }


def check_msmarco_dataset(name: str) -> str:
    """Normalise a dataset name (``"TREC_DL19"`` -> ``"trec-dl19"``) or raise ``ValueError``."""
    key = str(name).strip().lower().replace("_", "-")
    aliases = {
        "dl19": "trec-dl19",
        "trec-dl-2019": "trec-dl19",
        "dl20": "trec-dl20",
        "trec-dl-2020": "trec-dl20",
        "msmarco-dev-small": "msmarco-dev",
    }
    key = aliases.get(key, key)
    return check_choice(name, DATASETS, "MS MARCO dataset", key=key)


def _check_corpus(dataset: str, corpus: str | None) -> str:
    if corpus is None:
        return _DEFAULT_CORPUS[dataset]
    if corpus not in _CORPORA:
        raise ValueError(
            f"unknown corpus {corpus!r}; choose 'mini' (corpus_mini.tsv, 16,799 passages) or "
            "'full' (the 8.8M-passage collection, streamed from the hub)"
        )
    return corpus


def load_msmarco(dataset: str, corpus: str | None = None) -> MSMarcoData:
    """Load an MS MARCO retrieval dataset: queries, qrels and a corpus.

    Args:
        dataset: one of :data:`DATASETS` (module docstring).
        corpus: ``"mini"`` (the data folder's 16,799-passage ``corpus_mini.tsv``) or ``"full"``
            (the 8.8M collection, streamed from the hub); ``None`` = the dataset's default
            (``_DEFAULT_CORPUS``). The profiles' ``msmarco_corpus`` size picks ``mini`` for
            ``quick`` and ``full`` for ``full``.

    Returns:
        :class:`MSMarcoData`; only queries with judgements are kept.

    Raises:
        ValueError: unknown dataset or corpus, or a corpus that lacks the dataset's relevant
            passages (``mini`` with ``trec-dl20`` or ``msmarco-dev``).
        DataNotFoundError: a file is missing from ``SBERT_TUTOR_DATA``, or the hub is needed
            (full collection; topics without a data folder) and cannot be reached.
    """
    name = check_msmarco_dataset(dataset)
    corpus_name = _check_corpus(name, corpus)
    root = local_root()
    if corpus_name == "full" and hf_offline():
        raise _full_collection_offline(name, root)
    queries, qrels, files, topic_source = _topics(name, root)

    notes: list[str] = []
    if corpus_name == "mini":
        corpus_root = root if root is not None else hub_msmarco_folder(topics=False)
        table = read_data_file(corpus_root, MINI_CORPUS, ("pid", "passage"), what="corpus_mini")
        passages = dict(zip(table.column("pid"), table.texts("passage"), strict=True))
        _check_coverage(name, qrels, passages)
        files = (*files, table.path)
        corpus_obj: Corpus = passages
        corpus_source = f"{MINI_CORPUS} ({len(passages):,} passages)" + (
            "" if root is not None else f", rebuilt from hub:{HUB_ID} with the shipped pid list"
        )
        notes.append(
            f"corpus_mini: {len(passages):,} passages instead of the {FULL_COLLECTION_SIZE:,} of "
            "the full collection; retrieval is far easier, so absolute numbers are far higher "
            "than full-collection numbers and must not be compared with them"
        )
    else:
        corpus_obj = _hub_corpus(name, root)
        corpus_source = corpus_obj.source
    if _RELEVANCE_THRESHOLD[name] > 1:
        notes.append(
            f"binary measures count grade >= {_RELEVANCE_THRESHOLD[name]} as relevant (TREC DL "
            "convention); nDCG uses the graded gains"
        )
    data = MSMarcoData(
        name=name,
        queries=queries,
        qrels=qrels,
        corpus=corpus_obj,
        corpus_name=corpus_name,
        relevance_threshold=_RELEVANCE_THRESHOLD[name],
        source=f"topics: {topic_source}; corpus: {corpus_source}",
        files=tuple(files),
        notes=tuple(notes),
    )
    logger.info(
        "loaded %s: %d queries, %d judgements, corpus %s",
        name,
        len(queries),
        data.n_judgements,
        corpus_source,
    )
    return data


# ------------------------------------------------------------------------------------ topics


def load_msmarco_queries(dataset: str) -> tuple[dict[str, str], tuple[Path, ...]]:
    """The judged queries of a dataset *without* its corpus, and the local files read.

    For queries searched against another corpus (book chapter 16 times approximate indexes with
    the 6,980 ``msmarco-dev`` queries), where :func:`load_msmarco` would insist on the corpus
    their qrels need. ``{qid: query}`` in file order; the sources are those of
    :func:`load_msmarco`.

    Raises:
        ValueError: unknown dataset.
        DataNotFoundError: as :func:`load_msmarco` for the topics.
    """
    queries, _, files, _ = _topics(check_msmarco_dataset(dataset), local_root())
    return queries, files


def _topics(name: str, root: Path | None) -> tuple[dict[str, str], Qrels, tuple[Path, ...], str]:
    """Queries, qrels, files read and their source in words, from the data folder or the hub."""
    if root is not None:
        queries, qrels, files = _local_topics(root, name)
        return queries, qrels, files, LOCAL_DATA_SOURCE
    if name in _REBUILT_TOPICS:
        folder = hub_msmarco_folder(corpus=False)
        queries, qrels, files = _local_topics(folder, name)
        return (
            queries,
            qrels,
            files,
            f"hub:{HUB_ID} (rebuilt with the shipped qid list, kept in {folder})",
        )
    queries, qrels = _hub_topics(name)
    return queries, qrels, (), f"hub:{HUB_ID}"


def _read_qrels(rows: Iterable[tuple[Any, Any, Any]], what: str) -> Qrels:
    qrels: Qrels = {}
    for qid, pid, grade in rows:
        try:
            value = float(grade)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: grade {grade!r} of ({qid}, {pid}) is not a number") from None
        if not value.is_integer():
            raise ValueError(f"{what}: grade {grade!r} of ({qid}, {pid}) is not an integer")
        judged = qrels.setdefault(str(qid), {})
        if str(pid) in judged:
            raise ValueError(
                f"{what}: ({qid}, {pid}) is judged twice (grades {judged[str(pid)]} and "
                f"{int(value)}): a qrels file judges each pair once; the data is damaged"
            )
        judged[str(pid)] = int(value)
    return qrels


def _judged_queries(queries: Mapping[str, str], qrels: Qrels, what: str) -> dict[str, str]:
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise ValueError(
            f"{what}: {len(missing)} judged queries have no text (e.g. qid {missing[0]}); "
            "the query file and the qrels do not belong together"
        )
    return {qid: text for qid, text in queries.items() if qid in qrels}


def _local_topics(root: Path, name: str) -> tuple[dict[str, str], Qrels, tuple[Path, ...]]:
    folder = f"msmarco/{_LOCAL_TOPICS[name]}"
    q_table = read_data_file(root, f"{folder}/queries.tsv", ("qid", "query"), f"{name} queries")
    r_table = read_data_file(
        root, f"{folder}/qrels.tsv", ("qid", "pid", "relevance"), f"{name} qrels"
    )
    queries = dict(zip(q_table.column("qid"), q_table.texts("query"), strict=True))
    qrels = _table_qrels(r_table)
    files = (q_table.path, r_table.path)
    return _judged_queries(queries, qrels, str(q_table.path)), qrels, files


def _table_qrels(table: Table) -> Qrels:
    qrels: Qrels = {}
    grades = table.numbers("relevance", integer=True)
    first: dict[tuple[str, str], int] = {}
    rows = zip(table.column("qid"), table.column("pid"), grades, strict=True)
    for i, (qid, pid, grade) in enumerate(rows):
        j = first.setdefault((qid, pid), i)
        if j != i:
            raise ValueError(
                f"{table.where(i)}: query {qid} and passage {pid} are judged again (first on line "
                f"{table.line(j)}); a qrels file judges each pair once: remove one of the lines "
                "(or download the file again if it should be the published one)"
            )
        qrels.setdefault(qid, {})[pid] = grade
    return qrels


def _load_dataset(dataset_id: str, name: str, split: str, streaming: bool = False) -> Any:
    """``datasets.load_dataset`` with errors that say how to get the data another way."""
    what = f"{dataset_id} ({name}, split={split})"
    return load_hub_dataset(what, dataset_id, name, split=split, streaming=streaming)


def _hub_topics(name: str) -> tuple[dict[str, str], Qrels]:
    if name not in _HUB_QRELS_SPLIT:
        raise DataNotFoundError(
            f"{name} has no copy on the hub: its queries and qrels come from the project's data "
            f"folder ({_LOCAL_TOPICS[name]}/ of its msmarco/ folder). Set {DATA_ENV}=/path/to/data, "
            f"or use one of {', '.join((*_REBUILT_TOPICS, *_HUB_QRELS_SPLIT))} from the hub."
        )
    split = _HUB_QRELS_SPLIT[name]
    raw = _load_dataset(HUB_ID, "default", split=split)
    qrels = _read_qrels(
        zip(raw["query-id"], raw["corpus-id"], raw["score"], strict=True), f"{HUB_ID}[{split}]"
    )
    table = _load_dataset(HUB_ID, "queries", split="queries")
    queries = {
        str(qid): text
        for qid, text in zip(table["_id"], table["text"], strict=True)
        if str(qid) in qrels
    }
    if name == "trec-dl19":  # the data folder's query order (samples take the first queries)
        order = {qid: i for i, qid in enumerate(topic_qids("trec_dl2019"))}
        queries = dict(sorted(queries.items(), key=lambda kv: order.get(kv[0], len(order))))
    return _judged_queries(queries, qrels, f"{HUB_ID} queries"), qrels


# ------------------------------------------------------------------------------------ corpus


def _check_coverage(name: str, qrels: Qrels, passages: Mapping[str, str]) -> None:
    """Refuse a corpus that lacks relevant passages: the metrics would measure the gap."""
    relevant = [(q, d) for q, docs in qrels.items() for d, g in docs.items() if g >= 1]
    missing = sum(1 for _, d in relevant if d not in passages)
    if missing:
        present = len(relevant) - missing
        raise ValueError(
            f"{name}: {MINI_CORPUS} holds only {present:,} of the {len(relevant):,} passages "
            f"judged relevant (grade >= 1) for its {len(qrels):,} judged queries, so retrieval "
            "metrics on it would mostly measure the missing passages. Use corpus='full' (the "
            "8.8M-passage collection, streamed from the hub)"
            + (
                ", or 'msmarco-dev-subset' (540 dev queries whose positives are all in "
                "corpus_mini) offline."
                if name == "msmarco-dev"
                else ", or 'trec-dl19' offline (all its relevant passages are in corpus_mini)."
            )
        )


def _full_collection_offline(name: str, root: Path | None) -> DataNotFoundError:
    where = (
        f"{DATA_ENV}={root} has only {MINI_CORPUS} (16,799 passages)"
        if root is not None
        else f"{DATA_ENV} is not set"
    )
    return DataNotFoundError(
        f"{name} with corpus='full' needs the full MS MARCO passage collection "
        f"({FULL_COLLECTION_SIZE:,} passages), which is not in the data folder ({where}) and "
        f"comes from the hub ({HUB_ID}, configuration 'corpus'), but HF_HUB_OFFLINE=1 is set. "
        "Unset HF_HUB_OFFLINE (and `pip install datasets`) to stream it, or evaluate offline on "
        "'msmarco-dev-subset' or 'trec-dl19' with corpus='mini'"
        + (
            f" (corpus_mini cannot stand in for {name}: it lacks most of its relevant passages)."
            if name in ("trec-dl20", "msmarco-dev")
            else "."
        )
    )


def _hub_corpus(name: str, root: Path | None) -> StreamedCorpus:
    if hf_offline():
        raise _full_collection_offline(name, root)
    stream = _load_dataset(HUB_ID, "corpus", split="corpus", streaming=True)

    def rows() -> Iterator[tuple[str, str]]:
        for row in stream:
            title = (row.get("title") or "").strip()
            text = row["text"]
            yield str(row["_id"]), f"{title} {text}" if title else text

    return StreamedCorpus(
        source=f"hub:{HUB_ID}[corpus] ({FULL_COLLECTION_SIZE:,} passages, streamed)",
        size=FULL_COLLECTION_SIZE,
        open_rows=rows,
    )


# ------------------------------------------------------------------------------------ extras


def load_bm25_candidates(
    with_labels: bool = False,
) -> dict[str, list[str]] | dict[str, list[tuple[str, int]]]:
    """BM25 (anserini) top-20 passages of 600 dev-small queries, best first.

    ``{qid: [pid, ...]}`` ranked by ``bm25_rank``; with ``with_labels=True``,
    ``{qid: [(pid, msmarco_label), ...]}`` (label 1 = the MS MARCO positive). Useful for
    re-ranking and hard-negative demos. Read from ``SBERT_TUTOR_DATA`` when it is set, else from
    the copy shipped with the library (ids, ranks and labels only; :func:`bm25_candidates_path`).
    """
    columns = ("qid", "pid", "bm25_rank", "msmarco_label")
    path = bm25_candidates_path()
    table = read_table(path, columns, KNOWN_ROWS[BM25_CANDIDATES], "the BM25 candidates")
    ranks = table.numbers("bm25_rank", integer=True)
    labels = table.numbers("msmarco_label", integer=True)
    ranked: dict[str, list[tuple[int, str, int]]] = {}
    for qid, pid, rank, label in zip(
        table.column("qid"), table.column("pid"), ranks, labels, strict=True
    ):
        ranked.setdefault(qid, []).append((rank, pid, label))
    out: dict[str, list[Any]] = {}
    for qid, items in ranked.items():
        items.sort()
        out[qid] = (
            [(pid, label) for _, pid, label in items] if with_labels else [p for _, p, _ in items]
        )
    return out


def bm25_candidates_path() -> Path:
    """The BM25 candidate file :func:`load_bm25_candidates` reads: the data folder's when
    ``SBERT_TUTOR_DATA`` is set, else the library's shipped copy (logged)."""
    root = local_root()
    if root is not None:
        return local_file(root, BM25_CANDIDATES)
    logger.info("%s is not set: BM25 candidates from %s", DATA_ENV, bm25_candidates_file())
    return bm25_candidates_file()


def mini_corpus_passages(n: int) -> tuple[list[str], str]:
    """The first ``n`` passages of ``corpus_mini`` (file order) and the file or source they came
    from: the data folder's file when ``SBERT_TUTOR_DATA`` is set, else the hub
    (:func:`~sbert_tutor.data.msmarco_hub.mini_corpus_head`)."""
    root = local_root()
    if root is None:
        return mini_corpus_head(n)
    table = read_data_file(root, MINI_CORPUS, ("pid", "passage"), what="corpus_mini")
    return table.texts("passage")[:n], str(table.path)


def sample_msmarco(
    data: MSMarcoData,
    n_queries: int | None,
    n_other: int | None,
    seed: int = 0,
    candidates: Mapping[str, Iterable[str]] | None = None,
) -> MSMarcoData:
    """A smaller, still self-consistent collection: some queries, their judged passages, distractors.

    Keeps the first ``n_queries`` queries (file order) that have a relevant passage, every
    passage judged for them that is in the corpus, their ``candidates`` (e.g. BM25 top-20s from
    :func:`load_bm25_candidates`: *hard* distractors that share words with the query) found in
    the corpus, and ``n_other`` further passages drawn at random (``seed``) from the rest.
    ``None`` keeps all queries / all other passages. With fewer distractors retrieval gets
    easier still: numbers on a sample are for demonstrations and tests, never for reports.

    Raises:
        TypeError: the corpus is streamed (sampling needs an in-memory corpus).
        ValueError: a negative size, or no query with a relevant passage.
    """
    if not isinstance(data.corpus, Mapping):
        raise TypeError("sample_msmarco needs an in-memory corpus (corpus='mini'), not a stream")
    for label, value in (("n_queries", n_queries), ("n_other", n_other)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise ValueError(f"{label} must be a non-negative integer or None, got {value!r}")
    threshold = data.relevance_threshold
    eligible = [
        q for q in data.queries if any(g >= threshold for g in data.qrels.get(q, {}).values())
    ]
    chosen = eligible if n_queries is None else eligible[:n_queries]
    if not chosen:
        raise ValueError(f"{data.name}: no query with a relevant passage to keep")
    judged = {d for q in chosen for d in data.qrels[q] if d in data.corpus}
    hard = {
        str(d) for q in chosen for d in (candidates or {}).get(q, ()) if str(d) in data.corpus
    } - judged
    rest = sorted(p for p in data.corpus if p not in judged and p not in hard)
    if n_other is not None and n_other < len(rest):
        rest = [rest[i] for i in seeded_subset(len(rest), n_other, seed)]
    keep = judged | hard | set(rest)
    corpus = {p: t for p, t in data.corpus.items() if p in keep}
    note = (
        f"sample: {len(chosen)} of {len(data.queries)} queries, {len(corpus):,} of "
        f"{len(data.corpus):,} passages (judged passages + {len(hard):,} candidates + "
        f"{len(rest):,} random others, seed={seed}); easier than the whole collection"
    )
    return replace(
        data,
        queries={q: data.queries[q] for q in chosen},
        qrels={q: dict(data.qrels[q]) for q in chosen},
        corpus=corpus,
        notes=(*data.notes, note),
    )


# ------------------------------------------------------------------------ split by query


@dataclass(frozen=True)
class QuerySplit:
    """Query ids in two disjoint parts: ``train`` and ``test`` (each in the order given).

    Attributes:
        train, test: the query ids of each part; no id is in both.
        seed: the seed of the draw (:func:`split_queries`).
    """

    train: tuple[str, ...]
    test: tuple[str, ...]
    seed: int

    def describe(self) -> dict[str, Any]:
        """Sizes and seed (recorded with results computed on the split)."""
        return {"train_queries": len(self.train), "test_queries": len(self.test), "seed": self.seed}


def split_queries(qids: Iterable[Any], n_test: int, seed: int = 0) -> QuerySplit:
    """Split query ids into train and test **by query**: every id lands on exactly one side.

    The ``n_test`` test ids are :func:`~sbert_tutor.stats.seeded_subset` positions of the
    distinct ids (first occurrence order), so the same ids and seed always give the same split,
    whatever the Python hash seed; both sides keep the given order.

    Raises:
        ValueError: ``n_test`` is not in ``1 .. len(ids) - 1`` (a side would be empty).

    Example:
        >>> split = split_queries(["q1", "q2", "q3", "q4"], n_test=1, seed=0)
        >>> split.test, split.train
        (('q4',), ('q1', 'q2', 'q3'))
    """
    ids = list(dict.fromkeys(str(q) for q in qids))
    if isinstance(n_test, bool) or not isinstance(n_test, int) or not 0 < n_test < len(ids):
        raise ValueError(
            f"n_test must be an integer in 1..{len(ids) - 1} (both sides non-empty) for "
            f"{len(ids)} distinct query ids, got {n_test!r}"
        )
    chosen = set(seeded_subset(len(ids), n_test, seed).tolist())
    test = tuple(q for i, q in enumerate(ids) if i in chosen)
    train = tuple(q for i, q in enumerate(ids) if i not in chosen)
    return QuerySplit(train=train, test=test, seed=seed)


def candidate_pairs(
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    candidates: Mapping[str, Iterable[tuple[str, int]]],
    qids: Iterable[str],
    negatives_per_query: int | None = None,
) -> list[tuple[str, str, int]]:
    """``(query, passage, label)`` training rows from labelled candidate lists.

    For each query of ``qids`` (in that order) that has a relevant candidate: every candidate
    labelled 1, then the first ``negatives_per_query`` candidates labelled 0 in list order
    (for :func:`load_bm25_candidates`: the best BM25 ranks, the hardest negatives; ``None``:
    all). A query with no relevant candidate is skipped (it teaches no contrast). These are the
    rows the cross-encoder objectives ``ce_bce`` / ``ce_mse`` train on.

    Args:
        queries: ``{qid: text}``; corpus: ``{pid: passage}`` holding every candidate used.
        candidates: ``{qid: [(pid, label), ...]}``, e.g. ``load_bm25_candidates(with_labels=True)``.
        qids: the queries to use (e.g. the ``train`` part of a :class:`QuerySplit`).
        negatives_per_query: 0-labelled candidates kept a query (``None``: all).

    Raises:
        KeyError: a query or a candidate passage has no text (the message names it).
        ValueError: ``negatives_per_query`` is negative.
    """
    if negatives_per_query is not None and negatives_per_query < 0:
        raise ValueError(f"negatives_per_query must be >= 0 or None, got {negatives_per_query}")
    rows: list[tuple[str, str, int]] = []
    for qid in qids:
        items = [(str(p), int(label)) for p, label in candidates.get(qid, ())]
        positives = [p for p, label in items if label > 0]
        if not positives:
            continue
        negatives = [p for p, label in items if label <= 0][:negatives_per_query]
        if qid not in queries:
            raise KeyError(f"query {qid!r} has candidates but no text in queries")
        for pid, label in [(p, 1) for p in positives] + [(p, 0) for p in negatives]:
            if pid not in corpus:
                raise KeyError(
                    f"candidate passage {pid!r} of query {qid!r} is not in the corpus; load the "
                    "corpus that holds the candidates (corpus_mini holds every BM25 candidate)"
                )
            rows.append((queries[qid], corpus[pid], label))
    return rows


__all__ = [
    "DATASETS",
    "FULL_COLLECTION_SIZE",
    "MSMarcoData",
    "QuerySplit",
    "StreamedCorpus",
    "bm25_candidates_path",
    "candidate_pairs",
    "check_msmarco_dataset",
    "load_bm25_candidates",
    "load_msmarco",
    "load_msmarco_queries",
    "mini_corpus_passages",
    "sample_msmarco",
    "split_queries",
]
