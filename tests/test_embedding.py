"""encode_unique: each distinct text encoded once, rows aligned with the input, in a stated order."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from sbert_tutor import embedding
from sbert_tutor.embedding import encode_unique


class Recording:
    """A fake encoder: a text's vector is (its length, its first letter's code); records calls."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, sentences, *, batch_size=64, show_progress=None):
        self.calls.append(list(sentences))
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
