"""The ``cached_mnrl`` objective (GradCache) against ``mnrl`` and sentence-transformers.

* dropout off: the same loss and the same parameters after three trainer steps as ``mnrl``, at
  mini-batch sizes 1, 3 and the whole batch, with and without hard negatives;
* dropout on, one mini-batch: the replayed random state gives ``mnrl``'s masks, so again equal;
* one batch against sentence-transformers' ``CachedMultipleNegativesRankingLoss`` (the same
  weights loaded in both): the same loss and the same parameter gradients;
* the fp16 scaler's ``scale`` multiplies every gradient.
"""

from __future__ import annotations

import copy

import pytest
import torch

from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.training import Trainer, TrainingConfig, make_objective
from tests.conftest import build_tiny_bert, save_tiny_encoder

pytestmark = pytest.mark.usefixtures("single_thread")

BATCH = 6
STEPS = 3
TOPICS = ["football match goal", "stock market shares", "cooking pasta sauce", "rain storm"]


def _rows(hard_negatives: bool) -> list[tuple[str, ...]]:
    rows = []
    for i in range(24):
        topic = TOPICS[i % 4]
        row: tuple[str, ...] = (
            f"{topic} story {i}",
            f"news about {topic} number {i} " * (i % 3 + 1),
        )
        if hard_negatives:
            row += (f"{TOPICS[(i + 1) % 4]} remark {i}",)
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def tokenizer(minilm_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path)


def _encoder(tokenizer, dropout: float = 0.0) -> SentenceEncoder:
    """The tiny BERT in float64: the two objectives then agree far below the tolerances, so a
    difference at 1e-6 is a wrong gradient, not float32 rounding after three Adam steps."""
    model = build_tiny_bert(dropout=dropout).double()
    return SentenceEncoder(model, tokenizer, normalize=False, max_seq_length=32)


def _train(encoder: SentenceEncoder, loss: str, data, **options):
    config = TrainingConfig(
        batch_size=BATCH,
        lr=1e-3,
        max_steps=STEPS,
        seed=5,
        show_progress_bar=False,
        warmup_ratio=0.0,
    )
    record = Trainer(encoder, make_objective(loss, options=options), data, config).train()
    return [s["loss"] for s in record.steps]


def _max_difference(a: SentenceEncoder, b: SentenceEncoder) -> float:
    sa, sb = a.state_dict(), b.state_dict()
    return max(float((sa[k] - sb[k]).abs().max()) for k in sa)


@pytest.mark.parametrize("hard_negatives", [False, True], ids=["pairs", "hard-negatives"])
@pytest.mark.parametrize("mini_batch_size", [1, 3, "whole"])
def test_cached_mnrl_trains_like_mnrl(tokenizer, hard_negatives, mini_batch_size):
    data = _rows(hard_negatives)
    whole = BATCH * len(data[0])
    size = whole if mini_batch_size == "whole" else mini_batch_size
    start = _encoder(tokenizer)
    reference, cached = copy.deepcopy(start), copy.deepcopy(start)
    reference_losses = _train(reference, "mnrl", data)
    cached_losses = _train(cached, "cached_mnrl", data, mini_batch_size=size)
    assert cached_losses == pytest.approx(reference_losses, abs=1e-6)
    assert _max_difference(reference, start) > 1e-3  # training moved the weights
    assert _max_difference(cached, reference) < 1e-5


def test_cached_mnrl_replays_dropout(tokenizer):
    """With dropout on and the whole batch in one mini-batch, both passes of GradCache draw the
    masks of ``mnrl``'s single pass: without the replay the gradient would belong to other masks."""
    data = _rows(False)
    start = _encoder(tokenizer, dropout=0.1)
    reference, cached = copy.deepcopy(start), copy.deepcopy(start)
    reference_losses = _train(reference, "mnrl", data)
    cached_losses = _train(cached, "cached_mnrl", data, mini_batch_size=BATCH * 2)
    assert cached_losses == pytest.approx(reference_losses, abs=1e-6)
    assert _max_difference(cached, reference) < 1e-5


def _gradients(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("hard_negatives", [False, True], ids=["pairs", "hard-negatives"])
def test_cached_mnrl_matches_sentence_transformers(tiny_bert, tmp_path, hard_negatives):
    st = pytest.importorskip("sentence_transformers")
    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer.losses import (
            CachedMultipleNegativesRankingLoss,
        )
    except ImportError:  # pragma: no cover - older versions
        from sentence_transformers.losses import CachedMultipleNegativesRankingLoss
    model, tokenizer = tiny_bert
    folder = save_tiny_encoder((model, tokenizer), tmp_path / "tiny")
    rows = _rows(hard_negatives)[:BATCH]
    ours = SentenceEncoder.from_pretrained(folder, device="cpu").eval()
    ours.model.double()  # both in float64: a gap at 1e-6 is then a different gradient
    objective = make_objective("cached_mnrl", options={"mini_batch_size": 4})
    loss = objective.loss_and_backward(ours, rows, None)
    reference = st.SentenceTransformer(folder, device="cpu").eval().double()
    columns = [[row[j] for row in rows] for j in range(len(rows[0]))]
    prepare = getattr(reference, "preprocess", reference.tokenize)
    features = [prepare(column) for column in columns]
    st_loss = CachedMultipleNegativesRankingLoss(reference, scale=20.0, mini_batch_size=4)
    expected = st_loss(features, None)
    expected.backward()
    assert float(loss) == pytest.approx(float(expected.detach()), abs=1e-6)
    grads = _gradients(ours.model)
    st_grads = _gradients(reference[0].auto_model)
    assert grads.keys() == st_grads.keys() and len(grads) > 10
    worst = max(float((grads[k] - st_grads[k]).abs().max()) for k in grads)
    assert worst < 1e-10  # float64: a float32 step anywhere on either path shows up here


def test_scale_multiplies_every_gradient(tokenizer):
    rows = _rows(True)[:BATCH]
    objective = make_objective("cached_mnrl", options={"mini_batch_size": 5})
    plain, scaled = _encoder(tokenizer), _encoder(tokenizer)
    first = objective.loss_and_backward(plain, rows, None)
    second = objective.loss_and_backward(scaled, rows, None, scale=lambda x: 1024.0 * x)
    assert float(first) == float(second)
    reference, times = _gradients(plain), _gradients(scaled)
    for name, grad in reference.items():
        torch.testing.assert_close(times[name], 1024.0 * grad, rtol=1e-5, atol=1e-9)


def test_cached_mnrl_loss_without_backward_equals_mnrl(tokenizer):
    rows = _rows(True)[:BATCH]
    encoder = _encoder(tokenizer).eval()
    with torch.no_grad():
        expected = make_objective("mnrl").loss(encoder, rows, None)
    value = make_objective("cached_mnrl", options={"mini_batch_size": 2}).loss(encoder, rows, None)
    assert float(value) == pytest.approx(float(expected), abs=1e-6)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_mini_batch_size_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="mini_batch_size must be an integer >= 1"):
        make_objective("cached_mnrl", options={"mini_batch_size": bad})


def test_train_cli_with_cached_mnrl(tiny_bert, tmp_path, capsys):
    import json

    import pandas as pd

    from sbert_tutor.cli import main

    model_dir = save_tiny_encoder(tiny_bert, tmp_path / "tiny")
    train_file = tmp_path / "triplets.tsv"
    columns = ["anchor", "positive", "negative"]
    pd.DataFrame(_rows(True), columns=columns).to_csv(train_file, sep="\t", index=False)
    out = tmp_path / "cached"
    argv = ["train", "--model", model_dir, "--loss", "cached_mnrl", "--train", str(train_file)]
    argv += ["--out", str(out), "--max-steps", "2", "--batch-size", "8", "--mini-batch-size", "5"]
    argv += ["--device", "cpu", "--no-progress"]
    assert main(argv) == 0
    assert "2 steps in" in capsys.readouterr().out
    log = json.loads((out / "training_log.json").read_text())
    assert log["loss"] == {
        "name": "cached_mnrl",
        "scale": 20.0,
        "symmetric": False,
        "mini_batch_size": 5,
    }
    assert log["train_data"]["columns"] == columns
