"""Retrieval evaluation: the pipeline on toy data, its conventions, the CLI, and sentence-transformers.

The reference comparison runs sentence-transformers' ``InformationRetrievalEvaluator`` and ours on
the same model and the same real MS MARCO slice (100 dev-subset queries, their positives and their
BM25 top-20 candidates as hard distractors, about 2,000 passages).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from sbert_tutor.data.msmarco import MSMarcoData, StreamedCorpus
from sbert_tutor.evaluation.retrieval import (
    CorpusEmbeddings,
    encode_corpus,
    evaluate_msmarco,
    evaluate_retrieval,
    metrics_table,
    retrieval_table,
    retrieve,
    select_queries,
)
from sbert_tutor.metrics import evaluate_run, rank_documents
from tests.conftest import MINILM, needs_data

# ------------------------------------------------------------------ a deterministic toy encoder


class ToyEncoder:
    """Looks embeddings up in a table: the retrieval pipeline without a transformer."""

    def __init__(self, table):
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.calls = []

    def encode(self, sentences, batch_size=32, show_progress_bar=None):
        self.calls.append(len(sentences))
        return np.stack([self.table[s] for s in sentences])

    def describe(self):
        return {"name": "toy", "pooling": "none"}


def _toy():
    rng = np.random.default_rng(0)
    corpus = {f"d{i}": f"passage {i}" for i in range(12)}
    queries = {"q1": "query one", "q2": "query two", "q3": "query three"}
    table = {t: rng.normal(size=8) for t in [*corpus.values(), *queries.values()]}
    qrels = {
        "q1": {"d3": 1, "d7": 1},
        "q2": {"d0": 2, "d5": 1, "d9": 0},
        "q3": {"d11": 0},  # nothing relevant: not evaluated
    }
    return ToyEncoder(table), queries, corpus, qrels


def _brute_force_run(encoder, queries, corpus, top_k):
    """Cosine of every pair with NumPy, sorted: the reference for the chunked search."""
    pids = list(corpus)
    c = encoder.encode([corpus[p] for p in pids])
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    run = {}
    for qid, text in queries.items():
        q = encoder.encode([text])[0]
        s = c @ (q / np.linalg.norm(q))
        order = np.argsort(-s, kind="stable")[:top_k]
        run[qid] = {pids[i]: float(s[i]) for i in order}
    return run


def test_pipeline_matches_brute_force_and_evaluate_run():
    encoder, queries, corpus, qrels = _toy()
    result = evaluate_retrieval(
        encoder, queries, corpus, qrels, ks=(1, 3, 5), show_progress_bar=False
    )
    table = result.table
    expected_run = _brute_force_run(encoder, {q: queries[q] for q in ("q1", "q2")}, corpus, 5)
    run = result.run
    assert set(run) == {"q1", "q2"}  # q3 has no relevant passage
    for qid, docs in expected_run.items():
        assert rank_documents(run[qid]) == list(docs)
        np.testing.assert_allclose(list(run[qid].values()), list(docs.values()), atol=1e-6)
    expected = evaluate_run(run, {q: qrels[q] for q in ("q1", "q2")}, (1, 3, 5))
    assert result.results == {k: v for k, v in expected.items() if "@" in k}
    assert list(table.index) == ["precision", "accuracy", "recall", "mrr", "ndcg", "map"]
    assert list(table.columns) == [1, 3, 5]
    assert ((table >= 0) & (table <= 1)).all().all()
    assert result.n_queries == 2 and result.n_passages == 12 and result.top_k == 5
    assert set(result.provenance) >= {"git", "packages", "hardware", "model", "retrieval"}
    assert result.provenance["retrieval"]["top_k"] == 5
    assert repr(result) == repr(table) and result._repr_html_() == table._repr_html_()
    # no cutoff 10 here: the main number is nDCG at the largest cutoff
    assert result.primary_metric == "ndcg@5" and result.main_score == expected["ndcg@5"]
    at_ten = evaluate_retrieval(
        encoder, queries, corpus, qrels, ks=(1, 10), show_progress_bar=False
    )
    assert at_ten.primary_metric == "ndcg@10" and at_ten.main_score == at_ten.results["ndcg@10"]


def test_chunking_streaming_and_precomputed_embeddings_agree():
    encoder, queries, corpus, qrels = _toy()
    reference = retrieve(encoder, queries, corpus, top_k=4, show_progress_bar=False)
    chunked = retrieve(
        encoder, queries, corpus, top_k=4, corpus_chunk_size=5, show_progress_bar=False
    )
    stream = StreamedCorpus("toy stream", None, lambda: iter(corpus.items()))
    streamed = retrieve(
        encoder, queries, stream, top_k=4, corpus_chunk_size=3, show_progress_bar=False
    )
    embedded = encode_corpus(encoder, corpus, chunk_size=5, show_progress_bar=False)
    assert isinstance(embedded, CorpusEmbeddings) and len(embedded) == 12
    precomputed = retrieve(encoder, queries, embedded, top_k=4, show_progress_bar=False)
    for other in (chunked, streamed, precomputed):
        assert {q: rank_documents(d) for q, d in other.items()} == {
            q: rank_documents(d) for q, d in reference.items()
        }
    assert max(encoder.calls) <= 12


def test_top_k_defaults_to_the_largest_cutoff_and_may_not_be_smaller():
    encoder, queries, corpus, qrels = _toy()
    result = evaluate_retrieval(encoder, queries, corpus, qrels, ks=(2, 7), show_progress_bar=False)
    assert result.top_k == 7 and all(len(d) == 7 for d in result.run.values())
    with pytest.raises(ValueError, match="top_k=5 is smaller than the largest cutoff k=10"):
        evaluate_retrieval(encoder, queries, corpus, qrels, ks=(1, 10), top_k=5)
    # a larger top_k changes nothing at the cutoffs
    wide = evaluate_retrieval(encoder, queries, corpus, qrels, ks=(2, 7), top_k=12)
    assert wide.results == result.results


@pytest.mark.parametrize("ks", [(), (0, 5), (1.5,), "10"])
def test_bad_cutoffs(ks):
    encoder, queries, corpus, qrels = _toy()
    with pytest.raises((ValueError, TypeError)):
        evaluate_retrieval(encoder, queries, corpus, qrels, ks=ks)


def test_query_selection_threshold_and_missing_texts():
    _, queries, _, qrels = _toy()
    chosen, graded = select_queries(queries, qrels, relevance_threshold=2)
    assert list(chosen) == ["q2"] and graded == {"q2": qrels["q2"]}
    with pytest.warns(UserWarning, match="1 judged queries have no text"):
        chosen, _ = select_queries({"q2": "x"}, qrels)
    assert list(chosen) == ["q2"]
    with pytest.raises(ValueError, match="no query has both a text"), pytest.warns(UserWarning):
        select_queries({"q9": "x"}, qrels)


def test_evaluate_retrieval_refuses_unknown_keywords_and_keeps_given_provenance():
    encoder, queries, corpus, qrels = _toy()
    with pytest.raises(TypeError, match="unexpected keyword argument 'k'"):
        evaluate_retrieval(encoder, queries, corpus, qrels, k=3, show_progress_bar=False)
    result = evaluate_retrieval(
        encoder, queries, corpus, qrels, show_progress_bar=False, provenance={"dataset": "toy"}
    )
    assert result.provenance["dataset"] == "toy"
    assert result.provenance["retrieval"]["ks"] == [1, 5, 10]


def test_bad_corpus_type():
    encoder, queries, _, qrels = _toy()
    with pytest.raises(TypeError, match="mapping or a StreamedCorpus"):
        evaluate_retrieval(encoder, queries, ["passage 0"], qrels)


def test_metrics_table_pivots_and_skips_uncut_keys():
    table = metrics_table({"mrr@10": 0.5, "mrr@1": 0.25, "ndcg@10": 0.6, "ndcg@1": 0.3, "map": 1})
    assert list(table.index) == ["mrr", "ndcg"] and list(table.columns) == [1, 10]
    assert table.loc["mrr", 10] == 0.5
    with pytest.raises(ValueError, match="name@k"):
        metrics_table({"map": 0.1})


def _toy_data(name, queries, qrels, corpus, threshold=1):
    return MSMarcoData(name, queries, qrels, corpus, "mini", threshold, "toy")


def test_evaluate_msmarco_encodes_the_shared_corpus_once():
    encoder, queries, corpus, qrels = _toy()
    a = _toy_data("msmarco-dev-subset", {"q1": queries["q1"]}, {"q1": qrels["q1"]}, corpus)
    b = _toy_data("trec-dl19", {"q2": queries["q2"]}, {"q2": qrels["q2"]}, dict(corpus), 2)
    encoder.calls.clear()
    result = evaluate_msmarco(encoder, [a, b], ks=(1, 5), show_progress_bar=False)
    summary = result.table
    assert encoder.calls.count(12) == 1  # one pass over the 12 passages
    assert list(summary.index) == ["msmarco-dev-subset", "trec-dl19"]
    assert summary.loc["trec-dl19", "relevant if grade >="] == 2
    alone = evaluate_retrieval(
        encoder,
        b.queries,
        corpus,
        b.qrels,
        ks=(1, 5),
        relevance_threshold=2,
        show_progress_bar=False,
    )
    assert result.tables["trec-dl19"].results == alone.results
    assert summary.loc["trec-dl19", "ndcg@5"] == alone.results["ndcg@5"]


def test_evaluate_msmarco_refuses_different_corpora_and_clashing_queries():
    encoder, queries, corpus, qrels = _toy()
    a = _toy_data("a", {"q1": queries["q1"]}, {"q1": qrels["q1"]}, corpus)
    b = _toy_data("b", {"q1": queries["q1"]}, {"q1": qrels["q1"]}, {"d3": "passage 3"})
    with pytest.raises(ValueError, match="do not share one corpus"):
        evaluate_msmarco(encoder, [a, b])
    c = _toy_data("c", {"q1": "query two"}, {"q1": qrels["q1"]}, corpus)
    with pytest.raises(ValueError, match="two different texts"):
        evaluate_msmarco(encoder, [a, c])


def test_retrieval_table_fields():
    result = retrieval_table({"q": {"a": 1.0}}, {"q": {"a": 2}}, ks=[1], relevance_threshold=2)
    assert result.table.loc["mrr", 1] == 1.0 and result.n_queries == 1
    assert "grade >= 2" in result.note


# ------------------------------------------------------------------ the CLI


def _fake_cli(monkeypatch):
    import sbert_tutor.commands.eval_ir as eval_ir
    import sbert_tutor.data.msmarco as msmarco

    encoder, queries, corpus, qrels = _toy()
    data = _toy_data("trec-dl19", queries, qrels, corpus, 2)
    monkeypatch.setattr(msmarco, "load_msmarco", lambda name, corpus=None: data)
    monkeypatch.setattr(eval_ir, "load_encoder", lambda args: encoder)


def test_cli_json_layout(tmp_path, capsys, monkeypatch):
    from sbert_tutor.cli import main

    _fake_cli(monkeypatch)
    out = tmp_path / "ir.json"
    argv = ["eval-ir", "--model", "toy", "--dataset", "trec-dl19", "--ks", "1,10"]
    assert main([*argv, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "mrr@10=" in printed and "grade >= 2" in printed
    payload = json.loads(out.read_text())
    assert payload["model"] == "toy" and payload["dataset"] == "trec-dl19"
    assert payload["relevance_threshold"] == 2 and payload["n_queries"] == 1
    assert set(payload["results"]) == {
        f"{m}@{k}"
        for m in ("precision", "accuracy", "recall", "mrr", "ndcg", "map")
        for k in (1, 10)
    }
    assert all(0 <= v <= 1 for v in payload["results"].values())
    assert set(payload["provenance"]) >= {"git", "packages", "model", "retrieval", "command"}


def test_cli_errors_say_what_to_do(capsys):
    from sbert_tutor.cli import main

    assert main(["eval-ir", "--model", MINILM, "--dataset", "msmarco-train"]) == 2
    assert "valid names: msmarco-dev-subset" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["eval-ir", "--model", MINILM, "--dataset", "trec-dl19", "--ks", "1,x"])
    assert "comma-separated positive integers" in capsys.readouterr().err


# ------------------------------------------------------------------ against sentence-transformers


def _st_ir_evaluator():
    try:
        from sentence_transformers.sentence_transformer.evaluation import (
            InformationRetrievalEvaluator,
        )
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.evaluation import InformationRetrievalEvaluator
    return InformationRetrievalEvaluator


@pytest.fixture(scope="module")
def dev_slice():
    from sbert_tutor.data.msmarco import load_bm25_candidates, load_msmarco, sample_msmarco

    data = load_msmarco("msmarco-dev-subset")
    return sample_msmarco(data, 40, 0, candidates=load_bm25_candidates())


@pytest.mark.slow
@needs_data
def test_matches_sentence_transformers_ir_evaluator(minilm, st_minilm, dev_slice):
    """Same model, same real data: MRR@10, nDCG@10, Recall@10 (and the rest) agree to 1e-6.

    Like with like: the dev qrels are binary with one positive per query, so ST's set-based
    relevance, its binary nDCG and its MAP@k denominator min(k, R) coincide with trec_eval's.
    """
    evaluator_cls = _st_ir_evaluator()
    data = dev_slice
    # 40 queries, each with its judged passages and BM25 top 20 (hard distractors): enough
    # ranks of every kind for the measures to differ, half the encoding of 100 queries
    assert len(data.queries) == 40 and 700 <= len(data.corpus) <= 900
    relevant = {q: {d for d, g in docs.items() if g >= 1} for q, docs in data.qrels.items()}
    ks = (1, 5, 10)
    st_eval = evaluator_cls(
        data.queries,
        data.corpus,
        relevant,
        mrr_at_k=list(ks),
        ndcg_at_k=list(ks),
        accuracy_at_k=list(ks),
        precision_recall_at_k=list(ks),
        map_at_k=list(ks),
        batch_size=32,
        write_csv=False,
    )
    reference = st_eval(st_minilm)
    ours = evaluate_retrieval(
        minilm, data.queries, data.corpus, data.qrels, ks=ks, batch_size=32, show_progress_bar=False
    ).results
    assert 0.3 < ours["mrr@10"] < 0.95  # hard distractors: a discriminating slice
    for metric in ("mrr", "ndcg", "recall", "precision", "accuracy", "map"):
        for k in ks:
            assert ours[f"{metric}@{k}"] == pytest.approx(
                reference[f"cosine_{metric}@{k}"], abs=1e-6
            ), f"{metric}@{k}"


@needs_data
def test_cli_on_real_data_small(tmp_path, monkeypatch, minilm):
    """The real loader and model through the CLI, on a 3-query sample (seconds, not minutes)."""
    import sbert_tutor.commands.eval_ir as eval_ir
    import sbert_tutor.data.msmarco as msmarco
    from sbert_tutor.cli import main

    load = msmarco.load_msmarco
    monkeypatch.setattr(
        msmarco,
        "load_msmarco",
        lambda n, corpus=None: msmarco.sample_msmarco(load(n, corpus), 3, 30),
    )
    monkeypatch.setattr(eval_ir, "load_encoder", lambda args: minilm)
    out = tmp_path / "dev.json"
    argv = ["eval-ir", "--model", MINILM, "--dataset", "msmarco-dev-subset", "--json", str(out)]
    assert main(argv) == 0
    payload = json.loads(out.read_text())
    assert payload["n_queries"] == 3 and payload["n_passages"] == 33
    assert any(f.endswith("corpus_mini.tsv") for f in payload["provenance"]["data_files"])
