"""OpenVINO's transformer in place of torch's: the same embeddings as sentence-transformers (fp32),
close ones in bf16, and clear errors where a converted model cannot go (training, saving)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("openvino")

from sbert_tutor.openvino_backend import openvino_precision, to_openvino  # noqa: E402

SENTENCES = [
    "A man is playing a guitar.",
    "The new movie is awesome, and the cast was wonderful in every single scene of it.",
    "x",
    "Two dogs run through a field of tall grass while their owner watches from the fence.",
] * 3


@pytest.fixture(scope="module")
def openvino_fp32(minilm):
    return to_openvino(minilm, "fp32", threads=1)


def test_fp32_gives_sentence_transformers_embeddings(openvino_fp32, st_minilm):
    reference = st_minilm.encode(SENTENCES, convert_to_numpy=True)
    np.testing.assert_allclose(openvino_fp32.encode(SENTENCES), reference, atol=1e-5)
    assert "OpenVINO" in openvino_fp32.describe()["source"]


def test_bf16_is_close_to_fp32_but_not_equal(minilm, openvino_fp32):
    fp32 = openvino_fp32.encode(SENTENCES)
    bf16 = to_openvino(minilm, "bf16", threads=1).encode(SENTENCES)
    gap = np.abs(bf16 - fp32).max()
    assert 1e-6 < gap < 1e-2
    cos = (bf16 * fp32).sum(1)  # both normalised by the model
    assert cos.min() > 0.999


def test_the_torch_encoder_is_left_as_it_was(minilm):
    """Converting reads the torch model and leaves it as it was: its train/eval mode, its
    embeddings (bit for bit), its place as the encoder's transformer."""
    before = minilm.encode(SENTENCES[:4])
    was = minilm.model.training
    fast = to_openvino(minilm, "fp32", threads=1)
    assert minilm.model.training is was and type(minilm.model).__name__ == "BertModel"
    np.testing.assert_array_equal(minilm.encode(SENTENCES[:4]), before)
    np.testing.assert_allclose(fast.encode(SENTENCES[:4]), before, atol=1e-5)


def test_auto_precision_follows_the_cpu():
    assert openvino_precision("auto", native_bf16=True) == "bf16"
    assert openvino_precision("auto", native_bf16=False) == "fp32"
    assert openvino_precision(" BF16 ") == "bf16"
    with pytest.raises(ValueError, match="'auto', 'fp32' or 'bf16'"):
        openvino_precision("int4")


def test_training_and_saving_say_what_to_do(openvino_fp32, tmp_path):
    batch = openvino_fp32.tokenizer(["a sentence"], return_tensors="pt")
    with pytest.raises(RuntimeError, match="train the torch encoder"):
        openvino_fp32(batch["input_ids"], batch["attention_mask"])
    with pytest.raises(TypeError, match="save the torch"):
        openvino_fp32.save(tmp_path / "model")
