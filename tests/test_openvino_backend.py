"""OpenVINO's transformer in place of torch's: the same embeddings as sentence-transformers (fp32),
close ones in bf16, int8 matrix products that keep the embeddings' geometry, and clear errors
where a converted model cannot go (training, saving, int8 without calibration)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

pytest.importorskip("openvino")

from sbert_tutor.data import load_sts  # noqa: E402
from sbert_tutor.encoders.openvino import (  # noqa: E402
    check_calibration,
    openvino_precision,
    to_openvino,
)
from sbert_tutor.runtime.precision import cpu_has_native_bf16  # noqa: E402
from tests.conftest import needs_data  # noqa: E402

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
    if cpu_has_native_bf16():
        assert 1e-6 < gap < 1e-2
    else:  # OpenVINO runs a bf16 hint in fp32 on a CPU without native bf16 (AVX2 only)
        assert gap < 1e-5
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
    assert openvino_precision("INT8") == "int8"
    with pytest.raises(ValueError, match="'auto', 'fp32', 'bf16' or 'int8'"):
        openvino_precision("int4")


def test_training_and_saving_say_what_to_do(openvino_fp32, tmp_path):
    batch = openvino_fp32.tokenizer(["a sentence"], return_tensors="pt")
    with pytest.raises(RuntimeError, match="train the torch encoder"):
        openvino_fp32(batch["input_ids"], batch["attention_mask"])
    with pytest.raises(TypeError, match="save the torch"):
        openvino_fp32.save(tmp_path / "model")


@pytest.fixture(scope="module")
def calibration() -> list[str]:
    """300 distinct STSb training sentences (never the test set)."""
    train = load_sts("stsb", "train")
    return list(dict.fromkeys(train.sentences1 + train.sentences2))[:300]


@needs_data
def test_int8_runs_integer_matrix_products_and_keeps_the_geometry(
    minilm, openvino_fp32, calibration
):
    """The compiled graph holds int8 operations (so the quantisation happened); on 200 STSb dev
    pairs the embeddings move by more than bf16's rounding, yet point where fp32's do, and the
    pairs' cosine scores keep fp32's ranking (what STS and search read)."""
    pytest.importorskip("nncf")
    int8 = to_openvino(minilm, "int8", threads=1, calibration=calibration)
    runtime = int8.model.compiled.get_runtime_model()
    types = {
        op.get_rt_info()["runtimePrecision"].astype(str)
        for op in runtime.get_ops()
        if "runtimePrecision" in op.get_rt_info()
    }
    assert {"i8", "u8"} & types, types
    dev = load_sts("stsb", "dev")
    pairs = slice(0, 200)
    a32, b32 = (openvino_fp32.encode(t[pairs]) for t in (dev.sentences1, dev.sentences2))
    a8, b8 = (int8.encode(t[pairs]) for t in (dev.sentences1, dev.sentences2))
    assert np.abs(a8 - a32).max() > 1e-2  # more than bf16's rounding
    direction = np.concatenate([(a8 * a32).sum(1), (b8 * b32).sum(1)])
    print("int8 vs fp32 cosine: median", np.median(direction), "min", direction.min())
    assert np.median(direction) > 0.99
    rho = spearmanr((a8 * b8).sum(1), (a32 * b32).sum(1)).statistic
    print("Spearman of the pair scores, int8 vs fp32:", rho)
    assert rho > 0.99
    assert "int8 by NNCF, calibrated on 300 sentences" in int8.describe()["source"]


def test_calibration_is_required_for_int8_and_refused_elsewhere():
    with pytest.raises(ValueError, match="needs calibration sentences"):
        check_calibration("int8", None)
    with pytest.raises(ValueError, match="needs calibration sentences"):
        check_calibration("int8", "one string, not a list")
    with pytest.raises(ValueError, match="no non-empty sentence"):
        check_calibration("int8", ["", "  "])
    with pytest.raises(ValueError, match="drop calibration"):
        check_calibration("bf16", ["a sentence"])
    assert check_calibration("int8", ["a", " ", "b"]) == ["a", "b"]
    assert check_calibration("fp32", None) == []


def test_forward_refuses_an_unknown_input(openvino_fp32):
    batch = openvino_fp32.tokenize(["one sentence"])
    with (
        torch.no_grad(),
        pytest.raises(TypeError, match="unexpected keyword argument 'pixel_values'"),
    ):
        openvino_fp32.model(**batch, pixel_values=batch["input_ids"])
