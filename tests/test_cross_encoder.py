"""CrossEncoder against sentence-transformers' CrossEncoder: loading, predict, rank, save, losses.

The reference folders are written by sentence-transformers itself from the offline
all-MiniLM-L6-v2 weights with a random one-logit head; mechanics (training, errors) use a tiny
random BERT.
"""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pytest
import torch

from sbert_tutor.encoders.cross_encoder import CrossEncoder, NewHeadWarning
from sbert_tutor.encoders.cross_encoder_folder import read_cross_encoder_folder
from sbert_tutor.encoders.sentence_encoder import TruncationWarning
from sbert_tutor.encoders.st_format import UnsupportedModelError
from sbert_tutor.runtime import tokenizing
from sbert_tutor.training import Trainer, TrainingConfig, make_objective
from sbert_tutor.training.recipe import fit
from tests.conftest import build_tiny_bert, needs_data

st = pytest.importorskip("sentence_transformers")
pytestmark = pytest.mark.usefixtures("single_thread")

QUERY = "A man is playing a guitar."


# ---------------------------------------------------------------------------------- fixtures
def st_cross_encoder(minilm_path, folder, **kwargs):
    """sentence-transformers' CrossEncoder on MiniLM with a seeded random head, saved to ``folder``."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = st.CrossEncoder(str(minilm_path), num_labels=1, device="cpu", **kwargs)
    model.save(str(folder))
    return model.eval()


@pytest.fixture(scope="module")
def ce_pair(minilm_path, tmp_path_factory):
    """(folder, sentence-transformers' model, ours) for one CrossEncoder folder written by ST."""
    folder = tmp_path_factory.mktemp("ce") / "minilm-ce"
    reference = st_cross_encoder(minilm_path, folder)
    return folder, reference, CrossEncoder.from_pretrained(folder, device="cpu")


@pytest.fixture(scope="module")
def stsb_pairs():
    from tests.conftest import shared_data

    if shared_data() is None:
        pytest.skip("SBERT_TUTOR_DATA is not set")
    from sbert_tutor.data import load_sts

    data = load_sts("stsb", "test")
    return list(zip(data.sentences1[:50], data.sentences2[:50], strict=True))


def tiny_cross_encoder(tokenizer, num_labels: int = 1, dropout: float = 0.0) -> CrossEncoder:
    """conftest's tiny random BERT with a sequence-classification head (seed 0)."""
    from transformers import BertForSequenceClassification

    config = build_tiny_bert(dropout).config
    config.num_labels = num_labels
    torch.manual_seed(0)
    return CrossEncoder(BertForSequenceClassification(config).eval(), tokenizer, max_seq_length=48)


# ---------------------------------------------------------------------------------- predict
@needs_data
def test_predict_matches_sentence_transformers(ce_pair, stsb_pairs):
    folder, reference, ours = ce_pair
    expected = reference.predict(stsb_pairs, batch_size=8)
    got = ours.predict(stsb_pairs, batch_size=8)
    assert got.dtype == np.float32 and got.shape == (50,)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    assert np.ptp(got) > 1e-3  # the pairs get different scores: the comparison means something
    assert ours.source == f"local folder {folder.resolve()}"
    assert ours.num_labels == 1 and isinstance(ours.activation_fn, torch.nn.Sigmoid)
    assert ours.max_seq_length == reference.max_seq_length == 512
    # one pair alone gives one score, as there
    single = ours.predict(stsb_pairs[0])
    assert np.isclose(single, reference.predict(stsb_pairs[0]), atol=1e-5)
    assert np.ndim(single) == 0


@needs_data
def test_truncation_cuts_the_longer_text_as_sentence_transformers_and_warns(
    minilm_path, tmp_path, stsb_pairs
):
    folder = tmp_path / "short"
    reference = st_cross_encoder(minilm_path, folder, max_length=24)
    ours = CrossEncoder.from_pretrained(folder, device="cpu")
    assert ours.max_seq_length == reference.max_seq_length == 24
    long_pairs = [(a, b + " " + b) for a, b in stsb_pairs[:20]]
    with pytest.warns(TruncationWarning, match=r"of 20 pairs are longer than max_seq_length=24"):
        got = ours.predict(long_pairs, batch_size=6)
    np.testing.assert_allclose(got, reference.predict(long_pairs, batch_size=6), atol=1e-5, rtol=0)


@needs_data
def test_rank_matches_sentence_transformers(ce_pair, stsb_pairs):
    _, reference, ours = ce_pair
    documents = [b for _, b in stsb_pairs[:20]]
    got = ours.rank(QUERY, documents, top_k=7, return_documents=True, batch_size=4)
    expected = reference.rank(QUERY, documents, top_k=7, return_documents=True, batch_size=4)
    assert [r["corpus_id"] for r in got] == [r["corpus_id"] for r in expected]
    assert [r["text"] for r in got] == [r["text"] for r in expected]
    np.testing.assert_allclose(
        [r["score"] for r in got], [r["score"] for r in expected], atol=1e-5, rtol=0
    )
    assert all(isinstance(r["score"], float) for r in got)
    assert len(ours.rank(QUERY, documents)) == 20 and "text" not in ours.rank(QUERY, documents)[0]


# ---------------------------------------------------------------------------------- folders
@needs_data
def test_save_loads_in_sentence_transformers_with_the_same_scores(ce_pair, stsb_pairs, tmp_path):
    folder, _, _ = ce_pair
    ours = CrossEncoder.from_pretrained(
        folder, max_seq_length=20, activation_fn=torch.nn.Identity(), device="cpu"
    )
    with pytest.warns(TruncationWarning):
        scores = ours.predict(stsb_pairs, batch_size=16)
    assert scores.min() < 0 or scores.max() > 1  # raw logits: the identity was applied
    saved = ours.save(tmp_path / "ours")
    reference = st.CrossEncoder(str(saved), device="cpu")
    assert isinstance(reference.activation_fn, torch.nn.Identity)
    assert reference.max_seq_length == 20
    np.testing.assert_allclose(reference.predict(stsb_pairs, batch_size=16), scores, atol=1e-5)
    again = CrossEncoder.from_pretrained(saved, device="cpu")
    assert again.max_seq_length == 20 and isinstance(again.activation_fn, torch.nn.Identity)


@pytest.mark.parametrize(
    ("key", "value", "layout"),
    [
        ("sentence_transformers", {"activation_fn": "torch.nn.modules.linear.Identity"}, "4.x-5.x"),
        ("sbert_ce_default_activation_function", "torch.nn.modules.linear.Identity", "< 4"),
    ],
)
def test_older_folders_keep_their_activation(ce_pair, tmp_path, key, value, layout):
    """4.x-5.x and < 4 wrote the activation into config.json; both libraries read it there."""
    folder, _, _ = ce_pair
    old = tmp_path / "old"
    old.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(folder / name, old / name)
    (old / "model.safetensors").symlink_to(folder / "model.safetensors")
    config = json.loads((old / "config.json").read_text())
    config[key] = value
    (old / "config.json").write_text(json.dumps(config))

    assert read_cross_encoder_folder(old).layout.startswith(f"sentence-transformers {layout} ")
    ours = CrossEncoder.from_pretrained(old, device="cpu")
    reference = st.CrossEncoder(str(old), device="cpu")
    assert isinstance(ours.activation_fn, torch.nn.Identity)
    assert isinstance(reference.activation_fn, torch.nn.Identity)
    pairs = [(QUERY, "Someone plays an instrument."), (QUERY, "A cat sleeps.")]
    np.testing.assert_allclose(ours.predict(pairs), reference.predict(pairs), atol=1e-5, rtol=0)


def test_a_bi_encoder_folder_gets_a_new_head_with_a_warning(minilm_path):
    with pytest.warns(NewHeadWarning, match="classifier.weight"):
        ours = CrossEncoder.from_pretrained(minilm_path, device="cpu")
    assert ours.num_labels == 1 and isinstance(ours.activation_fn, torch.nn.Sigmoid)
    assert "bi-encoder" in read_cross_encoder_folder(minilm_path).layout


def test_folders_sbert_tutor_cannot_run_are_refused_with_what_to_do(tmp_path):
    modules = [
        {
            "idx": 0,
            "name": "0",
            "path": "",
            "type": "sentence_transformers.base.modules.Transformer",
        },
        {"idx": 1, "name": "1", "path": "1_LogitScore", "type": "x.LogitScore"},
    ]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "config_sentence_transformers.json").write_text('{"model_type": "CrossEncoder"}')
    with pytest.raises(UnsupportedModelError, match="sentence-transformers' CrossEncoder"):
        read_cross_encoder_folder(tmp_path)
    (tmp_path / "config_sentence_transformers.json").write_text('{"model_type": "SparseEncoder"}')
    with pytest.raises(UnsupportedModelError, match="SparseEncoder"):
        read_cross_encoder_folder(tmp_path)


# ---------------------------------------------------------------------------------- inputs
def test_bad_inputs_get_clear_errors(tiny_bert):
    ce = tiny_cross_encoder(tiny_bert[1])
    empty = ce.predict([])
    assert isinstance(empty, np.ndarray) and empty.shape == (0,)  # as sentence-transformers
    assert ce.rank(QUERY, []) == []
    with pytest.raises(TypeError, match=r"inputs\[1\] is str .*not a pair"):
        ce.predict([("a", "b"), "c"])
    with pytest.raises(TypeError, match=r"inputs\[0\] is a tuple of length 3"):
        ce.predict([("a", "b", "c")])
    with pytest.raises(TypeError, match=r"inputs\[0\]\[1\] is int"):
        ce.predict([("a", 3)])
    with pytest.raises(ValueError, match=r"inputs\[0\]\[0\] is an empty string"):
        ce.predict([(" ", "b")])
    with pytest.raises(TypeError, match="list of \\(text1, text2\\) pairs"):
        ce.predict("one string")
    with pytest.raises(ValueError, match="batch_size"):
        ce.predict([("a", "b")], batch_size=0)
    with pytest.raises(ValueError, match="num_labels=3"):
        tiny_cross_encoder(tiny_bert[1], num_labels=3).rank(QUERY, ["a"])


def test_return_types_follow_sentence_transformers(tiny_bert):
    ce = tiny_cross_encoder(tiny_bert[1], num_labels=3)
    pairs = [("a man", "a woman"), ("a dog runs", "a cat sleeps on the mat")]
    logits = ce.predict(pairs)
    assert logits.shape == (2, 3) and isinstance(ce.activation_fn, torch.nn.Identity)
    probs = ce.predict(pairs, apply_softmax=True)
    np.testing.assert_allclose(probs, torch.softmax(torch.from_numpy(logits), 1).numpy(), atol=1e-6)
    tensor = ce.predict(pairs, convert_to_tensor=True)
    assert isinstance(tensor, torch.Tensor) and tensor.shape == (2, 3)
    rows = ce.predict(pairs, convert_to_numpy=False)
    assert isinstance(rows, list) and len(rows) == 2 and rows[0].shape == (3,)


def test_pair_ids_are_the_same_without_the_rust_shortcut(tiny_bert, monkeypatch):
    tokenizer = tiny_bert[1]
    firsts = ["a short one", "word " * 40, "x"]
    seconds = ["and its partner", "y", "word " * 40]
    fast = tokenizing.pair_token_ids(tokenizer, firsts, seconds, 24)
    monkeypatch.setattr(tokenizing, "rust_tokenizer", lambda tok: None)
    assert tokenizing.pair_token_ids(tokenizer, firsts, seconds, 24) == fast
    ids, types, cut = fast
    assert cut == [False, True, True] and max(map(len, ids)) == 24
    assert types[0][:5] == [0] * 5 and types[0][-1] == 1


# ---------------------------------------------------------------------------------- training
def test_pure_losses_state_their_math():
    from sbert_tutor.losses import cross_encoder_bce, cross_encoder_mse

    z = torch.tensor([[2.0], [-1.0], [0.5]])  # [N, 1], a one-label model's logits
    y = torch.tensor([5.0, 0.0, 2.5])
    expected = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(3.0))(z.view(-1), y / 5)
    assert torch.allclose(cross_encoder_bce(z, y, (0, 5), pos_weight=3.0), expected)
    sigmoid = torch.sigmoid(z.view(-1))
    assert torch.allclose(
        cross_encoder_mse(z, y, (0, 5), "sigmoid"), ((sigmoid - y / 5) ** 2).mean()
    )
    assert torch.allclose(cross_encoder_mse(z, y), ((z.view(-1) - y) ** 2).mean())
    with pytest.raises(ValueError, match="outside|must lie in score_range"):
        cross_encoder_bce(z, y)  # 0-5 scores without their scale
    with pytest.raises(ValueError, match="NaN or infinite at positions \\[1\\]"):
        cross_encoder_bce(z, torch.tensor([1.0, float("nan"), 0.0]))
    with pytest.raises(ValueError, match="shape \\[N\\] or \\[N, 1\\]"):
        cross_encoder_bce(torch.zeros(3, 2), torch.zeros(3))
    with pytest.raises(ValueError, match="activation"):
        cross_encoder_mse(z, y, activation="tanh")


@pytest.mark.parametrize(
    ("loss", "reference_loss", "labels"),
    [
        ("ce_bce", "BinaryCrossEntropyLoss", [1.0, 0.0, 1.0, 0.0, 0.3]),
        ("ce_mse", "MSELoss", [2.0, -1.0, 0.5, 0.0, 1.5]),
    ],
)
def test_objective_loss_equals_sentence_transformers_loss(ce_pair, loss, reference_loss, labels):
    _, reference, ours = ce_pair
    rows = [
        (QUERY, "Someone plays an instrument."),
        (QUERY, "A cat sleeps on the sofa."),
        ("How tall is the tower?", "The tower is 300 metres tall."),
        ("How tall is the tower?", "Bananas are yellow."),
        ("A woman slices an onion.", "An onion is being cut by a woman in a kitchen."),
    ]
    target = torch.tensor(labels)
    objective = make_objective(loss)
    with torch.no_grad():
        got = objective.loss(ours, rows, target)
        ref_loss = getattr(st.cross_encoder.losses, reference_loss)(reference)
        expected = ref_loss([[a for a, _ in rows], [b for _, b in rows]], target)
    assert abs(float(got) - float(expected)) < 1e-5


def test_training_lowers_the_loss_and_changes_the_scores(tiny_bert):
    """Balanced 0/1 relevance (the head's bias alone cannot lower the loss below log 2): a few
    steps of the shared trainer learn which passages are relevant."""
    ce = tiny_cross_encoder(tiny_bert[1], dropout=0.1)
    queries = ["music please", "play a song", "some sound"]
    pairs = [(q, d, 1) for q in queries for d in ("a guitar plays", "the guitar is loud")]
    pairs += [(q, d, 0) for q in queries for d in ("a banana falls", "the banana is ripe")]
    before = ce.predict([p[:2] for p in pairs])
    config = TrainingConfig(
        batch_size=4, max_steps=30, lr=1e-2, warmup_ratio=0.0, show_progress_bar=False, seed=1
    )
    trainer = Trainer(ce, make_objective("ce_bce"), pairs, config)
    start = trainer.dataset_loss()
    record = trainer.train()
    assert start == pytest.approx(np.log(2), abs=1e-3)
    assert trainer.dataset_loss() < start - 0.2
    assert len(record.steps) == 30 and all(s["grad_norm"] > 0 for s in record.steps)
    after = ce.predict([p[:2] for p in pairs])
    assert np.abs(after - before).max() > 0.1
    labels = np.array([p[2] for p in pairs])
    assert after[labels == 1].mean() > after[labels == 0].mean() + 0.2


def test_fit_trains_a_cross_encoder_on_scores_and_checks_the_model_kind(tiny_bert):
    ce = tiny_cross_encoder(tiny_bert[1])
    pairs = [
        ("A man is eating food.", "A man is eating a meal.", 4.8),
        ("A plane is taking off.", "An air plane is taking off.", 5.0),
        ("A man is playing a flute.", "A man is eating pasta.", 0.2),
        ("A woman is slicing an onion.", "Someone is cutting an onion.", 4.2),
    ]
    config = TrainingConfig(batch_size=2, max_steps=2, show_progress_bar=False, eval_before=False)
    run = fit(ce, "ce_bce", pairs, config, objective_options={"score_range": (0, 5)})
    assert run.model is ce and run.log["loss"] == {
        "name": "ce_bce",
        "score_range": [0.0, 5.0],
        "pos_weight": None,
    }
    assert run.log["base_model"]["kind"] == "cross-encoder" and run.log["steps_done"] == 2
    with pytest.raises(
        ValueError,
        match=r"outside the score range \(0, 1\).*objective_options=\{.score_range.: \(0, 5\)\}",
    ):
        fit(ce, "ce_bce", pairs, config)  # scores of 0-5 without their scale
    with pytest.raises(TypeError, match="a CrossEncoder has none.*ce_bce"):
        fit(ce, "cosine", pairs, config, objective_options={"score_range": (0, 5)})


def test_sts_evaluator_scores_a_cross_encoder_by_its_predictions(tiny_bert):
    from sbert_tutor.data.sts import STSData
    from sbert_tutor.evaluation.sts import correlations
    from sbert_tutor.training import STSEvaluator

    ce = tiny_cross_encoder(tiny_bert[1])
    s1 = ["a man eats", "a dog runs", "the sun shines", "a cat sleeps"]
    s2 = ["a man has food", "a cat runs", "it rains", "a kitten naps"]
    data = STSData("tiny", "dev", s1, s2, np.array([4.5, 2.0, 0.5, 4.0]), ["all"] * 4, "test")
    metrics = STSEvaluator(data=data)(ce)
    expected, _ = correlations(ce.predict(list(zip(s1, s2, strict=True))), data.scores)
    assert metrics["tiny_dev_spearman"] == pytest.approx(expected)


def test_cross_encoder_is_exported_lazily():
    import sbert_tutor

    assert "CrossEncoder" in dir(sbert_tutor) and sbert_tutor.CrossEncoder is CrossEncoder


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_predict_leaves_a_wrapped_model_in_its_mode(tiny_bert, mode):
    """A model wrapped in eval mode is in eval mode after predict; one in train mode, in train."""
    ce = tiny_cross_encoder(tiny_bert[1])
    ce.model.train(mode == "train")
    ce = CrossEncoder(ce.model, tiny_bert[1], max_seq_length=48)
    assert ce.training == ce.model.training == (mode == "train")
    ce.predict([("a man", "a woman")])
    assert all(m.training == (mode == "train") for m in ce.model.modules())
