"""SentenceEncoder against sentence-transformers on the same model and inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from sbert_tutor import SentenceEncoder
from sbert_tutor.encoders.sentence_encoder import TruncationWarning

SENTENCES = [
    "A man is playing a guitar.",
    "  Leading and trailing spaces are stripped by both libraries.  ",
    "Quotes \"inside\" text, and 'single' ones.",
    "Ünïcödé, émojis 🙂 and numbers 3.14159 survive tokenisation.",
    "short",
    " ".join(["A very long input that will be cut at the model's max_seq_length."] * 40),
    "The cat sits outside.",
    "A woman is slicing an onion with a knife on a wooden board in the kitchen.",
]


def test_encode_matches_sentence_transformers(minilm, st_minilm):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        ours = minilm.encode(SENTENCES, batch_size=3)
    ref = st_minilm.encode(SENTENCES, batch_size=3, convert_to_numpy=True)
    assert ours.dtype == np.float32 and ours.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(ours, ref, atol=1e-4, rtol=0)


def test_truncation_is_warned_and_counted(minilm):
    with pytest.warns(TruncationWarning, match=r"1 of 8 inputs .* max_seq_length=256"):
        minilm.encode(SENTENCES)


def test_order_and_batching_do_not_change_results(minilm):
    short = SENTENCES[:5] + SENTENCES[6:]
    a = minilm.encode(short, batch_size=2, sort_by_length=True)
    b = minilm.encode(short, batch_size=16, sort_by_length=False)
    one_by_one = np.stack([minilm.encode([s])[0] for s in short])
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(a, one_by_one, atol=1e-5)


def test_normalize_embeddings_on_a_model_without_normalisation(minilm):
    raw_model = minilm.with_pooling("mean", normalize=False)
    raw = raw_model.encode(SENTENCES[:3])
    unit = raw_model.encode(SENTENCES[:3], normalize_embeddings=True)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(unit, raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-5)
    np.testing.assert_allclose(minilm.encode(SENTENCES[:3]), unit, atol=1e-6)  # the model's own


@pytest.mark.parametrize("old", ["normalize", "show_progress"])
def test_old_keywords_are_gone(minilm, old):
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{old}'"):
        minilm.encode(SENTENCES[:3], **{old: True})


def test_unknown_keyword_is_a_type_error(minilm):
    with pytest.raises(TypeError, match="unexpected keyword argument 'normalise'"):
        minilm.encode(SENTENCES[:3], normalise=True)


def test_reads_sentence_transformers_config(minilm):
    assert minilm.describe() | {"source": None} == {
        "name": "sentence-transformers/all-MiniLM-L6-v2",
        "source": None,
        "pooling": "mean",
        "normalize": True,
        "max_seq_length": 256,
        "embedding_dim": 384,
    }


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (["fine", None], TypeError, r"sentences\[1\] is NoneType"),
        (["fine", 3], TypeError, r"sentences\[1\] is int"),
        (None, TypeError, "list of strings"),
    ],
)
def test_bad_inputs(minilm, bad, error, match):
    with pytest.raises(error, match=match):
        minilm.encode(bad)


def test_empty_strings_are_embedded_as_sentence_transformers_does(minilm, st_minilm):
    from sbert_tutor.encoders.sentence_encoder import EmptyTextWarning

    texts = ["A passage.", "", "Another one.", "   "]
    with pytest.warns(EmptyTextWarning, match=r"2 of 4 inputs are empty.*sentences\[1\]") as seen:
        ours = minilm.encode(texts)
    assert len([w for w in seen if w.category is EmptyTextWarning]) == 1
    np.testing.assert_allclose(ours[1], st_minilm.encode(""), atol=1e-6)
    np.testing.assert_allclose(ours[3], st_minilm.encode(""), atol=1e-6)
    np.testing.assert_allclose(ours[[0, 2]], st_minilm.encode([texts[0], texts[2]]), atol=1e-6)
    with pytest.warns(EmptyTextWarning, match="1 of 1"):
        np.testing.assert_allclose(minilm.encode(""), st_minilm.encode(""), atol=1e-6)


def test_save_roundtrip_with_sentence_transformers(minilm, st_minilm, tmp_path):
    from sentence_transformers import SentenceTransformer

    folder = minilm.save(tmp_path / "model")
    ref = st_minilm.encode(SENTENCES[:5])
    st_back = SentenceTransformer(str(folder), device="cpu")
    ours_back = SentenceEncoder.from_pretrained(folder, device="cpu")
    np.testing.assert_allclose(st_back.encode(SENTENCES[:5]), ref, atol=1e-5)
    np.testing.assert_allclose(ours_back.encode(SENTENCES[:5]), ref, atol=1e-5)
    assert ours_back.describe()["pooling"] == "mean" and ours_back.normalize


@pytest.mark.parametrize("pooling", ["mean", "max", "cls"])
def test_every_pooling_matches_sentence_transformers(tiny_bert, tmp_path, pooling):
    """A random tiny BERT saved in sentence-transformers format: ST must read the same pooling."""
    from sentence_transformers import SentenceTransformer

    model, tokenizer = tiny_bert
    enc = SentenceEncoder(model, tokenizer, pooling=pooling, normalize=False, max_seq_length=16)
    folder = enc.save(tmp_path / pooling)
    st = SentenceTransformer(str(folder), device="cpu")
    assert st.max_seq_length == 16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        ours = enc.encode(SENTENCES, batch_size=4)
        ref = st.encode(SENTENCES, batch_size=4)
    np.testing.assert_allclose(ours, ref, atol=1e-5)


def test_pooling_override(minilm_path):
    enc = SentenceEncoder.from_pretrained(minilm_path, pooling="cls", normalize=False, device="cpu")
    assert enc.pooling == "cls" and not enc.normalize
    with pytest.raises(ValueError, match="mean, max, cls"):
        SentenceEncoder.from_pretrained(minilm_path, pooling="weird", device="cpu")


def test_forward_has_gradients(tiny_bert):
    """forward's gradients are those of the plain transformer with mean pooling and the L2
    normalisation written out by hand: through the token embeddings into every weight, and none
    from the padding (it is masked out of the pooling and the attention)."""
    model, tokenizer = tiny_bert
    # no dropout: the two passes are comparable (the model is shared with other tests)
    enc = SentenceEncoder(model, tokenizer, pooling="mean", normalize=True).eval()
    batch = enc.tokenize(["one sentence", "and another one that is longer"])
    mask = batch["attention_mask"]
    assert (mask == 0).any()  # the first sentence is padded
    weights = torch.randn(2, 32, generator=torch.Generator().manual_seed(0))
    params = [
        model.embeddings.word_embeddings.weight,
        model.encoder.layer[0].attention.self.query.weight,
    ]

    # the reference: the Hugging Face model fed its own token embeddings, pooling by hand
    tokens = model.embeddings.word_embeddings(batch["input_ids"])
    hidden = model(inputs_embeds=tokens, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * m).sum(1) / m.sum(1)
    ref_out = mean / mean.pow(2).sum(-1, keepdim=True).sqrt()
    ref_tokens, *ref_params = torch.autograd.grad((ref_out * weights).sum(), [tokens, *params])

    out = enc(**batch)
    assert out.shape == (2, 32)
    grads = torch.autograd.grad((out * weights).sum(), params)
    torch.testing.assert_close(out, ref_out)
    for grad, ref in zip(grads, ref_params, strict=True):
        assert ref.abs().sum() > 0
        torch.testing.assert_close(grad, ref)
    # the word-embedding gradient is the token-embedding gradient summed over each token's uses
    by_row = torch.zeros_like(params[0]).index_add_(
        0, batch["input_ids"].flatten(), ref_tokens.reshape(-1, ref_tokens.shape[-1])
    )
    torch.testing.assert_close(grads[0], by_row)
    # padding changes nothing: its token embeddings get no gradient
    assert ref_tokens[mask == 0].abs().max() == 0
    assert ref_tokens[mask == 1].abs().amax(-1).min() > 0


def test_forward_refuses_a_keyword_it_does_not_pass_on(tiny_bert):
    """A Hugging Face model silently drops keywords it does not know; forward must not."""
    model, tokenizer = tiny_bert
    enc = SentenceEncoder(model, tokenizer, pooling="mean").eval()  # no dropout: comparable
    batch = enc.tokenize(["one sentence"])
    with pytest.raises(TypeError, match="unexpected keyword argument 'output_hidden_state'"):
        enc(**batch, output_hidden_state=True)
    with torch.no_grad():
        plain = enc(**batch)
        segments = enc(**batch, token_type_ids=torch.zeros_like(batch["input_ids"]))
    torch.testing.assert_close(plain, segments)


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_encode_leaves_a_wrapped_model_in_its_mode(tiny_bert, mode):
    """A transformer wrapped in eval mode stays in eval mode after encode (dropout stays off for
    the caller's own forward passes); one wrapped in train mode goes back to train mode."""
    import copy

    model = copy.deepcopy(tiny_bert[0]).train(mode == "train")
    encoder = SentenceEncoder(model, tiny_bert[1], pooling="mean", max_seq_length=16)
    assert encoder.training == model.training == (mode == "train")
    encoder.encode(["one", "two"], truncate_dim=8, normalize_embeddings=True)
    assert model.training == (mode == "train")
    assert all(m.training == (mode == "train") for m in model.modules())


def test_encode_gives_every_submodule_its_own_mode_back(tiny_bert):
    """The model put in eval mode on its own, under an encoder in train mode: encode leaves each
    as it found it (sbert_tutor.runtime.modes.eval_mode), and its doctest holds."""
    import copy
    import doctest

    from sbert_tutor.runtime import modes

    encoder = SentenceEncoder(copy.deepcopy(tiny_bert[0]).train(), tiny_bert[1], max_seq_length=16)
    encoder.model.eval()
    encoder.encode(["one", "two"])
    assert encoder.training and not any(m.training for m in encoder.model.modules())
    assert doctest.testmod(modes).failed == 0
