"""The real data folder served in the Hugging Face hub's shapes, for the faked ``datasets`` module.

Each entry of :func:`hub_tables` is the hub dataset the library names, with that dataset's
configurations, splits, column names and id types (from the dataset cards):

* ``mteb/msmarco``: ``corpus`` (split ``corpus``; ``_id``, ``title``, ``text``; streamed in pid
  order, as the collection is), ``queries`` (split ``queries``; ``_id``, ``text``), ``default``
  (splits ``dev`` = dev-small qrels, ``test`` = TREC DL 2019 qrels; ``query-id``, ``corpus-id``
  as strings, ``score`` as float). The corpus holds ``corpus_mini`` plus distractor passages
  under other pids; the queries come in another order than the data folder's files.
* ``sentence-transformers/stsb``: splits ``train``/``validation``/``test``; ``sentence1``,
  ``sentence2``, ``score`` = gold / 5.
* ``mteb/sts1x-sts``: split ``test``; ``sentence1``, ``sentence2``, ``score``: the year's subsets
  concatenated, no subset column.
* ``mteb/sickr-sts``: split ``test``: all 9,927 SICK pairs (train, trial, test) in one split.

Files are read with the ``csv`` module (the data folder's documented way), not the library's
readers, so a reader bug cannot hide on both sides of a comparison.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from tests.conftest import FakeDataset

STS_SUBSETS = {
    "sts12": ["MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"],
    "sts13": ["FNWN", "headlines", "OnWN"],
    "sts14": ["deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"],
    "sts15": ["answers-forums", "answers-students", "belief", "headlines", "images"],
    "sts16": ["answer-answer", "headlines", "plagiarism", "postediting", "question-question"],
}
#: Passages the faked collection holds besides corpus_mini (pids absent from it).
N_DISTRACTORS = 50


def rows(path: Path) -> list[dict[str, str]]:
    """A tab-separated file with a header, read as the data folder's notes say."""
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def _columns(records: list[dict[str, Any]]) -> FakeDataset:
    return FakeDataset({k: [r[k] for r in records] for k in records[0]})


def msmarco_hub(root: Path, consumed: list[int] | None = None):
    """``mteb/msmarco`` served from ``root/msmarco``; ``consumed`` counts streamed corpus rows."""
    folder = root / "msmarco"
    corpus = rows(folder / "corpus_mini.tsv")
    pids = {r["pid"] for r in corpus}
    step = len(corpus) // N_DISTRACTORS  # spread over the collection, between listed pids
    extra = [str(int(r["pid"]) + 1) for r in corpus[::step] if str(int(r["pid"]) + 1) not in pids]
    passages = [{"_id": r["pid"], "title": "", "text": r["passage"]} for r in corpus]
    passages += [{"_id": p, "title": "", "text": f"distractor passage {p}"} for p in extra]
    passages.sort(key=lambda r: int(r["_id"]))
    queries: dict[str, str] = {}
    for topics in ("dev_small", "trec_dl2019", "trec_dl2020"):
        for r in rows(folder / topics / "queries.tsv"):
            queries.setdefault(r["qid"], r["query"])
    ordered = sorted(queries.items(), key=lambda kv: kv[0])  # by qid as text: not the files' order

    def qrels(topics: str) -> FakeDataset:
        return _columns(
            [
                {"query-id": r["qid"], "corpus-id": r["pid"], "score": float(r["relevance"])}
                for r in rows(folder / topics / "qrels.tsv")
            ]
        )

    def serve(name, split, streaming):
        if name == "corpus" and split == "corpus":
            if not streaming:
                raise AssertionError("the 8.8M-passage corpus must be streamed")

            def stream():
                for i, row in enumerate(passages):
                    if consumed is not None:
                        consumed.append(i)
                    yield dict(row)

            return stream()
        if name == "queries" and split == "queries":
            return FakeDataset({"_id": [q for q, _ in ordered], "text": [t for _, t in ordered]})
        if name == "default" and split in ("dev", "test"):
            return qrels("dev_small" if split == "dev" else "trec_dl2019")
        raise ValueError(f"mteb/msmarco has no configuration {name!r} with split {split!r}")

    return serve


def hub_tables(root: Path, consumed: list[int] | None = None) -> dict[str, Any]:
    """Every hub dataset the data layer names, served from the data folder ``root``."""

    def one_split(records_by_split):
        def serve(name, split, streaming):
            if name is not None or split not in records_by_split:
                raise ValueError(f"no configuration {name!r} / split {split!r}")
            return _columns(records_by_split[split])

        return serve

    def sts_pair(r, a="sentence1", b="sentence2", score="score", scale=1.0):
        return {"sentence1": r[a], "sentence2": r[b], "score": float(r[score]) / scale}

    tables: dict[str, Any] = {"mteb/msmarco": msmarco_hub(root, consumed)}
    tables["sentence-transformers/stsb"] = one_split(
        {
            hub: [sts_pair(r, scale=5.0) for r in rows(root / "stsb" / f"sts-{ours}.tsv")]
            for ours, hub in (("train", "train"), ("dev", "validation"), ("test", "test"))
        }
    )
    for year, subsets in STS_SUBSETS.items():
        pairs = [
            sts_pair(r)
            for subset in subsets
            for r in rows(root / "sts" / "raw" / year.upper() / f"{subset}.tsv")
        ]
        tables[f"mteb/{year}-sts"] = one_split({"test": pairs})
    sick = [
        sts_pair(r, "sentence_A", "sentence_B", "relatedness_score")
        for part in ("train", "trial", "test")
        for r in rows(root / "sick" / f"SICK_{part}.tsv")
    ]
    tables["mteb/sickr-sts"] = one_split({"test": sick})
    return tables
