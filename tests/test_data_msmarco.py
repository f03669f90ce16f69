"""MS MARCO loaders: counts from the data MANIFEST, coverage refusals, errors, the hub path (faked)."""

from __future__ import annotations

import gzip
import sys
import types

import pytest

from sbert_tutor.data import (
    DataNotFoundError,
    MSMarcoData,
    StreamedCorpus,
    check_msmarco_dataset,
    load_bm25_candidates,
    load_msmarco,
    sample_msmarco,
)
from sbert_tutor.data.files import read_tsv
from sbert_tutor.data.msmarco import FULL_COLLECTION_SIZE, HUB_ID
from tests.conftest import needs_data

# ------------------------------------------------------------------ the real data folder


@needs_data
@pytest.mark.parametrize(
    "name, queries, qrels, threshold",
    [("msmarco-dev-subset", 540, 540, 1), ("trec-dl19", 43, 9260, 2)],
)
def test_counts_match_manifest(name, queries, qrels, threshold):
    data = load_msmarco(name)
    assert len(data.queries) == queries and data.n_judgements == qrels
    assert len(data.corpus) == 16_799 and data.corpus_name == "mini"
    assert data.relevance_threshold == threshold
    assert set(data.queries) == set(data.qrels)  # only queries with judgements
    assert (
        data.source.startswith("topics: SBERT_TUTOR_DATA folder; corpus:") and len(data.files) == 3
    )
    assert any("16,799 passages instead of the 8,841,823" in n for n in data.notes)
    # MANIFEST: every relevant passage of these two datasets is in corpus_mini
    relevant = [d for docs in data.qrels.values() for d, g in docs.items() if g >= 1]
    assert relevant and all(d in data.corpus for d in relevant)


@needs_data
def test_dl19_grades_are_graded():
    data = load_msmarco("TREC_DL19")
    assert data.grade_counts() == {0: 5158, 1: 1601, 2: 1804, 3: 697}
    assert data.describe()["relevance_threshold"] == 2


@needs_data
def test_dl20_on_corpus_mini_is_refused():
    with pytest.raises(ValueError, match=r"only 6 of the 3,606 passages judged relevant"):
        load_msmarco("trec-dl20", corpus="mini")


@needs_data
def test_dev_on_corpus_mini_is_refused():
    with pytest.raises(ValueError, match=r"550 of the 7,437.*msmarco-dev-subset"):
        load_msmarco("msmarco-dev", corpus="mini")


@needs_data
@pytest.mark.parametrize("name", ["msmarco-dev", "trec-dl20"])
def test_full_collection_offline_names_setting_and_what_is_missing(name, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataNotFoundError) as err:
        load_msmarco(name)  # default corpus: full
    message = str(err.value)
    assert "SBERT_TUTOR_DATA=" in message and "corpus_mini.tsv" in message
    assert f"{FULL_COLLECTION_SIZE:,} passages" in message and "HF_HUB_OFFLINE=1" in message
    assert "corpus_mini cannot stand in" in message


@needs_data
def test_bm25_candidates():
    ranked = load_bm25_candidates()
    assert len(ranked) == 600 and all(len(pids) == 20 for pids in ranked.values())
    labelled = load_bm25_candidates(with_labels=True)
    first = next(iter(labelled))
    assert [p for p, _ in labelled[first]] == ranked[first]
    assert {label for pids in labelled.values() for _, label in pids} == {0, 1}


@needs_data
def test_sample_keeps_judged_passages_and_is_deterministic():
    data = load_msmarco("msmarco-dev-subset")
    bm25 = load_bm25_candidates()
    a = sample_msmarco(data, 100, 500, seed=1, candidates=bm25)
    b = sample_msmarco(data, 100, 500, seed=1, candidates=bm25)
    assert a.corpus == b.corpus and list(a.queries) == list(data.queries)[:100]
    assert all(d in a.corpus for docs in a.qrels.values() for d in docs)
    assert all(p in a.corpus for q in a.queries for p in bm25[q])
    judged = {d for docs in a.qrels.values() for d in docs}
    hard = {p for q in a.queries for p in bm25[q]} - judged
    assert len(a.corpus) == len(judged) + len(hard) + 500
    assert a.notes[-1].startswith("sample: 100 of 540 queries")


# ------------------------------------------------------------------ names and errors


def test_unknown_dataset_lists_valid_names():
    with pytest.raises(
        ValueError, match="valid names: msmarco-dev-subset, trec-dl19, trec-dl20, msmarco-dev"
    ):
        load_msmarco("msmarco-train")


def test_aliases():
    assert check_msmarco_dataset("DL19") == "trec-dl19"
    assert check_msmarco_dataset("trec_dl20") == "trec-dl20"
    assert check_msmarco_dataset("msmarco-dev-small") == "msmarco-dev"


def test_unknown_corpus():
    with pytest.raises(ValueError, match="'mini'.*'full'"):
        load_msmarco("trec-dl19", corpus="medium")


def test_mini_without_data_folder_names_the_setting(tmp_path, monkeypatch):
    monkeypatch.delenv("SBERT_TUTOR_DATA", raising=False)
    monkeypatch.setenv("SBERT_TUTOR_CACHE", str(tmp_path))  # nothing rebuilt yet; hub offline
    with pytest.raises(DataNotFoundError, match="SBERT_TUTOR_DATA is not set"):
        load_msmarco("msmarco-dev-subset")


def test_dev_offline_without_data_names_the_setting(monkeypatch):
    monkeypatch.delenv("SBERT_TUTOR_DATA", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match=r"8,841,823.*SBERT_TUTOR_DATA is not set"):
        load_msmarco("msmarco-dev")


def test_missing_file_names_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError, match="SBERT_TUTOR_DATA.*dev_small_subset/queries.tsv"):
        load_msmarco("msmarco-dev-subset")


def test_bm25_candidates_without_a_folder_come_from_the_shipped_list(monkeypatch):
    from sbert_tutor.data.msmarco import bm25_candidates_path
    from sbert_tutor.data.msmarco_hub import bm25_candidates_file

    monkeypatch.delenv("SBERT_TUTOR_DATA", raising=False)
    ranked = load_bm25_candidates()
    assert len(ranked) == 600 and {len(v) for v in ranked.values()} == {20}
    assert bm25_candidates_path() == bm25_candidates_file()


# ------------------------------------------------------------------ a tiny fixture folder


def _write(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(header)] + ["\t".join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _tiny_folder(root, qrels_rows=None):
    ms = root / "msmarco"
    _write(
        ms / "dev_small_subset" / "queries.tsv",
        ["qid", "query"],
        [(1, 'what is "sbert"'), (2, "define siamese"), (3, "no judgements here")],
    )
    _write(
        ms / "dev_small_subset" / "qrels.tsv",
        ["qid", "pid", "relevance"],
        qrels_rows or [(1, 10, 1), (2, 20, 1)],
    )
    _write(
        ms / "corpus_mini.tsv",
        ["pid", "passage", "origin"],
        [
            (10, 'SBERT is a "Siamese" BERT.', "dev"),
            (20, "Siamese: twins.", "dev"),
            (30, "x", "dev"),
        ],
    )
    return root


def test_tiny_folder_keeps_quotes_and_drops_unjudged_queries(tmp_path, monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")  # a hand-made subset
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(_tiny_folder(tmp_path)))
    data = load_msmarco("msmarco-dev-subset")
    assert data.queries == {"1": 'what is "sbert"', "2": "define siamese"}
    assert data.qrels == {"1": {"10": 1}, "2": {"20": 1}}
    assert data.corpus["10"] == 'SBERT is a "Siamese" BERT.' and len(data.corpus) == 3


def test_non_integer_grade_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")  # a hand-made subset
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(_tiny_folder(tmp_path, [(1, 10, 0.5)])))
    with pytest.raises(ValueError, match="not an integer"):
        load_msmarco("msmarco-dev-subset")


def test_judged_query_without_text_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")  # a hand-made subset
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(_tiny_folder(tmp_path, [(9, 10, 1)])))
    with pytest.raises(ValueError, match="judged queries have no text"):
        load_msmarco("msmarco-dev-subset")


def test_gzipped_tsv_is_read_with_quotes_as_text(tmp_path):
    path = tmp_path / "msmarco" / "train_triples_toy.tsv.gz"
    path.parent.mkdir(parents=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write('query\tpositive\tnegative\nq "a"\tp\tn\n')
    rows = [(r["query"], r["positive"], r["negative"]) for r in read_tsv(path)]
    assert rows == [('q "a"', "p", "n")]


def test_sample_needs_an_in_memory_corpus():
    stream = StreamedCorpus("stream", 1, lambda: iter([("1", "a")]))
    data = MSMarcoData("msmarco-dev", {"q": "x"}, {"q": {"1": 1}}, stream, "full", 1, "test")
    with pytest.raises(TypeError, match="in-memory corpus"):
        sample_msmarco(data, 1, 0)


# ------------------------------------------------------------------ the hub path (faked)


class _Table(dict):
    """A column-oriented stand-in for a ``datasets.Dataset``."""


def _fake_hub(monkeypatch, calls, fail=None):
    tables = {
        "default": {
            "dev": _Table({"query-id": ["1", "2"], "corpus-id": ["10", "20"], "score": [1.0, 1.0]}),
            "test": _Table({"query-id": [3, 3], "corpus-id": [10, 30], "score": [3.0, 0.0]}),
        },
        "queries": _Table({"_id": ["1", "2", "3", "4"], "text": ["q one", "q two", "q3", "q4"]}),
    }
    corpus_rows = [
        {"_id": "10", "title": "", "text": "passage ten"},
        {"_id": "20", "title": "Title", "text": "passage twenty"},
        {"_id": "30", "title": None, "text": "passage thirty"},
    ]

    def load_dataset(path, name=None, split=None, streaming=False):
        calls.append((path, name, split, streaming))
        if fail:
            raise fail
        if name == "corpus":
            return iter(corpus_rows) if streaming else _Table()
        table = tables[name]
        return table[split] if name == "default" else table

    module = types.ModuleType("datasets")
    module.load_dataset = load_dataset
    monkeypatch.setitem(sys.modules, "datasets", module)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)


def test_hub_path_dev_streams_the_full_collection(monkeypatch):
    calls = []
    _fake_hub(monkeypatch, calls)
    monkeypatch.delenv("SBERT_TUTOR_DATA", raising=False)
    data = load_msmarco("msmarco-dev")
    assert data.queries == {"1": "q one", "2": "q two"}
    assert data.qrels == {"1": {"10": 1}, "2": {"20": 1}}
    assert isinstance(data.corpus, StreamedCorpus) and len(data.corpus) == FULL_COLLECTION_SIZE
    assert list(data.corpus.items()) == [
        ("10", "passage ten"),
        ("20", "Title passage twenty"),
        ("30", "passage thirty"),
    ]
    assert (HUB_ID, "corpus", "corpus", True) in calls
    assert (HUB_ID, "default", "dev", False) in calls and (
        HUB_ID,
        "queries",
        "queries",
        False,
    ) in calls
    assert (
        data.source
        == f"topics: hub:{HUB_ID}; corpus: hub:{HUB_ID}[corpus] (8,841,823 passages, streamed)"
    )
    assert data.files == () and data.describe()["passages"] == FULL_COLLECTION_SIZE


def test_hub_path_dl19_full_collection_keeps_grades(monkeypatch):
    calls = []
    _fake_hub(monkeypatch, calls)
    monkeypatch.delenv("SBERT_TUTOR_DATA", raising=False)
    data = load_msmarco("trec-dl19", corpus="full")
    assert data.qrels == {"3": {"10": 3, "30": 0}} and data.queries == {"3": "q3"}
    assert data.relevance_threshold == 2 and (HUB_ID, "default", "test", False) in calls


def test_local_topics_with_hub_corpus(tmp_path, monkeypatch):
    calls = []
    _fake_hub(monkeypatch, calls)
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")  # a hand-made subset
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(_tiny_folder(tmp_path)))
    data = load_msmarco("msmarco-dev-subset", corpus="full")
    assert data.queries == {"1": 'what is "sbert"', "2": "define siamese"}
    assert isinstance(data.corpus, StreamedCorpus)
    assert calls == [(HUB_ID, "corpus", "corpus", True)]  # topics came from the folder


def test_dl20_has_no_hub_copy(monkeypatch):
    _fake_hub(monkeypatch, [])
    monkeypatch.delenv("SBERT_TUTOR_DATA", raising=False)
    with pytest.raises(DataNotFoundError, match="no copy on the hub.*SBERT_TUTOR_DATA"):
        load_msmarco("trec-dl20", corpus="full")


def test_hub_failure_names_the_setting(monkeypatch):
    _fake_hub(monkeypatch, [], fail=ConnectionError("no route to host"))
    monkeypatch.delenv("SBERT_TUTOR_DATA", raising=False)
    with pytest.raises(DataNotFoundError, match="no route to host.*SBERT_TUTOR_DATA"):
        load_msmarco("msmarco-dev")


def test_a_pair_judged_twice_is_an_error_naming_both_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")  # a hand-made subset
    rows = [(1, 10, 1), (2, 20, 1), (1, 10, 0)]
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(_tiny_folder(tmp_path, rows)))
    with pytest.raises(ValueError, match=r"qrels.tsv:4: query 1 and passage 10 are judged again "
                       r"\(first on line 2\)"):  # fmt: skip
        load_msmarco("msmarco-dev-subset")


def test_a_hub_pair_judged_twice_is_an_error(monkeypatch):
    import sbert_tutor.data.msmarco as msmarco

    rows = [("1", "10", 1.0), ("1", "10", 0.0)]
    with pytest.raises(
        ValueError, match=r"hub\[dev\]: \(1, 10\) is judged twice \(grades 1 and 0\)"
    ):
        msmarco._read_qrels(rows, "hub[dev]")
