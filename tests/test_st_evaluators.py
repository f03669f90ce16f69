"""sentence-transformers' own evaluators, run on a ``SentenceEncoder`` and on the same model loaded
by sentence-transformers, give the same numbers (to 1e-6); and the habits they rely on
(``similarity_fn_name``, ``encode_query`` / ``encode_document``, ``precision=None``,
``get_sentence_embedding_dimension``, ``truncate_dim``) mean what they mean there."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sbert_tutor import SentenceEncoder
from tests.conftest import needs_data, save_tiny_encoder

st = pytest.importorskip("sentence_transformers")
try:  # sentence-transformers >= 6 keeps them here; older ones in sentence_transformers.evaluation
    from sentence_transformers.sentence_transformer import evaluation as st_evaluation
except ImportError:  # pragma: no cover - depends on the installed version
    from sentence_transformers import evaluation as st_evaluation

TOL = 1e-6


@pytest.fixture(scope="module")
def stsb_pairs():
    from sbert_tutor.data import load_sts

    data = load_sts("stsb", "test")
    n = 120
    return data.sentences1[:n], data.sentences2[:n], [float(s) / 5 for s in data.scores[:n]]


def assert_same_metrics(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert ours[key] == pytest.approx(theirs[key], abs=TOL), key


@needs_data
@pytest.mark.parametrize("precision", [None, "int8", "binary"])
def test_embedding_similarity_evaluator(minilm, st_minilm, stsb_pairs, precision):
    s1, s2, scores = stsb_pairs
    evaluator = st_evaluation.EmbeddingSimilarityEvaluator(
        s1, s2, scores, precision=precision, name="stsb"
    )
    theirs = evaluator(st_minilm)
    evaluator = st_evaluation.EmbeddingSimilarityEvaluator(
        s1, s2, scores, precision=precision, name="stsb"
    )
    ours = evaluator(minilm)
    assert_same_metrics(ours, theirs)
    assert minilm.model_card_data.results[-1]["metrics"] == ours


@needs_data
def test_information_retrieval_evaluator(minilm, st_minilm, stsb_pairs):
    s1, s2, scores = stsb_pairs
    # one id per text: two copies of a passage tie, and rounding (1e-7) would order them
    doc_id = {text: f"d{i}" for i, text in reversed(list(enumerate(s2)))}
    corpus = {i: text for text, i in doc_id.items()}
    queries = {f"q{i}": s1[i] for i in range(len(s1)) if scores[i] >= 0.6}
    relevant = {f"q{i}": {doc_id[s2[i]]} for i in range(len(s1)) if scores[i] >= 0.6}
    assert len(queries) >= 30 and len(corpus) > 100

    def run(model):
        evaluator = st_evaluation.InformationRetrievalEvaluator(
            queries, corpus, relevant, name="stsb-ir", show_progress_bar=False
        )
        return evaluator(model)

    theirs, ours = run(st_minilm), run(minilm)
    assert_same_metrics(ours, theirs)
    assert 0.3 < ours["stsb-ir_cosine_ndcg@10"] < 1  # a real ranking, not a degenerate one


@needs_data
def test_triplet_evaluator(minilm, st_minilm, stsb_pairs):
    s1, s2, scores = stsb_pairs
    rows = [i for i in range(len(s1)) if scores[i] >= 0.6]
    anchors = [s1[i] for i in rows]
    positives = [s2[i] for i in rows]
    negatives = [s2[(i + 7) % len(s2)] for i in rows]

    def run(model):
        evaluator = st_evaluation.TripletEvaluator(
            anchors,
            positives,
            negatives,
            similarity_fn_names=["cosine", "dot", "euclidean", "manhattan"],
            name="stsb-triplets",
        )
        return evaluator(model)

    theirs, ours = run(st_minilm), run(minilm)
    assert_same_metrics(ours, theirs)


@pytest.mark.parametrize("fn_name", ["cosine", "dot", "euclidean", "manhattan"])
def test_similarity_fn_name_as_sentence_transformers(minilm, st_minilm, fn_name):
    texts = ["A man is playing a guitar.", "Someone plays music.", "The cat sleeps."]
    ours_model = minilm.with_pooling("mean")  # shares the weights; its own settings
    ours_model.similarity_fn_name = fn_name
    st_minilm.similarity_fn_name = fn_name
    try:
        emb = st_minilm.encode(texts)
        np.testing.assert_allclose(
            ours_model.similarity(emb, emb[:2]).numpy(),
            st_minilm.similarity(emb, emb[:2]),
            atol=1e-5,
        )
        np.testing.assert_allclose(
            ours_model.similarity_pairwise(emb, emb[::-1].copy()).numpy(),
            st_minilm.similarity_pairwise(emb, emb[::-1].copy()),
            atol=1e-5,
        )
    finally:
        st_minilm.similarity_fn_name = "cosine"
    assert minilm.similarity_fn_name == "cosine"
    with pytest.raises(ValueError, match="similarity_fn_name='maxsim' is not supported"):
        ours_model.similarity_fn_name = "maxsim"


def test_similarity_fn_name_is_saved_and_read(tiny_bert, tmp_path):
    from sentence_transformers import SentenceTransformer

    folder = save_tiny_encoder(tiny_bert, tmp_path / "m")
    encoder = SentenceEncoder.from_pretrained(folder, device="cpu", similarity_fn_name="dot")
    encoder.save(tmp_path / "dot")
    assert SentenceTransformer(str(tmp_path / "dot"), device="cpu").similarity_fn_name == "dot"
    assert SentenceEncoder.from_pretrained(tmp_path / "dot").similarity_fn_name == "dot"
    assert SentenceEncoder.from_pretrained(folder).similarity_fn_name == "cosine"


def test_encode_query_and_document_use_the_prompts_as_sentence_transformers(tiny_bert, tmp_path):
    import copy

    from sentence_transformers import SentenceTransformer

    model, tokenizer = tiny_bert
    encoder = SentenceEncoder(
        copy.deepcopy(model),
        tokenizer,
        max_seq_length=32,
        prompts={"query": "query: ", "document": "passage: ", "other": "other: "},
        default_prompt_name="other",
    )
    encoder.eval()
    folder = encoder.save(tmp_path / "prompts")
    reference = SentenceTransformer(str(folder), device="cpu")
    texts = ["how do I boil an egg", "Boil water, add the egg, wait nine minutes."]
    for method in ("encode_query", "encode_document", "encode"):
        np.testing.assert_allclose(
            getattr(encoder, method)(texts), getattr(reference, method)(texts), atol=TOL
        )
    # the role prompt differs from the default one: a test that cannot pass by accident
    assert not np.allclose(encoder.encode_query(texts), encoder.encode(texts), atol=1e-3)
    # a model without a "query" prompt: no prompt at all, not the default one
    encoder.prompts.pop("query")
    reference.prompts["query"] = ""  # what sentence-transformers 6.x loads for such a folder
    np.testing.assert_allclose(encoder.encode_query(texts), reference.encode_query(texts), atol=TOL)
    np.testing.assert_allclose(encoder.encode_query(texts), encoder.encode(texts, prompt=""))
    np.testing.assert_allclose(
        encoder.encode_query(texts, prompt=""), reference.encode_query(texts, prompt=""), atol=TOL
    )
    with pytest.raises(TypeError, match="unexpected keyword argument 'normalise'"):
        encoder.encode_query(texts, normalise=True)


def test_encode_query_and_document_take_exactly_encodes_keywords():
    """Named one by one (no ``**``), so they can drift from ``encode``: this keeps them equal."""
    import inspect

    from sbert_tutor import SentenceEncoder

    want = inspect.signature(SentenceEncoder.encode).parameters
    for method in (SentenceEncoder.encode_query, SentenceEncoder.encode_document):
        assert inspect.signature(method).parameters == want, method.__name__


def test_dimension_and_truncate_dim_as_sentence_transformers(minilm_path):
    texts = ["A man is playing a guitar.", "Someone plays music."]
    ours = SentenceEncoder.from_pretrained(minilm_path, device="cpu", truncate_dim=64)
    theirs = st.SentenceTransformer(str(minilm_path), device="cpu", truncate_dim=64)
    assert ours.get_embedding_dimension() == theirs.get_embedding_dimension() == 64
    assert ours.get_sentence_embedding_dimension() == 64
    np.testing.assert_allclose(ours.encode(texts), theirs.encode(texts), atol=TOL)
    assert ours.encode(texts, truncate_dim=32).shape == (2, 32)
    with pytest.raises(ValueError, match="truncate_dim must be between 1 and the embedding size"):
        SentenceEncoder.from_pretrained(minilm_path, truncate_dim=385)


def test_revision_and_cache_folder_reach_the_hub(monkeypatch, tmp_path, minilm_path):
    from sbert_tutor.encoders import resolve

    calls = []

    def fake_hub(name, offline, revision=None, cache_folder=None):
        calls.append((name, revision, cache_folder))
        return minilm_path

    monkeypatch.setattr(resolve, "_from_hub", fake_hub)
    encoder = SentenceEncoder.from_pretrained(
        "sentence-transformers/all-MiniLM-L6-v2",
        revision="abc123",
        cache_folder=tmp_path,
        device="cpu",
    )
    assert calls == [("sentence-transformers/all-MiniLM-L6-v2", "abc123", tmp_path)]
    assert "at revision abc123" in encoder.source
    with pytest.raises(ValueError, match="revision='abc123' names a hub branch.*local folder"):
        SentenceEncoder.from_pretrained(minilm_path, revision="abc123")


def test_precision_none_is_float32(minilm):
    texts = ["A man is playing a guitar.", "Someone plays music."]
    expected = minilm.encode(texts)
    got = minilm.encode(texts, precision=None)
    assert got.dtype == np.float32 and torch.equal(
        torch.from_numpy(got), torch.from_numpy(expected)
    )
