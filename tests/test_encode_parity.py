"""``encode`` with sentence-transformers' keywords returns what sentence-transformers returns:
the same type, dtype, device and values, call for call."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sbert_tutor.search.quantize import quantize_embeddings
from tests.test_encoder import SENTENCES

st = pytest.importorskip("sentence_transformers")
pytestmark = [
    pytest.mark.filterwarnings("ignore::sbert_tutor.encoders.sentence_encoder.TruncationWarning"),
    pytest.mark.usefixtures("single_thread"),
]
TEXTS = SENTENCES[:4] + SENTENCES[6:]  # no truncation: values compare tightly


def _same(ours, ref, atol=1e-5):
    """Same container, element types, dtypes, devices, shapes and values."""
    assert type(ours) is type(ref), (type(ours), type(ref))
    if isinstance(ref, list):
        assert len(ours) == len(ref)
        for a, b in zip(ours, ref, strict=True):
            _same(a, b, atol)
    elif isinstance(ref, torch.Tensor):
        assert (ours.dtype, ours.device, ours.shape) == (ref.dtype, ref.device, ref.shape)
        torch.testing.assert_close(ours, ref, atol=atol, rtol=0)
    else:
        assert (ours.dtype, ours.shape) == (ref.dtype, ref.shape)
        np.testing.assert_allclose(ours, ref, atol=atol, rtol=0)


CALLS = [
    {},
    {"convert_to_numpy": True},
    {"convert_to_tensor": True},
    {"convert_to_numpy": False},
    {"convert_to_tensor": True, "convert_to_numpy": False},
    {"normalize_embeddings": True},
    {"normalize_embeddings": False},  # the model's Normalize module still applies
    {"show_progress_bar": False, "batch_size": 2},
    {"device": "cpu"},
    {"truncate_dim": 64},
    {"truncate_dim": 64, "normalize_embeddings": True},
    {"prompt": "query: "},
]


@pytest.mark.parametrize("kw", CALLS, ids=lambda kw: ",".join(kw) or "defaults")
@pytest.mark.parametrize("single", [False, True], ids=["list", "one string"])
def test_same_call_same_result(minilm, st_minilm, kw, single):
    texts = TEXTS[0] if single else TEXTS
    _same(minilm.encode(texts, **kw), st_minilm.encode(texts, **kw))


@pytest.fixture(scope="module")
def raw_pair(minilm, st_minilm):
    """The same weights without the Normalize module, in both libraries."""
    return minilm.with_pooling("mean", normalize=False), st.SentenceTransformer(
        modules=[st_minilm[0], st_minilm[1]], device="cpu"
    )


@pytest.mark.parametrize(
    "kw", [{}, {"normalize_embeddings": True}, {"normalize_embeddings": False}]
)
def test_normalize_embeddings_means_the_same(raw_pair, kw):
    ours, theirs = raw_pair
    _same(ours.encode(TEXTS, **kw), theirs.encode(TEXTS, **kw))


@pytest.mark.parametrize("precision", ["int8", "uint8", "binary", "ubinary"])
def test_quantisation_equals_sentence_transformers(raw_pair, real_sentences, precision):
    from sentence_transformers.util.quantization import quantize_embeddings as st_quantize

    ours, theirs = raw_pair
    floats = theirs.encode(real_sentences[:32])
    exact = quantize_embeddings(floats, precision)  # same input: bit-identical
    ref = st_quantize(floats, precision)
    assert exact.dtype == ref.dtype and exact.shape == ref.shape
    np.testing.assert_array_equal(exact, ref)

    got = ours.encode(real_sentences[:32], precision=precision)
    ref = theirs.encode(real_sentences[:32], precision=precision)
    assert type(got) is np.ndarray and got.dtype == ref.dtype and got.shape == ref.shape
    # The float inputs differ by ~1e-7, which can move a value across a bucket edge.
    if precision.endswith("binary"):
        assert (
            np.unpackbits(got.view(np.uint8)) != np.unpackbits(ref.view(np.uint8))
        ).mean() < 1e-3
    else:
        diff = np.abs(got.astype(int) - ref.astype(int))
        assert diff.max() <= 1 and (diff > 0).mean() < 1e-3
    as_tensor = ours.encode(TEXTS, precision=precision, convert_to_tensor=True)
    ref_tensor = theirs.encode(TEXTS, precision=precision, convert_to_tensor=True)
    assert (as_tensor.dtype, as_tensor.device) == (ref_tensor.dtype, ref_tensor.device)


def test_token_embeddings_like_sentence_transformers(minilm, st_minilm):
    ours = minilm.encode(TEXTS, output_value="token_embeddings")
    ref = st_minilm.encode(TEXTS, output_value="token_embeddings")
    _same(ours, ref)


EMPTY_CALLS = [
    {},
    {"convert_to_tensor": True},
    {"convert_to_numpy": False},
    {"truncate_dim": 64, "normalize_embeddings": True},
    *({"precision": p} for p in ("int8", "uint8", "binary", "ubinary")),
    {"precision": "binary", "convert_to_tensor": True},
    {"precision": "int8", "convert_to_numpy": False},
    {"output_value": "token_embeddings"},
    {"output_value": "token_embeddings", "convert_to_tensor": True},
]


@pytest.mark.parametrize("kw", EMPTY_CALLS, ids=lambda kw: ",".join(map(str, kw.values())) or "-")
def test_empty_input_gives_an_empty_result(minilm, st_minilm, kw):
    """``encode([])`` returns what sentence-transformers returns: the same type, with no rows.

    Where that is an array or tensor, sentence-transformers 6.2 gives a bare ``(0,)`` (float64
    for numpy); ours keeps the width, dtype and device of a non-empty result, ``[0, d]``, so it
    stacks with other embeddings. Lists are empty lists in both.
    """
    ours = minilm.encode([], **kw)
    theirs = st_minilm.encode([], **kw)
    assert type(ours) is type(theirs)
    if isinstance(theirs, list):
        assert ours == [] == theirs
        return
    assert theirs.shape[0] == 0
    full = st_minilm.encode(TEXTS[:2], **kw)  # a non-empty result of the same call
    assert ours.shape == (0, full.shape[1]) and ours.dtype == full.dtype
    if isinstance(full, torch.Tensor):
        assert ours.device == full.device


SIMILARITY_INPUTS = {
    "numpy": lambda e: e,
    "tensor": torch.from_numpy,
    "list of tensors": lambda e: list(torch.from_numpy(e)),
    "one vector": lambda e: e[0],
}


@pytest.mark.parametrize("form", SIMILARITY_INPUTS)
def test_similarity_equals_sentence_transformers(raw_pair, form):
    """Cosine of every pair (and of aligned pairs), on the same embeddings, in the forms encode
    returns; unnormalised embeddings, so the norms are really divided out."""
    ours, theirs = raw_pair
    emb = theirs.encode(TEXTS)
    a, b = SIMILARITY_INPUTS[form](emb[:3]), SIMILARITY_INPUTS[form](emb[2:])
    got, ref = ours.similarity(a, b), theirs.similarity(a, b)
    assert isinstance(got, torch.Tensor) and (got.dtype, got.shape) == (ref.dtype, ref.shape)
    torch.testing.assert_close(got, ref, atol=1e-6, rtol=0)
    if form != "one vector":
        b = SIMILARITY_INPUTS[form](emb[3:6])
        got, ref = ours.similarity_pairwise(a, b), theirs.similarity_pairwise(a, b)
        assert (got.dtype, got.shape) == (ref.dtype, ref.shape) == (torch.float32, (3,))
        torch.testing.assert_close(got, ref, atol=1e-6, rtol=0)


def test_int8_of_one_sentence_says_why(minilm):
    with pytest.raises(ValueError, match="one sentence cannot give"):
        minilm.encode("just one", precision="int8")


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"output_value": None}, "output_value=None is not supported"),
        ({"precision": "int4"}, "unknown precision 'int4'"),
        ({"prompt_name": "query"}, r"prompt_name 'query' is not one of this model's prompts"),
        ({"truncate_dim": 1000}, "truncate_dim must be between 1 and the embedding size 384"),
    ],
)
def test_bad_keywords_say_what_to_do(minilm, kw, match):
    with pytest.raises(ValueError, match=match):
        minilm.encode(TEXTS, **kw)


# ------------------------------------------------------------------ devices


def test_cuda_on_a_cpu_build_is_a_clear_error(minilm, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"device 'cuda' asked for, but .*device='cpu'"):
        minilm.encode(TEXTS, device="cuda")
    assert minilm.device.type == "cpu"


def test_missing_gpu_index_is_a_clear_error(minilm, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ValueError, match=r"'cuda:3' asked for, but this machine has 1 visible"):
        minilm.encode(TEXTS, device="cuda:3")
    with pytest.raises(ValueError, match="not a device name"):
        minilm.encode(TEXTS, device="gpu please")


def test_from_pretrained_checks_the_device_first(minilm_path, monkeypatch):
    from sbert_tutor import SentenceEncoder

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device 'cuda' asked for"):
        SentenceEncoder.from_pretrained(minilm_path, device="cuda")


def test_encode_on_another_device_puts_the_model_back(tiny_bert, monkeypatch):
    """encode(device=...) runs there and returns the model to where it was (moves recorded)."""
    from sbert_tutor import SentenceEncoder

    model, tokenizer = tiny_bert
    enc = SentenceEncoder(model, tokenizer)
    moves = []
    real_to = SentenceEncoder.to

    def spy(self, *args, **kwargs):
        moves.append(str(args[0]))
        return real_to(self, "cpu")  # only a CPU here: record the move, stay on the CPU

    monkeypatch.setattr(SentenceEncoder, "to", spy)
    monkeypatch.setattr(
        "sbert_tutor.encoders.sentence_encoder.check_device", lambda d: torch.device("meta")
    )
    with pytest.raises(RuntimeError):  # the batch really goes to 'meta', which cannot run
        enc.encode(["a", "b"], device="meta")
    assert moves == ["meta", "cpu"]  # moved there, and back even though encoding failed


def test_search_refuses_a_missing_gpu_clearly(monkeypatch):
    from sbert_tutor.search.exact import semantic_search

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device 'cuda' asked for"):
        semantic_search(np.eye(2), np.eye(2), top_k=1, device="cuda")
