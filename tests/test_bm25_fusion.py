"""BM25 (bm25s) against the Lucene BM25 formula written out by hand and against Anserini's shipped
top 20; reciprocal-rank fusion on a hand-worked example."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from sbert_tutor.metrics import evaluate_run
from sbert_tutor.search.fusion import rrf
from tests.conftest import needs_data

pytest.importorskip("bm25s")
pytest.importorskip("Stemmer")

from sbert_tutor.search.bm25 import ANSERINI_B, ANSERINI_K1, BM25Index, analyze  # noqa: E402

CORPUS = {
    "d1": "The cat sat on the mat while the other cat slept.",
    "d2": "Dogs and cats are popular pets in many homes.",
    "d3": "A stock market crash wiped out the savings of many families.",
    "d4": "The market for cat food grew as more homes adopted cats and kittens.",
    "d5": "Rain fell on the city all night.",
}


def lucene_bm25(query: str, corpus: dict[str, str], k1: float, b: float) -> dict[str, float]:
    """Lucene's BM25 from its formula, on the same terms (the module docstring's equation)."""
    terms = dict(zip(corpus, analyze(list(corpus.values())), strict=True))
    n = len(corpus)
    mean_length = sum(len(t) for t in terms.values()) / n
    scores = {}
    for doc, words in terms.items():
        counts = Counter(words)
        total = 0.0
        for term in analyze([query])[0]:
            df = sum(term in t for t in terms.values())
            if counts[term] == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = counts[term]
            total += idf * tf / (tf + k1 * (1 - b + b * len(words) / mean_length))
        if total > 0:
            scores[doc] = total
    return scores


@pytest.mark.parametrize("query", ["cats at home", "the market crash", "cat food for kittens"])
@pytest.mark.parametrize("k1, b", [(ANSERINI_K1, ANSERINI_B), (1.2, 0.75)])
def test_bm25_scores_are_the_lucene_formula(query, k1, b):
    run = BM25Index(CORPUS, k1=k1, b=b).search({"q": query}, top_k=5)["q"]
    expected = lucene_bm25(query, CORPUS, k1, b)
    assert run.keys() == expected.keys() and len(run) >= 2
    for doc, score in expected.items():
        assert run[doc] == pytest.approx(score, rel=1e-5)


def test_analyzer_lowercases_drops_stop_words_and_stems():
    assert analyze(["The Cats were RUNNING to the markets"]) == [["cat", "were", "run", "market"]]


def test_bm25_errors_name_the_fix():
    with pytest.raises(ValueError, match="corpus is empty"):
        BM25Index({})
    with pytest.raises(ValueError, match="0 <= b <= 1"):
        BM25Index(CORPUS, b=1.5)
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        BM25Index(CORPUS).search(["cat"], top_k=0)


def test_rrf_by_hand():
    bm25 = {"q1": {"a": 12.0, "b": 9.0, "c": 9.0}, "q2": {"x": 1.0}}
    dense = {"q1": {"c": 0.9, "d": 0.5}}
    fused = rrf([bm25, dense], k=60)
    # bm25 ranks a, c, b (the tie 9.0 by id, descending, as trec_eval); dense ranks c, d
    expected = {
        "a": 1 / 61,
        "c": 1 / 62 + 1 / 61,
        "b": 1 / 63,
        "d": 1 / 62,
    }
    assert fused["q1"] == pytest.approx(expected)
    assert fused["q2"] == pytest.approx({"x": 1 / 61})  # a query of one run only
    assert evaluate_run(fused, {"q1": {"c": 1}}, ks=[1])["mrr@1"] == 1.0
    assert rrf([bm25, dense], k=0)["q1"]["c"] == pytest.approx(1 / 2 + 1 / 1)


def test_rrf_refuses_nothing_to_fuse():
    with pytest.raises(ValueError, match="at least one run"):
        rrf([])


@needs_data
def test_bm25_top20_agrees_with_anserini_on_the_mini_corpus():
    """Anserini's top 20 (full collection) are all in corpus_mini, so an exact Lucene BM25 over it
    would return the same sets; the idf of a smaller corpus moves a few passages at the edge."""
    from sbert_tutor.data.msmarco import load_bm25_candidates, load_msmarco, load_msmarco_queries

    anserini = dict(list(load_bm25_candidates().items())[:150])
    queries, _ = load_msmarco_queries("msmarco-dev")
    index = BM25Index(dict(load_msmarco("msmarco-dev-subset").corpus))
    run = index.search({q: queries[q] for q in anserini}, top_k=20)
    overlap = [len(set(run[q]) & set(top)) / 20 for q, top in anserini.items()]
    assert sum(overlap) / len(overlap) > 0.95
