"""The trainer on a tiny random BERT: learning, reproducibility, resume, schedule, clipping, inputs,
errors, and the ``train`` CLI end to end."""

from __future__ import annotations

import copy
import itertools
import json
import math
import random

import numpy as np
import pandas as pd
import pytest
import torch

from sbert_tutor.cli import main
from sbert_tutor.data.sts import STSData
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.training import (
    CEScoreObjective,
    ContrastiveObjective,
    CosineObjective,
    Examples,
    LengthBucketBatchSampler,
    MNRLObjective,
    NoDuplicatesBatchSampler,
    SoftmaxObjective,
    STSEvaluator,
    SupMPNObjective,
    Trainer,
    TrainingConfig,
    TripletObjective,
    clip_gradients,
    gradient_norm,
    list_checkpoints,
    lr_multiplier,
    make_objective,
    to_examples,
    warmup_steps_for,
)
from sbert_tutor.training.recipe import fit
from sbert_tutor.training.sources import load_training_data
from tests.conftest import needs_data

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture
def encoder(tiny_bert):
    """A fresh copy of the session's tiny BERT (training must not touch the shared one)."""
    model, tokenizer = tiny_bert
    return SentenceEncoder(copy.deepcopy(model), tokenizer, pooling="mean", max_seq_length=32)


# ------------------------------------------------------------------ a tiny task with real signal
TOPICS = {
    "animals": ["cat", "dog", "kitten", "puppy", "horse"],
    "vehicles": ["car", "truck", "bus", "train", "bicycle"],
    "food": ["pizza", "bread", "apple", "cheese", "soup"],
    "weather": ["rain", "snow", "storm", "wind", "sunshine"],
}
SENTENCES = {
    t: [f"the {a} and the {b}" for a, b in itertools.permutations(words, 2)]
    for t, words in TOPICS.items()
}


def topic_data(n: int = 64, seed: int = 0) -> dict[str, list]:
    """Anchors with a same-topic positive and an other-topic negative (texts never repeat
    within one example)."""
    rnd = random.Random(seed)
    names = list(TOPICS)
    anchors, positives, negatives = [], [], []
    for i in range(n):
        topic = names[i % len(names)]
        a, p = rnd.sample(SENTENCES[topic], 2)
        other = names[(i + 1 + rnd.randrange(len(names) - 1)) % len(names)]
        anchors.append(a)
        positives.append(p)
        negatives.append(rnd.choice(SENTENCES[other]))
    return {"anchor": anchors, "positive": positives, "negative": negatives}


def data_for(name: str) -> list[tuple]:
    d = topic_data()
    a, p, n = d["anchor"], d["positive"], d["negative"]
    if name in ("cosine", "ce_score", "softmax"):
        hi, lo = {"cosine": (5.0, 0.0), "ce_score": (4.0, -4.0), "softmax": (0, 2)}[name]
        return [(x, y, hi) for x, y in zip(a, p, strict=True)] + [
            (x, y, lo) for x, y in zip(a, n, strict=True)
        ]
    if name == "triplet":
        return list(zip(a, p, n, strict=True))
    if name == "supmpn":  # positives: the positive and the anchor itself; negatives: two
        shifted = n[1:] + n[:1]
        return list(zip(a, p, a, n, shifted, strict=True))
    return list(zip(a, p, strict=True))  # mnrl, contrastive


OBJECTIVES = {
    "cosine": lambda d: CosineObjective(),
    "softmax": lambda d: SoftmaxObjective(d),
    "triplet": lambda d: TripletObjective(),
    "mnrl": lambda d: MNRLObjective(),
    "supmpn": lambda d: SupMPNObjective(2, 2),
    "ce_score": lambda d: CEScoreObjective(),
    "contrastive": lambda d: ContrastiveObjective(),
}


def quick(**overrides) -> TrainingConfig:
    settings = {"max_steps": 10, "batch_size": 8, "lr": 1e-3, "show_progress_bar": False}
    return TrainingConfig(**{**settings, **overrides})


def params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def identical(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


# ------------------------------------------------------------------ learning
@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_loss_decreases_on_a_tiny_task(encoder, name):
    torch.manual_seed(0)
    objective = OBJECTIVES[name](encoder.embedding_dim)
    trainer = Trainer(
        encoder, objective, data_for(name), quick(max_steps=30, batch_size=16, lr=3e-3)
    )
    before = trainer.dataset_loss()
    record = trainer.train()
    after = trainer.dataset_loss()
    assert after < 0.8 * before, (name, before, after)
    assert len(record.steps) == 30 and all(math.isfinite(s["loss"]) for s in record.steps)


def test_softmax_head_is_optimised_with_the_encoder(encoder):
    torch.manual_seed(0)
    objective = SoftmaxObjective(encoder.embedding_dim)
    trainer = Trainer(encoder, objective, data_for("softmax"), quick(max_steps=3))
    in_optimizer = {id(p) for g in trainer.optimizer.param_groups for p in g["params"]}
    assert all(id(p) in in_optimizer for p in objective.parameters())
    head = params(objective)
    trainer.train()
    assert not identical(head, params(objective))


# ------------------------------------------------------------------ reproducibility and resume
def test_same_seed_gives_bit_identical_parameters(tiny_bert):
    def run(seed: int) -> tuple[list[torch.Tensor], list[float]]:
        model, tokenizer = tiny_bert
        enc = SentenceEncoder(copy.deepcopy(model), tokenizer, max_seq_length=32)
        record = Trainer(enc, MNRLObjective(), data_for("mnrl"), quick(seed=seed)).train()
        return params(enc), [s["loss"] for s in record.steps]

    (first, curve1), (second, curve2) = run(3), run(3)
    assert identical(first, second) and curve1 == curve2
    assert not identical(first, run(4)[0])  # the seed matters (dropout, batch order)


def test_resume_equals_uninterrupted_training(tiny_bert, tmp_path):
    """Two epochs of 5 batches; pause at step 7, resume from the checkpoint at the epoch
    boundary (step 5): the softmax head, AdamW moments, schedule and dropout all continue."""
    model, tokenizer = tiny_bert
    data = data_for("softmax")[:40]

    def fresh(folder=None):
        enc = SentenceEncoder(copy.deepcopy(model), tokenizer, max_seq_length=32)
        torch.manual_seed(0)  # the same initial head in every run
        config = quick(max_steps=None, epochs=2, save_steps=5, checkpoint_dir=str(folder))
        return enc, Trainer(enc, SoftmaxObjective(enc.embedding_dim), data, config)

    enc_a, full = fresh(tmp_path / "a")
    record_a = full.train()
    assert full.total_steps == 10

    enc_b, paused = fresh(tmp_path / "b")
    paused.train(until_step=7)
    assert paused.step == 7 and [p.name for p in list_checkpoints(tmp_path / "b")] == [
        "checkpoint-5"
    ]
    enc_c, resumed = fresh(tmp_path / "c")
    record_c = resumed.train(resume_from=tmp_path / "b" / "checkpoint-5")
    assert identical(params(enc_a), params(enc_c))
    assert identical(params(full.objective), params(resumed.objective))
    assert record_c.steps == record_a.steps  # the curve before the pause comes back too

    paused.train()  # continuing in memory is the same run as well
    assert identical(params(enc_a), params(enc_b))

    _, other = fresh(tmp_path / "d")
    other.config.lr = 5e-4
    with pytest.raises(ValueError, match="other training settings.*lr"):
        other.train(resume_from=tmp_path / "b")


def test_the_fused_adamw_step_is_torch_s_adamw_step(tiny_bert):
    """The trainer's AdamW runs the fused kernel on a CPU; ten steps with it land where torch's
    AdamW one operation at a time (the reference, ``fused=False, foreach=False``) lands."""

    def run(reference: bool) -> tuple[list[torch.Tensor], list[float], Trainer]:
        model, tokenizer = tiny_bert
        enc = SentenceEncoder(copy.deepcopy(model), tokenizer, max_seq_length=32)
        enc.eval()  # dropout off: the two runs see the same forward passes
        trainer = Trainer(enc, CosineObjective(), data_for("cosine"), quick(max_steps=10))
        if reference:
            groups = [
                {k: v for k, v in g.items() if k != "fused"} for g in trainer.optimizer.param_groups
            ]
            trainer.optimizer = torch.optim.AdamW(groups, fused=False, foreach=False)
            schedule = trainer.scheduler.lr_lambdas[0]
            trainer.scheduler = type(trainer.scheduler)(trainer.optimizer, schedule)
        record = trainer.train()
        return params(enc), [s["loss"] for s in record.steps], trainer

    fused, fused_curve, trainer = run(reference=False)
    plain, plain_curve, reference = run(reference=True)
    assert trainer.optimizer.defaults["fused"] is True
    assert not reference.optimizer.defaults["fused"]
    assert len(fused_curve) == 10
    np.testing.assert_allclose(fused_curve, plain_curve, rtol=1e-5)
    for a, b in zip(fused, plain, strict=True):
        torch.testing.assert_close(a, b, rtol=0.0, atol=1e-6)
    assert not identical(fused, params(tiny_bert[0]))  # it trained


# ------------------------------------------------------------------ schedule and clipping
def test_warmup_and_decay_values_by_hand():
    assert warmup_steps_for(100, 0.1) == 10 and warmup_steps_for(20, 0.1) == 2
    # T = 100, W = 10: s / 10 during warm-up, then (100 - s) / 90
    values = [lr_multiplier(s, 10, 100) for s in (0, 1, 5, 9, 10, 11, 55, 99, 100)]
    expected = [0.0, 0.1, 0.5, 0.9, 1.0, 89 / 90, 0.5, 1 / 90, 0.0]
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12)
    assert lr_multiplier(50, 10, 100, schedule="constant") == 1.0


def test_trainer_follows_the_schedule(encoder):
    trainer = Trainer(encoder, CosineObjective(), data_for("cosine"), quick(max_steps=20, lr=0.01))
    record = trainer.train()
    lrs = [s["lr"] for s in record.steps]
    # W = ceil(0.1 * 20) = 2; step k (1-based) uses s = k - 1
    assert lrs[0] == 0.0 and lrs[1] == pytest.approx(0.005) and lrs[2] == pytest.approx(0.01)
    assert lrs[11] == pytest.approx(0.01 * 9 / 18) and lrs[19] == pytest.approx(0.01 / 18)
    from transformers import get_linear_schedule_with_warmup

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.01)
    reference = get_linear_schedule_with_warmup(opt, 2, 20)
    expected = []
    for _ in range(20):
        expected.append(reference.get_last_lr()[0])
        opt.step()
        reference.step()
    np.testing.assert_allclose(lrs, expected, rtol=1e-12)


def test_clip_gradients_scales_to_the_max_norm(encoder):
    batch = encoder.tokenize(["a small test", "another one here"])
    (encoder(**batch).sum() * 1000).backward()
    grads = [p.grad.clone() for p in encoder.parameters() if p.grad is not None]
    before = gradient_norm(encoder.parameters())
    returned = clip_gradients(encoder.parameters(), max_norm=0.5)
    assert returned == pytest.approx(before) and before > 0.5
    assert gradient_norm(encoder.parameters()) == pytest.approx(0.5, rel=1e-4)
    after = torch.cat([p.grad.flatten() for p in encoder.parameters() if p.grad is not None])
    direction = torch.nn.functional.cosine_similarity(
        torch.cat([g.flatten() for g in grads]), after, dim=0
    )
    assert direction > 1 - 1e-5  # clipping rescales, it does not rotate


def test_trainer_clips_before_every_optimizer_step(encoder):
    trainer = Trainer(encoder, CosineObjective(), data_for("cosine"), quick(max_grad_norm=0.01))
    seen = []
    trainer.optimizer.register_step_pre_hook(
        lambda optimizer, args, kwargs: seen.append(gradient_norm(trainer.parameters))
    )
    record = trainer.train()
    assert len(seen) == 10 and max(seen) <= 0.01 * (1 + 1e-4)
    assert min(s["grad_norm"] for s in record.steps) > 0.01  # the recorded norm is pre-clip


# ------------------------------------------------------------------ batching and evaluation
def test_in_batch_objectives_get_no_duplicate_batches(encoder):
    pairs = data_for("mnrl")
    repeated = pairs + [(a, f"another view of {a}") for a, _ in pairs[:20]]
    trainer = Trainer(encoder, MNRLObjective(), repeated, quick())
    assert isinstance(trainer.sampler, NoDuplicatesBatchSampler)
    for batch in trainer.sampler.batches(0):
        texts = [t for i in batch for t in repeated[i]]
        assert len(texts) == len(set(texts))
    cosine = Trainer(encoder, CosineObjective(), data_for("cosine"), quick())
    assert isinstance(cosine.sampler, LengthBucketBatchSampler)


def test_periodic_evaluation_is_recorded(encoder):
    sts = STSData(
        "mine",
        "dev",
        ["the cat and the dog", "the car and the bus", "the rain and the snow", "the soup"],
        ["the kitten and the puppy", "the apple and the bread", "the storm", "the pizza"],
        np.array([5.0, 0.0, 4.0, 3.0]),
        ["mine"] * 4,
        "test",
    )
    evaluator = STSEvaluator(data=sts)
    trainer = Trainer(
        encoder, CosineObjective(), data_for("cosine"), quick(eval_steps=4), evaluator=evaluator
    )
    record = trainer.train()
    assert [e["step"] for e in record.evals] == [0, 4, 8, 10]
    assert all(-100 <= e["mine_dev_spearman"] <= 100 for e in record.evals)
    assert list(record.steps_frame().columns) == ["step", "epoch", "loss", "lr", "grad_norm"]
    assert record.to_dict()["evals"][0]["step"] == 0


# ------------------------------------------------------------------ inputs and errors
def test_user_data_in_every_container():
    rows = data_for("cosine")[:6]
    frame = pd.DataFrame(rows, columns=["sentence1", "sentence2", "score"])
    datasets = pytest.importorskip("datasets")
    inputs = [rows, frame, frame.to_dict(orient="list"), datasets.Dataset.from_pandas(frame)]
    objective = CosineObjective()
    got = [objective.prepare(x) for x in inputs]
    for examples in got:
        assert examples.texts == [r[:2] for r in rows]
        np.testing.assert_array_equal(examples.labels, [r[2] for r in rows])
    assert got[1].columns == ("sentence1", "sentence2")
    nli = SoftmaxObjective(8).prepare(frame.assign(score=["entailment", "neutral"] * 3))
    assert nli.labels.tolist() == [0, 1] * 3  # label names map to ids
    chosen = MNRLObjective().prepare(frame, text_columns=["sentence2", "sentence1"])
    assert chosen.texts[0] == (rows[0][1], rows[0][0]) and chosen.labels is None


def test_bad_inputs_raise_helpful_errors(encoder):
    rows = [("a b", "c d", 1.0), ("e f", "g h", float("nan"))]
    with pytest.raises(ValueError, match=r"score\[1\] is nan"):
        CosineObjective().prepare(pd.DataFrame(rows, columns=["s1", "s2", "score"]))
    with pytest.raises(ValueError, match="length mismatch"):
        CosineObjective().prepare({"s1": ["a", "b"], "s2": ["c"], "score": [1.0, 2.0]})
    with pytest.raises(ValueError, match="example 1 has 2 items but example 0 has 3"):
        CosineObjective().prepare([("a", "b", 1.0), ("c", 2.0)])
    with pytest.raises(ValueError, match="outside the score range"):
        CosineObjective().prepare([("a", "b", 7.0)])
    with pytest.raises(TypeError, match="not a string"):
        MNRLObjective().prepare({"anchor": ["a", None], "positive": ["b", "c"]})
    with pytest.raises(ValueError, match="empty string"):
        MNRLObjective().prepare([("a", " ")])
    with pytest.raises(ValueError, match="expected 3 texts.*triplet takes"):
        TripletObjective().prepare([("a", "b")])
    with pytest.raises(ValueError, match="takes texts only.*'label'"):
        MNRLObjective().prepare(pd.DataFrame({"a": ["x"], "b": ["y"], "label": [1]}))
    with pytest.raises(ValueError, match="out of range"):
        SoftmaxObjective(8).prepare([("a", "b", 3)])
    with pytest.raises(ValueError, match="not a class id"):
        SoftmaxObjective(8).prepare([("a", "b", "maybe")])
    with pytest.raises(ValueError, match="no label column"):
        CosineObjective().prepare({"s1": ["a"], "s2": ["b"]})
    with pytest.raises(ValueError, match="unknown loss 'cosin'.*Did you mean 'cosine'"):
        make_objective("cosin")
    with pytest.raises(ValueError, match="embedding_dim"):
        make_objective("softmax")
    with pytest.raises(ValueError, match="unknown training set 'stsbb'.*'stsb'"):
        load_training_data("stsbb", "cosine")
    with pytest.raises(ValueError, match="batch_size must be >= 2"):
        Trainer(encoder, MNRLObjective(), data_for("mnrl"), quick(batch_size=1))
    with pytest.raises(ValueError, match="warmup_ratio"):
        TrainingConfig(warmup_ratio=1.5)
    with pytest.raises(ValueError, match="checkpoint_dir"):
        TrainingConfig(save_steps=5)
    with pytest.warns(UserWarning, match="needs a CUDA device"):
        Trainer(encoder, CosineObjective(), data_for("cosine"), quick(amp="fp16"))
    # an objective's option given to fit as a plain keyword is refused before any model loads
    # (fit names its keywords: Python's TypeError; the option goes in objective_options)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'score_range'"):
        fit("no-such-model", "cosine", [("a", "b", 1.0)], score_range=(0, 5))


def test_examples_pass_through_and_subset():
    examples = to_examples([("a", "b", 1.0), ("c", "d", 2.0)], label="float")
    assert isinstance(examples, Examples) and CosineObjective().prepare(examples) is examples
    second = examples.subset([1])
    assert second.texts == [("c", "d")] and second.labels.tolist() == [2]


@needs_data
def test_named_training_sets():
    sick = load_training_data("sick", "cosine")
    assert sick.score_range == (1.0, 5.0) and len(sick) == 4500
    pairs = load_training_data("sick", "softmax")
    assert set(pairs.table["label"]) == {0, 1, 2} and len(pairs) == 4500
    groups = load_training_data("sick", "supmpn", {"num_positives": 2, "num_negatives": 1})
    assert groups.columns == ["anchor", "positive_1", "positive_2", "negative_1"]
    triplets = load_training_data("sick", "mnrl", {"hard_negatives": True})
    assert triplets.columns == ["anchor", "positive", "negative"]
    with pytest.raises(ValueError, match="e.g. loss='cosine'.*e.g. train='nli'"):
        load_training_data("stsb", "mnrl")
    with pytest.raises(ValueError, match="not similarity scores"):
        load_training_data("nli", "cosine")


# ------------------------------------------------------------------ the CLI, end to end
def test_train_cli_writes_a_loadable_model_and_a_log(encoder, tmp_path, capsys):
    model_dir = encoder.save(tmp_path / "tiny")
    train_file = tmp_path / "pairs.tsv"
    pd.DataFrame(data_for("cosine"), columns=["sentence1", "sentence2", "score"]).to_csv(
        train_file, sep="\t", index=False
    )
    out = tmp_path / "trained"
    argv = ["train", "--model", str(model_dir), "--loss", "cosine", "--train", str(train_file)]
    argv += ["--out", str(out), "--max-steps", "4", "--batch-size", "8", "--lr", "1e-3"]
    argv += ["--score-range", "0", "5", "--device", "cpu", "--no-progress"]
    assert main(argv) == 0
    assert "4 steps in" in capsys.readouterr().out

    log = json.loads((out / "training_log.json").read_text())
    assert [s["step"] for s in log["loss_curve"]["steps"]] == [1, 2, 3, 4]
    assert log["loss"] == {"name": "cosine", "score_range": [0.0, 5.0]}
    assert log["train_data"]["examples"] == 128 and log["config"]["max_steps"] == 4
    assert {"git", "packages", "hardware", "data_files", "model", "timestamp"} <= set(
        log["provenance"]
    )
    assert str(train_file) in log["provenance"]["data_files"]

    ours = SentenceEncoder.from_pretrained(out, device="cpu")
    st = pytest.importorskip("sentence_transformers").SentenceTransformer(str(out), device="cpu")
    sentences = ["the cat and the dog", "the rain"]
    np.testing.assert_allclose(ours.encode(sentences), st.encode(sentences), atol=1e-5)
    trained = SentenceEncoder.from_pretrained(model_dir, device="cpu").encode(sentences)
    assert not np.allclose(trained, ours.encode(sentences))  # the weights did change


@needs_data
def test_train_cli_on_nli_with_mnrl(encoder, tmp_path):
    model_dir = encoder.save(tmp_path / "tiny")
    out = tmp_path / "mnrl"
    argv = ["train", "--model", str(model_dir), "--loss", "mnrl", "--train", "sick"]
    argv += ["--out", str(out), "--max-steps", "3", "--batch-size", "8", "--no-progress"]
    argv += ["--device", "cpu", "--hard-negatives"]
    assert main(argv) == 0
    log = json.loads((out / "training_log.json").read_text())
    assert log["train_data"]["columns"] == ["anchor", "positive", "negative"]
    assert any(f.endswith("SICK_train.tsv") for f in log["provenance"]["data_files"])


def test_train_cli_errors_are_clean(encoder, tmp_path, capsys):
    model_dir = str(encoder.save(tmp_path / "tiny"))
    base = ["train", "--model", model_dir, "--out", str(tmp_path / "x"), "--no-progress"]
    assert main([*base, "--loss", "cosine", "--train", "mnli-typo"]) == 2
    assert "unknown training set" in capsys.readouterr().err
    assert main([*base, "--loss", "ce_score", "--train", "stsb"]) == 2
    assert "cross-encoder" in capsys.readouterr().err
    assert main([*base, "--loss", "cosine", "--train", "stsb", "--num-positives", "3"]) == 2
    assert "the cosine loss has no option 'num_positives'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--loss", "hinge", "--train", "stsb"])


def test_final_loss_is_the_mean_of_the_last_logged_steps():
    from sbert_tutor.training.record import TrainingRecord

    record = TrainingRecord()
    assert math.isnan(record.final_loss())
    for step, loss in enumerate([4.0, float("nan"), 2.0, 1.0], start=1):
        record.log_step(step, 0.0, loss, 1e-5, None)
    assert record.final_loss(window=3) == pytest.approx(1.5)  # the NaN step is not averaged
    assert record.final_loss(window=10) == pytest.approx(7.0 / 3)
