"""Transfer evaluation: the protocol on synthetic features whose answer is known, folds, the
MRPC features, the logistic objective against its optimality conditions, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sbert_tutor.data.senteval import TransferSplit, TransferTask
from sbert_tutor.evaluation.transfer import (
    L2_GRID,
    TransferResult,
    choose_l2,
    encode_once,
    evaluate_task,
    fit_logistic,
    nested_cross_validation,
    pair_features,
    senteval_order,
    stratified_folds,
    transfer_results_table,
)
from sbert_tutor.validation import OptionError
from tests.conftest import needs_data, save_tiny_encoder


class LookupEncoder:
    """Sentences -> fixed vectors, recording every call (what was asked to be encoded)."""

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.vectors = vectors
        self.calls: list[list[str]] = []

    def encode(self, sentences, batch_size=32, show_progress_bar=None):
        self.calls.append(list(sentences))
        return np.stack([self.vectors[s] for s in sentences]).astype(np.float32)


def _separable(n_per_class: int, d: int = 8, seed: int = 0):
    """Two classes on either side of a margin along a random direction."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    X = rng.normal(size=(2 * n_per_class, d))
    X -= np.outer(X @ direction, direction)  # remove the direction, then place each class
    y = np.repeat([0, 1], n_per_class)
    X += np.outer(np.where(y == 1, 1.0, -1.0) * rng.uniform(0.5, 1.5, len(y)), direction)
    return X, y


# ------------------------------------------------------------------------------ the protocol
def test_separable_classes_are_classified_perfectly():
    X, y = _separable(60)
    accuracy, inner, folds = nested_cross_validation(X, y, k=5)
    assert accuracy == 100.0 and inner == 100.0
    assert len(folds) == 5 and sum(f.n_test for f in folds) == len(y)
    assert all(f.l2 in L2_GRID for f in folds)


def test_processes_do_not_change_the_numbers():
    X, y = _separable(40, d=6, seed=5)
    X = X + np.random.default_rng(6).normal(scale=0.8, size=X.shape)  # not separable any more
    one = nested_cross_validation(X, y, k=3)
    two = nested_cross_validation(X, y, k=3, n_jobs=2)
    assert one == two and one[0] < 100


def test_shuffled_labels_give_chance_accuracy():
    """Labels independent of the features: the held-out accuracy is a proportion over 600 items,
    standard deviation sqrt(0.25 / 600) = 2.0 points around 50; we allow 3 of them (seeded, so the
    test is deterministic; the bound says what any seed should give)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 16))
    y = rng.permutation(np.repeat([0, 1], 300))
    accuracy, _, _ = nested_cross_validation(X, y, k=5)
    assert abs(accuracy - 50.0) < 6.0


def test_folds_are_stratified_seeded_and_cover_every_item_once():
    labels = np.array([0] * 37 + [1] * 63 + [2] * 20)
    folds = stratified_folds(labels, k=10, seed=1111)
    tested = np.concatenate([test for _, test in folds])
    assert sorted(tested.tolist()) == list(range(len(labels)))  # every item tested exactly once
    for train, test in folds:
        assert not set(train) & set(test) and len(train) + len(test) == len(labels)
        for c, n in zip((0, 1, 2), (37, 63, 20), strict=True):
            assert np.sum(labels[test] == c) in (n // 10, n // 10 + 1)  # stratified
    again = stratified_folds(labels, k=10, seed=1111)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again, strict=True))
    other = stratified_folds(labels, k=10, seed=7)
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(folds, other, strict=True))
    with pytest.raises(ValueError, match="at least k items per class"):
        stratified_folds(np.array([0] * 30 + [1] * 4), k=5)


def test_senteval_order_sorts_by_word_count_then_label():
    # keys (3, 0), (1, 1), (2, 0), (1, 0) -> (1, 0) (1, 1) (2, 0) (3, 0)
    order = senteval_order(["a b c", "a", "b c", "d"], np.array([0, 1, 0, 0]))
    assert order.tolist() == [3, 1, 2, 0]
    # pairs: word counts of both sentences, then the label; ties keep file order
    pairs = senteval_order(["x y", "x", "x"], np.array([1, 1, 0]), ["a", "a b", "a b"])
    assert pairs.tolist() == [2, 1, 0]


def test_mrpc_features_are_abs_difference_then_product():
    u = np.array([[1.0, -2.0], [0.5, 0.0]])
    v = np.array([[3.0, 1.0], [0.5, 4.0]])
    np.testing.assert_array_equal(
        pair_features(u, v), [[2.0, 3.0, 3.0, -2.0], [0.0, 4.0, 0.25, 0.0]]
    )
    with pytest.raises(ValueError, match="one shape"):
        pair_features(u, v[:1])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_fit_minimises_mean_cross_entropy_plus_half_l2(n_classes):
    """At the optimum of (1/n) sum CE + (l2/2)||W||^2 the gradient vanishes: the C = 1/(l2 n)
    mapping is checked against the optimality conditions, computed here with numpy."""
    rng = np.random.default_rng(0)
    n, d, l2 = 300, 5, 1e-2
    X = rng.normal(size=(n, d))
    y = rng.integers(0, n_classes, n)
    clf = fit_logistic(X, y, l2)
    W, b = clf.coef_, clf.intercept_
    if n_classes == 2:  # one vector: p = sigmoid(w.x + b)
        p = 1 / (1 + np.exp(-(X @ W[0] + b[0])))
        residual = (p - y)[:, None]
    else:
        z = X @ W.T + b
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        residual = p - np.eye(n_classes)[y]
    grad_W = residual.T @ X / n + l2 * W
    grad_b = residual.mean(axis=0)
    assert np.abs(grad_W).max() < 1e-4 and np.abs(grad_b).max() < 1e-4
    assert np.abs(W).max() > 1e-2  # not trivially zero


def test_choose_l2_prefers_strong_regularisation_for_noise_and_weak_for_signal():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 50))
    y = rng.integers(0, 2, 400)
    _, noise_scores = choose_l2(X, y, k=5)
    assert set(noise_scores) == set(L2_GRID)
    Xs, ys = _separable(100, d=50, seed=3)
    best, scores = choose_l2(Xs * 0.01, ys, k=5)  # tiny features need large weights
    assert scores[best] == max(scores.values()) and best == min(L2_GRID)
    with pytest.raises(ValueError, match="positive"):
        choose_l2(X, y, l2_grid=(0.0,))


# ------------------------------------------------------------------------- the whole task
def _task(name, splits, label_names=("neg", "pos")):
    return TransferTask(name=name, splits=splits, label_names=label_names, source="synthetic")


def test_evaluate_task_encodes_each_sentence_once_and_scores_every_protocol():
    X, y = _separable(60, d=6, seed=4)
    sentences = [f"item {i}" + " word" * (i % 5) for i in range(len(y))]
    vectors = {s: x for s, x in zip(sentences, X, strict=True)}
    encoder = LookupEncoder(vectors)
    # MR-like (nested CV); a duplicate and an empty line are kept as items
    cv = TransferSplit(sentences + [sentences[0], ""], np.concatenate([y, [y[0], 0]]))
    # the converged probe: the wiring is the same for both, SentEval's needs more items (below)
    result = evaluate_task(encoder, _task("mr", {"all": cv}), k=5, classifier="lbfgs")
    assert len(encoder.calls) == 1
    assert sorted(encoder.calls[0]) == sorted(sentences)  # once each, no empty string
    assert result.n_sentences == len(sentences) and result.n_empty == 1
    assert result.n_train == result.n_test == len(y) + 2 and len(result.folds) == 5
    assert result.accuracy > 97  # only the zero vector of the empty line can be wrong

    # SST-like: train / dev / test
    half = len(y) // 2
    train = TransferSplit(sentences[::2], y[::2])
    dev = TransferSplit(sentences[1::4], y[1::4])
    test = TransferSplit(sentences[3::4], y[3::4])
    sst = evaluate_task(
        LookupEncoder(vectors),
        _task("sst2", {"train": train, "dev": dev, "test": test}),
        classifier="lbfgs",
    )
    assert sst.accuracy == 100.0 and sst.n_dev == len(dev) and sst.l2 in L2_GRID
    assert set(sst.l2_scores) == set(L2_GRID) and sst.n_train == half

    # MRPC-like: paraphrases are identical pairs, the others are far apart
    a = sentences[:40]
    b = [s if i % 2 else sentences[-1 - i] for i, s in enumerate(a)]
    labels = np.array([i % 2 for i in range(40)])
    pairs = TransferSplit(a, labels, b)
    mrpc = evaluate_task(
        LookupEncoder(vectors),
        _task("mrpc", {"train": pairs, "test": pairs}),
        k=5,
        classifier="lbfgs",
    )
    assert mrpc.accuracy == 100.0 and mrpc.f1 == 100.0


def test_evaluate_task_senteval_classifier_on_split_and_pair_tasks():
    """SentEval's probe through the SST-2 (train/dev/test) and MRPC (pairs, CV on train) paths, on
    well-separated features with enough items for its Adam to get there."""
    X, y = _separable(600, d=6, seed=8)
    X = X / 3 + np.where(y == 1, 1.0, -1.0)[:, None] * 0.4  # spread small, margin wide
    sentences = [f"item {i}" for i in range(len(y))]
    vectors = dict(zip(sentences, X, strict=True))
    split = {
        name: TransferSplit(sentences[part], y[part])
        for name, part in (("train", slice(0, None, 2)), ("dev", slice(1, None, 4)))
    }
    split["test"] = TransferSplit(sentences[3::4], y[3::4])
    sst = evaluate_task(LookupEncoder(vectors), _task("sst2", split))
    assert sst.accuracy > 98 and sst.dev_accuracy > 98 and set(sst.l2_scores) == set(L2_GRID)
    a = sentences[:300]
    b = [s if i % 2 else sentences[-1 - i] for i, s in enumerate(a)]
    pairs = TransferSplit(a, np.array([i % 2 for i in range(300)]), b)
    mrpc = evaluate_task(
        LookupEncoder(vectors), _task("mrpc", {"train": pairs, "test": pairs}), k=3
    )
    assert mrpc.accuracy > 95 and mrpc.f1 > 95 and mrpc.l2 in L2_GRID
    with pytest.raises(ValueError, match="unknown classifier"):
        evaluate_task(LookupEncoder(vectors), _task("sst2", split), classifier="adam")


def test_encode_once_maps_empty_sentences_to_zero():
    enc = LookupEncoder({"a": np.ones(3), "b": np.full(3, 2.0)})
    index, emb, n_empty = encode_once(enc, ["a", "b", "a", "", ""])
    assert n_empty == 2 and enc.calls == [["a", "b"]]
    np.testing.assert_array_equal(emb[index[""]], np.zeros(3))
    np.testing.assert_array_equal(emb[index["b"]], np.full(3, 2.0))


def test_result_table_repr_and_json():
    X, y = _separable(30, d=4)
    sentences = [f"s{i}" for i in range(len(y))]
    enc = LookupEncoder(dict(zip(sentences, X, strict=True)))
    tasks = {
        name: evaluate_task(enc, _task(name, {"all": TransferSplit(sentences, y)}), k=3)
        for name in ("cr", "subj")
    }
    table = transfer_results_table(tasks)
    assert table["task"].tolist() == ["CR", "SUBJ", "avg"]
    assert table.loc[2, "accuracy"] == pytest.approx(table.loc[:1, "accuracy"].mean())
    result = TransferResult(table=table, tasks=tasks, provenance={"profile": "quick"})
    assert repr(result) == repr(table) and "<table" in result._repr_html_()
    assert not table.attrs
    payload = json.loads(json.dumps(result.to_json()))
    assert payload["table"][0]["task"] == "CR" and payload["table"][0]["f1"] is None
    assert len(payload["tasks"]["cr"]["folds"]) == 3
    assert isinstance(result.timing(), pd.DataFrame) and len(result.folds()) == 6


# ---------------------------------------------------------------------------------- the CLI
@needs_data
@pytest.mark.usefixtures("single_thread")
@pytest.mark.filterwarnings("ignore::sbert_tutor.encoders.sentence_encoder.TruncationWarning")
def test_cli_eval_transfer_json(tmp_path, tiny_bert, capsys):
    from sbert_tutor.cli import main

    model = save_tiny_encoder(tiny_bert, tmp_path / "tiny")
    out = tmp_path / "out.json"
    argv = ["eval-transfer", "--model", model, "--tasks", "cr,mrpc", "--max-items", "60"]
    argv += ["--kfold", "3", "--device", "cpu", "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "CR" in printed and "MRPC" in printed and "at most 60 items" in printed
    payload = json.loads(out.read_text())
    assert [row["task"] for row in payload["table"]] == ["CR", "MRPC", "avg"]
    assert payload["tasks"]["mrpc"]["n_train"] == 60 and payload["tasks"]["mrpc"]["f1"] is not None
    prov = payload["provenance"]
    assert prov["protocol"]["kfold"] == 3 and prov["protocol"]["max_items"] == 60
    assert payload["table"][0]["protocol"] == "3-fold CV, inner 3-fold CV for L2"
    assert payload["tasks"]["mrpc"]["protocol"] == "(|u-v|, u*v); 3-fold CV on train for L2, test"
    assert "3-fold CV" in printed and "10-fold" not in printed
    assert any(f.endswith("custrev.pos") for f in prov["data_files"])
    assert all(len(digest) == 64 for digest in prov["data_files"].values())


def test_the_protocol_records_the_folds_it_ran():
    X, y = _separable(60, d=6, seed=4)
    sentences = [f"item {i}" for i in range(len(y))]
    encoder = LookupEncoder(dict(zip(sentences, X, strict=True)))
    task = _task("mr", {"all": TransferSplit(sentences, y)})
    result = evaluate_task(encoder, task, k=5, classifier="lbfgs")
    assert result.protocol == "5-fold CV, inner 5-fold CV for L2" and len(result.folds) == 5
    assert transfer_results_table({"mr": result})["protocol"].tolist() == [result.protocol]


def test_too_few_items_for_the_folds_names_the_task_and_what_to_change():
    sentences = [f"item {i}" for i in range(12)]
    encoder = LookupEncoder({s: np.ones(4) for s in sentences})
    y = np.array([0] * 9 + [1] * 3)
    task = _task("cr", {"all": TransferSplit(sentences, y)})
    with pytest.raises(OptionError, match=r"task 'cr': 5-fold.*class 1 has 3.*max_items=20.*k=3"):
        evaluate_task(encoder, task, k=5, classifier="lbfgs")
    assert encoder.calls == []  # refused before encoding


@needs_data
@pytest.mark.usefixtures("single_thread")
def test_cli_names_the_task_and_the_flags_when_max_items_breaks_a_fold(tmp_path, tiny_bert, capsys):
    from sbert_tutor.cli import main

    model = save_tiny_encoder(tiny_bert, tmp_path / "tiny")
    argv = ["eval-transfer", "--model", model, "--tasks", "cr", "--max-items", "6"]
    assert main([*argv, "--kfold", "5", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "sbert-tutor: error: task 'cr': 5-fold cross-validation" in err
    assert "--max-items" in err and "--kfold" in err and "max_items=" not in err


def test_cli_rejects_a_bad_grid(capsys):
    from sbert_tutor.cli import main

    with pytest.raises(SystemExit):
        main(["eval-transfer", "--model", "x", "--l2-grid", "0,-1"])
    assert "--l2-grid must be comma-separated positive numbers" in capsys.readouterr().err


def test_a_transfer_result_gives_its_main_number():
    from sbert_tutor.evaluation.transfer import TransferResult

    one = TransferResult(table=pd.DataFrame({"task": ["MR"], "accuracy": [71.5]}))
    several = TransferResult(
        table=pd.DataFrame({"task": ["MR", "CR", "avg"], "accuracy": [70.0, 80.0, 75.0]})
    )
    assert one.primary_metric == "accuracy" and one.main_score == 71.5
    assert several.main_score == 75.0  # the avg row
