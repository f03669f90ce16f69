"""The trainer's precision and batch widths, checked on a CPU.

* ``amp="auto"`` follows the written rule (:func:`sbert_tutor.training.trainer.auto_amp`):
  fp32 on a CPU, bf16 from compute capability 8.0, fp16 with a gradient scaler below;
* width bucketing of the training batches leaves the fp32 loss curve and weights as they were
  (dropout off: its random draws depend on the tensor shape);
* the gradient-scaler path (used with fp16) reaches the weights of the plain path: the scale is
  a power of two, so scaling and unscaling are exact, and clipping sees unscaled gradients.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.training import (
    MNRLObjective,
    Trainer,
    TrainingConfig,
    embed_rows,
)
from sbert_tutor.training.trainer import auto_amp
from tests.conftest import build_tiny_bert

pytestmark = pytest.mark.usefixtures("single_thread")

WORDS = ["cat", "dog", "car", "bus", "rain", "snow", "bread", "soup", "tree", "river"]


def _pairs(n: int = 48) -> list[tuple[str, str]]:
    rows = []
    for i in range(n):
        a, b = WORDS[i % 10], WORDS[(3 * i + 1) % 10]
        tail = " and more words" * (i % 5)  # mixed lengths: widths differ between batches
        rows.append((f"the {a} near the {b}{tail} {i}", f"a {a} by a {b} {i}"))
    return rows


@pytest.fixture
def encoder(tiny_bert):
    tokenizer = tiny_bert[1]
    return SentenceEncoder(
        build_tiny_bert(dropout=0.0), tokenizer, pooling="mean", max_seq_length=48
    )


def _config(**overrides) -> TrainingConfig:
    settings = {"max_steps": 6, "batch_size": 8, "lr": 1e-3, "show_progress_bar": False, "seed": 3}
    return TrainingConfig(**{**settings, **overrides})


def _run(encoder, scaler=None, **overrides):
    trainer = Trainer(encoder, MNRLObjective(), _pairs(), _config(**overrides))
    if scaler is not None:
        trainer.scaler = scaler
    record = trainer.train()
    losses = [s["loss"] for s in record.steps]
    return trainer, losses, [p.detach().clone() for p in encoder.parameters()]


# --------------------------------------------------------------------------- amp="auto"
@pytest.mark.parametrize(
    ("device", "capability", "expected"),
    [
        ("cpu", None, None),
        ("cuda", (7, 5), "fp16"),  # T4: no bf16 tensor cores
        ("cuda", (7, 0), "fp16"),  # V100
        ("cuda:1", (8, 0), "bf16"),  # A100
        ("cuda", (8, 9), "bf16"),  # L4
        ("cuda", (9, 0), "bf16"),  # H100
    ],
)
def test_auto_amp_rule(device, capability, expected):
    assert auto_amp(device, capability) == expected


def test_auto_amp_on_a_cpu_trains_in_fp32_without_a_warning(encoder):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trainer = Trainer(encoder, MNRLObjective(), _pairs(), _config(amp="auto"))
    assert trainer.amp is None and trainer.scaler is None and trainer.bucket is None
    with pytest.warns(UserWarning, match="needs a CUDA device"):  # an explicit request still warns
        Trainer(encoder, MNRLObjective(), _pairs(), _config(amp="bf16"))


def test_auto_amp_reads_the_gpu(encoder, monkeypatch):
    """The trainer's own resolution, with the device and its capability stood in for."""
    trainer = Trainer(encoder, MNRLObjective(), _pairs(), _config())
    trainer.device = torch.device("cuda", 0)
    for capability, expected in (((7, 5), "fp16"), ((9, 0), "bf16")):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d, c=capability: c)
        assert trainer._check_amp("auto") == expected


def test_config_amp_and_bucket_values():
    assert TrainingConfig(amp="fp32").amp is None and TrainingConfig(amp="auto").amp == "auto"
    assert TrainingConfig(bucket=[64, 32]).bucket == (64, 32)
    with pytest.raises(ValueError, match="amp must be one of"):
        TrainingConfig(amp="int8")
    with pytest.raises(ValueError, match="bucket"):
        TrainingConfig(bucket="wide")


# --------------------------------------------------------------------------- bucketing
def test_embed_rows_bucketed_equals_unbucketed(encoder):
    rows = _pairs(10)
    plain = embed_rows(encoder, rows)
    for bucket in (16, 32, (24, 48)):
        torch.testing.assert_close(embed_rows(encoder, rows, bucket), plain, rtol=0, atol=1e-6)


def test_bucketed_training_gives_the_same_run_in_fp32(tiny_bert):
    def fresh():
        return SentenceEncoder(
            build_tiny_bert(dropout=0.0), tiny_bert[1], pooling="mean", max_seq_length=48
        )

    _, plain_losses, plain_weights = _run(fresh(), bucket=None)
    trainer, losses, weights = _run(fresh(), bucket=16)
    assert trainer.bucket == 16
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-5)
    for a, b in zip(weights, plain_weights, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


# --------------------------------------------------------------------------- gradient scaler
def test_gradient_scaler_path_reaches_the_plain_weights(tiny_bert):
    """fp16 training's scaler path (scale the loss, unscale before clipping, step through the
    scaler), run on a CPU in fp32: with a power-of-two scale the weights are the plain ones.
    A scaler path that clipped scaled gradients, or never unscaled, ends elsewhere."""

    def fresh():
        return SentenceEncoder(
            build_tiny_bert(dropout=0.0), tiny_bert[1], pooling="mean", max_seq_length=48
        )

    for clip in (0.5, None):
        plain, plain_losses, plain_weights = _run(fresh(), max_grad_norm=clip)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12, growth_interval=2)
        trainer, losses, weights = _run(fresh(), scaler=scaler, max_grad_norm=clip)
        assert trainer.scaler.get_scale() == 2.0**15  # grew every 2 steps: 6 finite steps
        np.testing.assert_allclose(losses, plain_losses, rtol=1e-6)
        for a, b in zip(weights, plain_weights, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
        norms = [s["grad_norm"] for s in trainer.record.steps]  # unscaled, as without a scaler
        np.testing.assert_allclose(norms, [s["grad_norm"] for s in plain.record.steps], rtol=1e-5)


def test_gradient_scaler_skips_a_step_whose_gradients_overflow(tiny_bert):
    enc = SentenceEncoder(
        build_tiny_bert(dropout=0.0), tiny_bert[1], pooling="mean", max_seq_length=48
    )
    before = [p.detach().clone() for p in enc.parameters()]
    scaler = torch.amp.GradScaler("cpu", init_scale=3e38)  # loss * scale = inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "lr_scheduler.step() before optimizer.step()"
        trainer, _, weights = _run(enc, scaler=scaler, max_steps=1, max_grad_norm=None)
    assert trainer.step == 1
    for a, b in zip(weights, before, strict=True):  # the optimizer step was skipped
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert trainer.scheduler.last_epoch == 0  # and the schedule did not move on
