"""Re-ranking (sbert_tutor.search.rerank) and the labelled BM25 candidates split by query.

References: a hand-worked example; sentence-transformers' ``CrossEncoder.rank`` on the same
folder (written by sentence-transformers from the offline all-MiniLM-L6-v2 with a seeded random
head); the raw ``bm25_candidates.tsv`` read with the csv module.
"""

from __future__ import annotations

import csv
import warnings

import numpy as np
import pytest
import torch

from sbert_tutor.data.msmarco import (
    candidate_pairs,
    load_bm25_candidates,
    load_msmarco,
    split_queries,
)
from sbert_tutor.encoders.cross_encoder import CrossEncoder
from sbert_tutor.metrics import evaluate_run, rank_documents
from sbert_tutor.search.rerank import BiEncoderScorer, cross_encoder_scores, merge_reranked, rerank
from tests.conftest import needs_data, shared_data

pytestmark = pytest.mark.usefixtures("single_thread")


class TableScorer:
    """A cross-encoder stand-in: the score of a pair is looked up in a table."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def predict(self, pairs, batch_size=32, show_progress_bar=None):
        self.calls.append(list(pairs))
        return np.array([self.table[p] for p in pairs], dtype=np.float32)


QUERIES = {"q1": "guitar strings", "q2": "capital of france"}
PASSAGES = {
    "a": "A guitar has six strings.",
    "b": "Violins have four strings.",
    "c": "Paris is the capital of France.",
    "d": "France is in Europe.",
    "e": "Bananas are yellow.",
}
# the bi-encoder's ranking: q1 -> b, e, a ; q2 -> d, c, e
RUN = {"q1": {"a": 0.5, "b": 0.9, "e": 0.7}, "q2": {"c": 0.6, "d": 0.8, "e": 0.1}}
CE = {
    ("guitar strings", PASSAGES["a"]): 0.95,
    ("guitar strings", PASSAGES["b"]): 0.40,
    ("guitar strings", PASSAGES["e"]): 0.01,
    ("capital of france", PASSAGES["c"]): 0.97,
    ("capital of france", PASSAGES["d"]): 0.30,
    ("capital of france", PASSAGES["e"]): 0.02,
}


# ---------------------------------------------------------------------------------- hand-worked
def test_rerank_all_candidates_by_hand():
    out = rerank(TableScorer(CE), QUERIES, RUN, PASSAGES)
    assert rank_documents(out["q1"]) == ["a", "b", "e"]  # 0.95 > 0.40 > 0.01
    assert rank_documents(out["q2"]) == ["c", "d", "e"]
    assert out["q1"]["a"] == pytest.approx(0.95) and out["q2"]["e"] == pytest.approx(0.02)
    # MRR@1 with the relevant a (q1) and c (q2): 0 before, 1 after
    qrels = {"q1": {"a": 1}, "q2": {"c": 1}}
    assert evaluate_run(RUN, qrels, ks=[1])["mrr@1"] == 0.0
    assert evaluate_run(out, qrels, ks=[1])["mrr@1"] == 1.0


def test_rerank_top_k_keeps_the_rest_below_in_bi_encoder_order():
    scorer = TableScorer(CE)
    out = rerank(scorer, QUERIES, RUN, PASSAGES, k=2)
    # q1: b, e re-ranked (0.40 > 0.01), a stays third: 0.01 - 1
    assert rank_documents(out["q1"]) == ["b", "e", "a"]
    assert out["q1"]["a"] == pytest.approx(0.01 - 1)
    # q2: d, c re-ranked (c 0.97 > d 0.30), e third
    assert rank_documents(out["q2"]) == ["c", "d", "e"]
    # only the first k candidates of each query were scored, in one batched call
    assert len(scorer.calls) == 1 and len(scorer.calls[0]) == 4
    assert ("guitar strings", PASSAGES["a"]) not in scorer.calls[0]


def test_one_scoring_serves_every_smaller_k():
    scores = cross_encoder_scores(TableScorer(CE), QUERIES, RUN, PASSAGES, k=3)
    for k in (1, 2, 3):
        assert merge_reranked(RUN, scores, k) == rerank(
            TableScorer(CE), QUERIES, RUN, PASSAGES, k=k
        )
    assert rank_documents(merge_reranked(RUN, scores, 1)["q1"]) == rank_documents(RUN["q1"])


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(ValueError, match="k must be a positive integer"):
        rerank(TableScorer(CE), QUERIES, RUN, PASSAGES, k=0)
    with pytest.raises(KeyError, match="'q2' of the run has no text"):
        rerank(TableScorer(CE), {"q1": "guitar strings"}, RUN, PASSAGES)
    with pytest.raises(KeyError, match="passage 'a'"):
        rerank(TableScorer(CE), QUERIES, RUN, {k: v for k, v in PASSAGES.items() if k != "a"})
    with pytest.raises(KeyError, match="no cross-encoder score"):
        merge_reranked(RUN, {"q1": {"b": 0.3}}, k=2)


# ------------------------------------------------------------------ against sentence-transformers
@needs_data
def test_rerank_orders_as_sentence_transformers_rank(minilm_path, tmp_path):
    st = pytest.importorskip("sentence_transformers")
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = st.CrossEncoder(str(minilm_path), num_labels=1, device="cpu")
    reference.save(str(tmp_path / "ce"))
    ours = CrossEncoder.from_pretrained(tmp_path / "ce", device="cpu")

    data = load_msmarco("msmarco-dev-subset")
    bm25 = load_bm25_candidates()
    qids = list(data.queries)[:3]
    # a first-stage run: the BM25 top-10 with descending scores
    run = {q: {p: 10.0 - i for i, p in enumerate(bm25[q][:10])} for q in qids}
    k = 6
    got = rerank(ours, data.queries, run, data.corpus, k=k, batch_size=4)
    for q in qids:
        head = bm25[q][:k]
        expected = reference.rank(data.queries[q], [data.corpus[p] for p in head], batch_size=4)
        assert rank_documents(got[q])[:k] == [head[r["corpus_id"]] for r in expected]
        np.testing.assert_allclose(
            [got[q][head[r["corpus_id"]]] for r in expected],
            [r["score"] for r in expected],
            atol=1e-5,
            rtol=0,
        )
        assert rank_documents(got[q])[k:] == bm25[q][k:10]  # the tail keeps BM25's order


# ---------------------------------------------------------------------------------- split
def test_split_is_by_query_deterministic_and_disjoint():
    ids = [f"q{i}" for i in range(50)] + ["q3"]  # a repeated id counts once
    split = split_queries(ids, n_test=12, seed=3)
    assert len(split.test) == 12 and len(split.train) == 38
    assert not set(split.train) & set(split.test)
    assert set(split.train) | set(split.test) == set(ids)
    assert split == split_queries(ids, n_test=12, seed=3)
    assert split.test != split_queries(ids, n_test=12, seed=4).test
    assert list(split.test) == sorted(split.test, key=ids.index)  # the given order kept
    for bad in (0, 50, 2.5, True):
        with pytest.raises(ValueError, match="n_test must be an integer"):
            split_queries(ids, n_test=bad)


def test_candidate_pairs_by_hand():
    candidates = {"q1": [("b", 0), ("a", 1), ("e", 0)], "q2": [("d", 0), ("e", 0)]}
    rows = candidate_pairs(QUERIES, PASSAGES, candidates, ["q1", "q2"], negatives_per_query=1)
    assert rows == [
        ("guitar strings", PASSAGES["a"], 1),
        ("guitar strings", PASSAGES["b"], 0),
    ]  # q2 has no positive: skipped
    assert len(candidate_pairs(QUERIES, PASSAGES, candidates, ["q1"])) == 3
    with pytest.raises(KeyError, match="not in the corpus"):
        candidate_pairs(QUERIES, {}, candidates, ["q1"])


@needs_data
def test_loaders_agree_with_the_raw_candidate_file():
    path = shared_data() / "msmarco" / "dev_small_subset" / "bm25_candidates.tsv"
    with path.open(encoding="utf-8", newline="") as f:
        raw = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    labelled = load_bm25_candidates(with_labels=True)
    assert sum(map(len, labelled.values())) == len(raw) == 12_000
    by_query: dict[str, list[tuple[int, str, int]]] = {}
    for row in raw:
        by_query.setdefault(row["qid"], []).append(
            (int(row["bm25_rank"]), row["pid"], int(row["msmarco_label"]))
        )
    assert labelled == {q: [(p, lab) for _, p, lab in sorted(v)] for q, v in by_query.items()}

    data = load_msmarco("msmarco-dev-subset")
    split = split_queries(list(data.queries), n_test=100, seed=0)
    assert not set(split.train) & set(split.test)
    rows = candidate_pairs(data.queries, data.corpus, labelled, split.train)
    test_texts = {data.queries[q] for q in split.test}
    assert not {r[0] for r in rows} & test_texts  # no test query leaks into training
    # every positive row is a raw-file positive of a training query, and each such query's
    # 20 candidates are all there
    positives = {(r["qid"], r["pid"]) for r in raw if r["msmarco_label"] == "1"}
    train_with_positive = [q for q in split.train if any(lab for _, lab in labelled[q])]
    assert sum(r[2] for r in rows) == sum(1 for q, _ in positives if q in set(split.train))
    assert len(rows) == 20 * len(train_with_positive)
    # the labels agree with the qrels of the subset
    for q in train_with_positive[:50]:
        assert {p for p, lab in labelled[q] if lab} <= set(data.qrels[q])


def test_docstring_examples_run():
    import doctest

    from sbert_tutor.search import rerank as rerank_module

    assert doctest.testmod(rerank_module).failed == 0
    example = split_queries(["q1", "q2", "q3", "q4"], n_test=1, seed=0)
    assert (example.test, example.train) == (("q4",), ("q1", "q2", "q3"))  # as its docstring


def test_the_bi_encoder_scorer_scores_by_the_cosine():
    class Fixed:
        vectors = {"q": [3.0, 4.0], "a": [3.0, 4.0], "b": [4.0, -3.0], "c": [-3.0, -4.0]}

        def encode(self, texts, batch_size=32, normalize_embeddings=False, show_progress_bar=None):
            x = np.array([self.vectors[t] for t in texts])
            return x / np.linalg.norm(x, axis=1, keepdims=True) if normalize_embeddings else x

    scores = BiEncoderScorer(Fixed()).predict([("q", "a"), ("q", "b"), ("q", "c")])
    np.testing.assert_allclose(scores, [1.0, 0.0, -1.0], atol=1e-7)
    assert scores.dtype == np.float32
    halved = BiEncoderScorer(Fixed()).predict([("q", "a")], activation_fn=lambda t: t / 2)
    np.testing.assert_allclose(halved, [0.5], atol=1e-7)
    with pytest.raises(TypeError):
        BiEncoderScorer(Fixed()).predict([("q", "a")], activaton_fn=torch.nn.Identity())
