"""sbert_tutor.data.pool against the loaders it gathers from, and load_msmarco_queries."""

from __future__ import annotations

import hashlib

import pytest

from sbert_tutor.data import load_msmarco, load_sts
from sbert_tutor.data.msmarco import load_msmarco_queries
from sbert_tutor.data.pool import POOL_PARTS, load_text_pool, texts_sha256
from tests.conftest import needs_data


@needs_data
def test_pool_is_every_distinct_text_once_in_loader_order():
    pool = load_text_pool(["stsb", "sickr"])
    expected: dict[str, str] = {}
    for task in ("stsb", "sickr"):
        for split in ("train", "dev", "test"):
            data = load_sts(task, split)
            for text in [*data.sentences1, *data.sentences2]:
                expected.setdefault(text.strip(), task)
    assert pool.texts == list(expected)
    assert pool.parts == list(expected.values())
    assert sum(pool.counts().values()) == len(pool) == len(set(pool.texts))
    assert all(t and t == t.strip() for t in pool.texts)
    assert load_text_pool(["stsb", "sickr"]).sha256() == pool.sha256()


@needs_data
def test_pool_holds_the_msmarco_passages_but_not_the_queries():
    pool = load_text_pool(["stsb", "msmarco"])
    passages = load_msmarco("trec-dl19", corpus="mini").corpus
    texts = set(pool.texts)
    assert all(p.strip() in texts for p in passages.values())
    queries, files = load_msmarco_queries("msmarco-dev")
    assert len(queries) == 6980 and [f.name for f in files] == ["queries.tsv", "qrels.tsv"]
    assert not texts & {q.strip() for q in queries.values()}
    subset = load_msmarco("msmarco-dev-subset")  # its queries are dev-small queries
    assert all(queries[qid] == text for qid, text in subset.queries.items())


def test_texts_sha256_by_hand():
    assert texts_sha256(["a", "bc"]) == hashlib.sha256(b"a\nbc\n").hexdigest()


def test_unknown_part():
    with pytest.raises(ValueError, match="unknown pool part"):
        load_text_pool(["stsb", "wiki"])
    assert POOL_PARTS[0] == "stsb" and POOL_PARTS[-1] == "msmarco"
