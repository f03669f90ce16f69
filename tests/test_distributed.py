"""Data parallel for real: 2 CPU processes on the gloo backend against 1 process.

* the loss of in-batch-negative objectives with embeddings gathered across processes equals the
  single-process loss on the concatenated batch, and the gradients reaching each process's own
  embeddings are the world size times the single-process gradient (DDP's average undoes that);
* 2-process training (batch 4 each) ends with the parameters of 1-process training (batch 8),
  also for ``cached_mnrl``, whose gradients the trainer sums over processes itself;
* sharded encoding returns what one process's ``encode`` returns.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2
STEPS = 4


def _init(rank: int, rendezvous: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=WORLD)


def _tiny_encoder(tokenizer_path: str):
    from transformers import AutoTokenizer

    from sbert_tutor import SentenceEncoder
    from tests.conftest import build_tiny_bert

    model = build_tiny_bert(dropout=0.0)  # dropout noise would differ per process
    return SentenceEncoder(
        model, AutoTokenizer.from_pretrained(tokenizer_path), normalize=False, max_seq_length=32
    )


def _pairs() -> list[tuple[str, str]]:
    topics = [
        "football match goal",
        "stock market shares",
        "cooking pasta sauce",
        "rain storm weather",
    ]
    return [
        (f"{topics[i % 4]} story {i}", f"news about {topics[i % 4]} number {i}") for i in range(32)
    ]


def _scored_pairs() -> list[tuple[str, str, float]]:
    return [(a, b, float(i % 6)) for i, (a, b) in enumerate(_pairs())]


def _train(loss: str, batch_size: int, tokenizer_path: str):
    from sbert_tutor.training import Trainer, TrainingConfig, make_objective

    encoder = _tiny_encoder(tokenizer_path)
    options = {
        "cosine": {"score_range": (0.0, 5.0)},
        "cached_mnrl": {"mini_batch_size": 3},  # several mini-batches on each process
    }.get(loss, {})
    objective = make_objective(loss, encoder.embedding_dim, options)
    data = _scored_pairs() if loss == "cosine" else _pairs()
    config = TrainingConfig(
        batch_size=batch_size,
        lr=1e-3,
        max_steps=STEPS,
        seed=3,
        show_progress_bar=False,
        warmup_ratio=0.0,
    )
    trainer = Trainer(encoder, objective, data, config)
    record = trainer.train()
    return encoder, record


def _loss_worker(rank: int, rendezvous: str, out: str) -> None:
    _init(rank, rendezvous)
    from sbert_tutor.losses import in_batch_contrastive, multiple_negatives_ranking, supmpn
    from sbert_tutor.training.distributed import gather_with_grad

    g = torch.Generator().manual_seed(0)
    a, p = (torch.randn(8, 6, generator=g, dtype=torch.float64) for _ in range(2))
    pp, nn_ = (
        torch.randn(8, 3, 6, generator=g, dtype=torch.float64),
        torch.randn(8, 2, 6, generator=g, dtype=torch.float64),
    )
    local = slice(rank * 4, rank * 4 + 4)
    results = {}
    cases = {
        "mnrl": (lambda x, y: multiple_negatives_ranking(x, y, scale=20.0), (a, p)),
        "mnrl_hard": (lambda x, y, z: multiple_negatives_ranking(x, y, z), (a, p, nn_)),
        "supmpn": (lambda x, y, z: supmpn(x, y, z, temperature=0.05), (a, pp, nn_)),
        "contrastive": (lambda x, y: in_batch_contrastive(x, y, temperature=0.05), (a, p)),
    }
    for name, (fn, tensors) in cases.items():
        mine = [t[local].clone().requires_grad_() for t in tensors]
        loss = fn(*[gather_with_grad(t) for t in mine])
        loss.backward()
        full = [t.clone().requires_grad_() for t in tensors]
        ref = fn(*full)
        ref.backward()
        grad_error = max(
            float((m.grad - WORLD * f.grad[local]).abs().max())
            for m, f in zip(mine, full, strict=True)
        )
        results[name] = (float(loss.detach()), float(ref.detach()), grad_error)
    torch.save(results, f"{out}.{rank}")
    dist.destroy_process_group()


def _train_worker(rank: int, rendezvous: str, out: str, loss: str, tokenizer_path: str) -> None:
    _init(rank, rendezvous)
    encoder, record = _train(loss, batch_size=4, tokenizer_path=tokenizer_path)
    torch.save(
        {"params": encoder.state_dict(), "losses": [s["loss"] for s in record.steps]},
        f"{out}.{rank}",
    )
    dist.destroy_process_group()


def _encode_worker(rank: int, rendezvous: str, out: str, tokenizer_path: str) -> None:
    _init(rank, rendezvous)
    from sbert_tutor.training.distributed import encode_sharded

    encoder = _tiny_encoder(tokenizer_path).eval()
    sentences = [f"sentence {i} " + "word " * (i % 7) for i in range(11)]
    torch.save(encode_sharded(encoder, sentences, batch_size=3), f"{out}.{rank}")
    dist.destroy_process_group()


def _spawn(worker, *args) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        rendezvous, out = os.path.join(tmp, "rendezvous"), os.path.join(tmp, "out")
        mp.spawn(worker, args=(rendezvous, out, *args), nprocs=WORLD, join=True)
        return [torch.load(f"{out}.{r}", weights_only=False) for r in range(WORLD)]


def test_gathered_loss_equals_single_process_loss():
    for results in _spawn(_loss_worker):
        for name, (loss, ref, grad_error) in results.items():
            assert loss == pytest.approx(ref, abs=1e-5), name
            assert grad_error < 1e-10, name


@pytest.mark.parametrize("loss", ["mnrl", "cosine", "cached_mnrl"])
def test_two_processes_train_like_one(minilm_path, loss):
    single, single_record = _train(loss, batch_size=4 * WORLD, tokenizer_path=str(minilm_path))
    runs = _spawn(_train_worker, loss, str(minilm_path))
    reference = single.state_dict()
    moved = max(
        float((reference[k] - _tiny_encoder(str(minilm_path)).state_dict()[k]).abs().max())
        for k in reference
    )
    assert moved > 1e-3  # training changed the weights, so agreement below is informative
    for run in runs:
        worst = max(float((run["params"][k] - reference[k]).abs().max()) for k in reference)
        assert worst < 1e-4, f"{loss}: parameters differ by {worst}"
    if loss in ("mnrl", "cached_mnrl"):  # the global in-batch loss: one number on every process
        single_losses = [s["loss"] for s in single_record.steps]
        for run in runs:
            assert run["losses"] == pytest.approx(single_losses, abs=1e-5)


def test_encode_sharded_matches_encode(minilm_path):
    outputs = _spawn(_encode_worker, str(minilm_path))
    encoder = _tiny_encoder(str(minilm_path)).eval()
    sentences = [f"sentence {i} " + "word " * (i % 7) for i in range(11)]
    expected = encoder.encode(sentences, batch_size=3)
    for out in outputs:
        assert out.shape == expected.shape
        assert float(abs(out - expected).max()) < 1e-5


def test_single_process_helpers_are_identity():
    from sbert_tutor.training.distributed import gather_with_grad, rank, shard, world_size

    x = torch.randn(3, 2)
    assert gather_with_grad(x) is x and world_size() == 1 and rank() == 0
    assert shard([0, 1, 2, 3, 4, 5], process=1, processes=2) == [3, 4, 5]


def test_encode_sharded_passes_keywords_to_encode_which_checks_them(tiny_bert):
    from sbert_tutor import SentenceEncoder
    from sbert_tutor.training.distributed import encode_sharded

    model, tokenizer = tiny_bert
    encoder = SentenceEncoder(model, tokenizer, pooling="mean", max_seq_length=16)
    out = encode_sharded(encoder, ["one", "two"], truncate_dim=8, normalize_embeddings=True)
    assert out.shape == (2, 8)
    torch.testing.assert_close(torch.from_numpy(out).norm(dim=1), torch.ones(2))
    with pytest.raises(TypeError, match="unexpected keyword argument 'normalise'"):
        encode_sharded(encoder, ["one"], normalise=True)


assert Path(__file__).name == "test_distributed.py"


def test_torchrun_cli_trains_and_process_zero_writes(minilm_path, tmp_path):
    """`torchrun -m sbert_tutor.cli train` as the README shows it, with 2 CPU processes."""
    import json
    import subprocess
    import sys

    _tiny_encoder(str(minilm_path)).save(tmp_path / "tiny")
    lines = "".join(f"{a}\t{b}\n" for a, b in _pairs())
    (tmp_path / "pairs.tsv").write_text("anchor\tpositive\n" + lines, encoding="utf-8")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={WORLD}",
        "-m",
        "sbert_tutor.cli",
        "train",
        "--model",
        str(tmp_path / "tiny"),
        "--loss",
        "mnrl",
        "--train",
        str(tmp_path / "pairs.tsv"),
        "--batch-size",
        "4",
        "--max-steps",
        "3",
        "--out",
        str(tmp_path / "out"),
        "--no-progress",
        "--device",
        "cpu",  # CPU processes, whatever GPUs the machine has (e.g. 2 processes on 1 GPU)
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("wrote the model") == 1  # process 0 only
    log = json.loads((tmp_path / "out" / "training_log.json").read_text())
    assert log["steps_done"] == 3 and log["config"]["batch_size"] == 4


@pytest.fixture
def torchrun_env(monkeypatch):
    """This process as process 1 of 2 that torchrun started on one machine."""
    for name, value in (("WORLD_SIZE", "2"), ("LOCAL_WORLD_SIZE", "2"), ("RANK", "1")):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LOCAL_RANK", "1")
    return monkeypatch


def test_process_device_needs_a_gpu_per_process(torchrun_env):
    from sbert_tutor.training.distributed import process_device

    with pytest.raises(
        ValueError, match=r"2 processes .* 1 CUDA GPU:.*--nproc_per_node=1.*--device cpu"
    ):
        process_device(None, gpus=1)
    with pytest.raises(ValueError, match="2 processes"):
        process_device("cuda", gpus=1)
    assert process_device(None, gpus=2) == "cuda:1"
    assert process_device("cpu", gpus=1) == "cpu"  # CPU processes: no GPU needed
    assert process_device("cuda:0", gpus=1) == "cuda:0"  # an explicit GPU is the user's choice
    assert process_device(None, gpus=0) is None  # no CUDA: CPU processes, as before
    torchrun_env.setenv("WORLD_SIZE", "1")
    assert process_device(None, gpus=1) is None  # not under torchrun: nothing changes


def test_torchrun_cli_with_more_processes_than_gpus_stops_with_a_clear_message(
    torchrun_env, capsys
):
    """Process 1 of 2 on a machine with one GPU: the CLI says what to pass, before any CUDA call
    or model load (today's code asked for cuda:1 and failed inside CUDA)."""
    from sbert_tutor import cli

    torchrun_env.setattr(torch.cuda, "is_available", lambda: True)
    torchrun_env.setattr(torch.cuda, "device_count", lambda: 1)

    def no_cuda(*args, **kwargs):
        raise AssertionError("CUDA was touched before the check")

    torchrun_env.setattr(torch.cuda, "set_device", no_cuda)
    torchrun_env.setattr(dist, "init_process_group", no_cuda)
    argv = ["train", "--model", "no/such-model", "--loss", "mnrl", "--train", "x.tsv"]
    argv += ["--out", "out", "--no-progress"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "torchrun started 2 processes on this machine, but it has 1 CUDA GPU" in err
    assert "--nproc_per_node=1" in err and "--device cpu" in err
