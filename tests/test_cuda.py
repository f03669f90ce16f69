"""On a CUDA GPU (skipped elsewhere): the GPU encode and training paths against the CPU and
serial paths.

``bash benchmarks/gpu_run.sh tests`` runs these with the rest of the GPU-sensitive tests.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

SENTENCES = [
    "A man is playing a guitar.",
    "short",
    "The cat sits outside on the mat, as it does every morning before breakfast.",
    "Two dogs run in the park while their owners talk about the weather.",
] * 40


@pytest.fixture(scope="module")
def gpu_minilm(minilm_path):
    from sbert_tutor import SentenceEncoder

    return SentenceEncoder.from_pretrained(str(minilm_path), device="cuda")


def test_pipelined_cuda_encode_equals_serial_and_cpu(gpu_minilm, minilm):
    piped = gpu_minilm.encode(SENTENCES, batch_size=16, pipeline=True)
    serial = gpu_minilm.encode(SENTENCES, batch_size=16, pipeline=False)
    np.testing.assert_allclose(piped, serial, rtol=0, atol=1e-5)
    np.testing.assert_allclose(piped, minilm.encode(SENTENCES, batch_size=16), rtol=0, atol=1e-4)
    tensor = gpu_minilm.encode(SENTENCES, batch_size=16, convert_to_tensor=True)
    assert tensor.device.type == "cuda"
    np.testing.assert_allclose(tensor.cpu().numpy(), serial, rtol=0, atol=1e-5)


@pytest.mark.parametrize("dtype", ["auto", "bf16", "fp16"])
def test_half_precision_encode_is_close_to_fp32(gpu_minilm, dtype):
    fp32 = gpu_minilm.encode(SENTENCES, compute_dtype="fp32")
    half = gpu_minilm.encode(SENTENCES, compute_dtype=dtype)
    assert half.dtype == np.float32
    assert float(np.abs(half - fp32).max()) < 3e-3


def test_chapter_11_dropout_views_on_the_gpu(gpu_minilm):
    from tests.book.pages import page_functions

    table = page_functions("11_semantic_search_guided", "dropout_view_similarity")[
        "dropout_view_similarity"
    ](gpu_minilm, SENTENCES[:4])  # as chapter 11's page has it
    assert np.allclose(table["cosine, eval mode"], 1.0, atol=1e-5)


def test_trainer_auto_amp_on_the_gpu(minilm_path):
    from sbert_tutor import SentenceEncoder
    from sbert_tutor.training import MNRLObjective, Trainer, TrainingConfig
    from sbert_tutor.training.trainer import auto_amp

    enc = SentenceEncoder.from_pretrained(str(minilm_path), device="cuda")
    pairs = [(s, s.upper()) for s in dict.fromkeys(SENTENCES)] * 4
    pairs = [(a, f"{b} {i}") for i, (a, b) in enumerate(pairs)]
    config = TrainingConfig(max_steps=3, batch_size=4, amp="auto", show_progress_bar=False)
    trainer = Trainer(enc, MNRLObjective(), pairs, config)
    assert trainer.amp == auto_amp("cuda") and trainer.bucket == 32
    assert (trainer.scaler is not None) == (trainer.amp == "fp16")
    record = trainer.train()
    assert all(np.isfinite(s["loss"]) for s in record.steps)


def test_torchrun_with_more_processes_than_gpus_says_so(minilm_path, tmp_path):
    """A real torchrun on this machine, one process more than it has GPUs."""
    n = torch.cuda.device_count() + 1
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    cmd += [f"--nproc_per_node={n}", "-m", "sbert_tutor.cli", "train", "--model"]
    cmd += [str(minilm_path), "--loss", "mnrl", "--train", str(tmp_path / "none.tsv")]
    cmd += ["--out", str(tmp_path / "out"), "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode != 0
    assert f"torchrun started {n} processes on this machine" in done.stderr
    assert "--device cpu" in done.stderr
