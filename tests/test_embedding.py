"""encode_unique: each distinct text encoded once, rows aligned with the input, in a stated order;
encode_texts: the one way the library calls an encoder (sentence-transformers' keyword names)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from sbert_tutor.encoders import protocol as embedding
from sbert_tutor.encoders.protocol import encode_texts, encode_unique


class Recording:
    """A fake encoder: a text's vector is (its length, its first letter's code); records calls."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, sentences, *, batch_size=64, show_progress_bar=None):
        self.calls.append(list(sentences))
        self.progress = show_progress_bar
        return np.array([[len(s), ord(s[0])] for s in sentences], dtype=np.float32)


def test_rows_follow_the_input_and_each_text_is_encoded_once():
    encoder = Recording()
    texts = ["bb", "a", "bb", "ccc", "a"]
    emb = encode_unique(encoder, texts, batch_size=7)
    reference = np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)
    np.testing.assert_array_equal(emb, reference)
    assert encoder.calls == [["bb", "a", "ccc"]]  # one call, first-appearance order
    encode_unique(encoder, texts, order="sorted")
    assert encoder.calls[-1] == ["a", "bb", "ccc"]
    with pytest.raises(ValueError, match="order must be"):
        encode_unique(encoder, texts, order="random")


def test_docstring_example():
    assert doctest.testmod(embedding).failed == 0


class Forwarding(Recording):
    """An encoder that takes any keyword (as sentence-transformers' ``encode`` does)."""

    def encode(self, sentences, **kwargs):
        self.kwargs = kwargs
        return super().encode(sentences, batch_size=kwargs["batch_size"])


@pytest.mark.parametrize("progress", [True, False, None])
def test_encode_texts_passes_show_progress_bar(progress):
    encoder, forwarding = Recording(), Forwarding()
    encode_texts(encoder, ["a"], batch_size=3, show_progress_bar=progress)
    encode_texts(forwarding, ["a"], batch_size=3, show_progress_bar=progress)
    assert encoder.progress is progress
    assert forwarding.kwargs == {"batch_size": 3, "show_progress_bar": progress}


def test_a_sentence_transformers_model_is_an_encoder(st_minilm, minilm):
    texts = ["A man plays a guitar.", "A dog runs.", "A man plays a guitar."]
    np.testing.assert_allclose(
        encode_unique(st_minilm, texts), encode_unique(minilm, texts), atol=1e-5, rtol=0
    )
