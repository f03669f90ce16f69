"""The book layer of chapters 6-8 (probes, sweeps, runs): label scalings, the triplet margins' facts
and probes on hand-made data; the training runners on a tiny BERT."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from sbert_tutor.book import fixed_embeddings, reporting
from sbert_tutor.book.chapters import (
    classification_objective,
    regression_objective,
)
from sbert_tutor.data.sts import STSData
from sbert_tutor.losses import SoftmaxClassifier, pairwise_distance, triplet
from tests.conftest import needs_data, save_tiny_encoder

FEATURE_SETS = [
    ("u", "v"),
    ("|u-v|",),
    ("u*v",),
    ("|u-v|", "u*v"),
    ("u", "v", "u*v"),
    ("u", "v", "|u-v|"),
    ("u", "v", "|u-v|", "u*v"),
]


pytestmark = pytest.mark.usefixtures("single_thread")


# --------------------------------------------------------------------------- label scalings
def test_target_scaling_table_worked_example():
    """cos = (0, 1), y = (0, 5)."""
    table = regression_objective.target_scaling_table(np.array([0.0, 1.0]), np.array([0.0, 5.0]))
    sbert = table.loc["y / 5 (SBERT)"]
    assert sbert["loss now"] == 0.0 and sbert["loss floor"] == 0.0
    assert sbert["unreachable targets"] == 0.0 and sbert["pairs pulled together"] == 0.0
    raw = table.loc["y unscaled"]  # targets (0, 5): ((0 - 0)^2 + (1 - 5)^2) / 2 = 8
    assert raw["loss now"] == 8.0 and raw["loss floor"] == 8.0  # cos = 1 is already the best
    assert raw["unreachable targets"] == 0.5 and raw["pairs pulled together"] == 0.5
    sym = table.loc["(y - 2.5) / 2.5"]  # targets (-1, 1): (0 - (-1))^2 / 2 = 0.5
    assert sym["loss now"] == 0.5 and sym["loss floor"] == 0.0
    assert sym["pairs pulled together"] == 0.0  # the first pair is pushed apart, to -1
    assert list(table["target interval"]) == ["[0, 1]", "[-1, 1]", "[0, 5]"]


def test_target_scaling_table_other_score_range():
    """SICK-R scores 1..5: y = 3 maps to 0.5 under the SBERT scaling."""
    table = regression_objective.target_scaling_table(
        np.array([0.5]), np.array([3.0]), score_range=(1.0, 5.0), scalings={"unit": (0.0, 1.0)}
    )
    assert table.loc["unit", "loss now"] == 0.0


def test_schedule_plot_draws_the_rate_and_the_norm_against_the_clipping_line():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sbert_tutor.training import TrainingRecord

    record = TrainingRecord()
    for step, (lr, norm) in enumerate([(0.0, 3.0), (1e-4, 0.5), (5e-5, 0.4)], start=1):
        record.log_step(step, step / 3, 1.0, lr, norm)
    ax = regression_objective.plot_schedule_and_clipping(record, max_grad_norm=1.0)
    assert list(ax.lines[0].get_ydata()) == [0.0, 1e-4, 5e-5]
    right = [other for other in ax.figure.axes if other is not ax][0]
    assert list(right.lines[0].get_ydata()) == [3.0, 0.5, 0.4]
    assert list(right.lines[1].get_ydata()) == [1.0, 1.0]  # the clipping threshold
    plt.close(ax.figure)


# --------------------------------------------------------------------------- triplet margins
# Chapter 8 runs its margin sweep on the page; these are the facts it reads off the sweep, on the
# library's loss.
def test_margin_beyond_two_is_never_satisfied_by_unit_vectors():
    """The best possible unit triplet (p = a, n = -a) separates by exactly 2 in both distances."""
    a = torch.tensor([[1.0, 0.0]])
    p = torch.tensor([[1.0, 0.0]])
    n = torch.tensor([[-1.0, 0.0]])
    for distance in ("euclidean", "cosine"):
        losses = [float(triplet(a, p, n, distance, margin)) for margin in (1.0, 2.0, 2.5, 5.0)]
        assert losses == pytest.approx([0.0, 0.0, 0.5, 3.0])


def test_unit_vectors_euclidean_is_a_function_of_cosine():
    """|u - v| = sqrt(2 - 2 cos) for unit vectors: at margin 0 both distances flag the same
    triplets, and with margin >= 2 every triplet is active with loss margin + mean gap."""
    g = torch.Generator().manual_seed(3)
    a, p, n = (
        torch.nn.functional.normalize(torch.randn(200, 8, generator=g), dim=1) for _ in "apn"
    )
    active = {}
    for distance in ("euclidean", "cosine"):
        gap = pairwise_distance(a, p, distance) - pairwise_distance(a, n, distance)
        active[distance] = gap > 0
        assert float(triplet(a, p, n, distance, 5.0)) == pytest.approx(5.0 + float(gap.mean()))
    assert torch.equal(active["euclidean"], active["cosine"])
    assert 0 < int(active["cosine"].sum()) < 200
    cos = torch.cosine_similarity(a, p)
    assert torch.allclose((a - p).norm(dim=1), torch.sqrt(2 - 2 * cos), atol=1e-5)


# --------------------------------------------------------------------------- probes
def _equal_or_random(n: int, d: int, seed: int):
    """Label 0: v = u (same sentence); label 1: v independent. Only |u - v| reveals the label."""
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(n, d, generator=g, dtype=torch.float64)
    labels = torch.arange(n) % 2
    v = torch.where(labels[:, None] == 0, u, torch.randn(n, d, generator=g, dtype=torch.float64))
    return u.float(), v.float(), labels


def test_a_linear_head_on_u_v_cannot_see_whether_the_pair_agrees():
    u, v, y = _equal_or_random(400, 4, seed=0)
    ut, vt, yt = _equal_or_random(400, 4, seed=1)
    with_diff = classification_objective.fit_probe(
        u, v, y, ("u", "v", "|u-v|"), num_labels=2, l2=1e-4
    )
    without = classification_objective.fit_probe(u, v, y, ("u", "v"), num_labels=2, l2=1e-4)
    assert classification_objective.probe_accuracy(with_diff, ut, vt, yt) > 0.95
    assert classification_objective.probe_accuracy(without, ut, vt, yt) < 0.65  # near chance (0.5)


def test_standardised_probe_does_not_depend_on_the_scale_of_a_feature():
    # u * v of unit vectors is tiny next to |u - v|; standardising makes the l2 penalty fair, so
    # rescaling the embeddings (which rescales u * v quadratically) changes nothing
    u, v, y = _equal_or_random(200, 4, seed=2)
    fs = ("|u-v|", "u*v")
    small = classification_objective.fit_probe(0.1 * u, 0.1 * v, y, fs, num_labels=2, l2=1e-2)
    large = classification_objective.fit_probe(10 * u, 10 * v, y, fs, num_labels=2, l2=1e-2)
    ut, vt, yt = _equal_or_random(200, 4, seed=3)
    with torch.no_grad():
        from sbert_tutor.losses import concat_features

        a = small(concat_features(0.1 * ut, 0.1 * vt, fs))
        b = large(concat_features(10 * ut, 10 * vt, fs))
    torch.testing.assert_close(a, b, atol=1e-3, rtol=1e-3)
    raw_small = classification_objective.fit_probe(
        0.1 * u, 0.1 * v, y, fs, num_labels=2, l2=1e-2, standardize=False
    )
    raw_large = classification_objective.fit_probe(
        10 * u, 10 * v, y, fs, num_labels=2, l2=1e-2, standardize=False
    )
    assert classification_objective.probe_accuracy(
        raw_small, 0.1 * ut, 0.1 * vt, yt
    ) < classification_objective.probe_accuracy(raw_large, 10 * ut, 10 * vt, yt)


def test_standardisation_is_folded_into_the_head():
    # a head fitted with standardisation reads raw features and gives the logits of a head
    # fitted without it on z-scores computed by hand
    u, v, y = _equal_or_random(100, 3, seed=4)
    u = 5 * u + 2  # a scale and a shift for the z-scores to remove
    z = (u - u.mean(dim=0)) / u.std(dim=0)
    head = classification_objective.fit_probe(u, v, y, ("u",), num_labels=2, l2=1e-2)
    # with standardisation the penalty is n * l2 (n = 3 dimensions here)
    on_z = classification_objective.fit_probe(
        z, v, y, ("u",), num_labels=2, l2=3e-2, standardize=False
    )
    with torch.no_grad():
        torch.testing.assert_close(head(u), on_z(z), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(head.linear.weight, on_z.linear.weight, atol=1e-3)
    # block means are read in standardised units: the weights the optimiser saw
    means = classification_objective.head_block_means(head, ["a", "b"])
    expected = on_z.linear.weight.detach().mean(dim=1)
    torch.testing.assert_close(torch.tensor(means["u"].to_numpy()), expected, atol=1e-4, rtol=1e-3)


def test_refit_probes_reuses_the_kept_embeddings():
    u, v, y = _equal_or_random(60, 3, seed=5)
    result = classification_objective.ProbeResult(
        table=pd.DataFrame(),
        heads={},
        majority=0.5,
        pairs={"train": 40, "test": 20},
        embeddings=(u, v, y),
    )
    table = classification_objective.refit_probes(result, [("|u-v|",), ("u", "v")], l2=1e-4)
    head = classification_objective.fit_probe(u[:40], v[:40], y[:40], ("|u-v|",), l2=1e-4)
    assert table.loc["(|u-v|)", "test accuracy"] == classification_objective.probe_accuracy(
        head, u[40:], v[40:], y[40:]
    )
    with pytest.raises(ValueError, match="no embeddings"):
        classification_objective.refit_probes(
            classification_objective.ProbeResult(table=table, heads={}, majority=0, pairs={}), []
        )


def test_common_budget_refuses_runs_that_differ():
    log = {"steps_done": 3, "config": {"batch_size": 8}}
    assert reporting.common_budget({"a": log, "b": log}) == {
        "steps": 3,
        "batch_size": 8,
        "examples": 24,
    }
    other = {"steps_done": 4, "config": {"batch_size": 8}}
    with pytest.raises(ValueError, match="differ"):
        reporting.common_budget({"a": log, "b": other})
    with pytest.raises(ValueError, match="at least one"):
        reporting.common_budget({})


def test_head_block_means_reads_the_distance_weights():
    head = SoftmaxClassifier(2, 2, ("u", "|u-v|"))
    with torch.no_grad():
        head.linear.weight.copy_(torch.tensor([[1.0, 3.0, -2.0, -4.0], [0.0, 0.0, 5.0, 7.0]]))
    means = classification_objective.head_block_means(head, ["same", "different"])
    assert means.loc["same"].tolist() == [2.0, -3.0]
    assert means.loc["different"].tolist() == [0.0, 6.0]


def test_split_by_premise_keeps_premises_on_one_side():
    pairs = pd.DataFrame(
        {
            "premise": ["p1", "p1", "p2", "p3", "p3", "p3", "p4"],
            "hypothesis": list("abcdefg"),
            "label": [0, 1, 2, 0, 1, 2, 0],
        }
    )
    train, test = classification_objective.split_by_premise(pairs, n_train=None, n_test=2, seed=0)
    assert set(train["premise"]).isdisjoint(test["premise"])
    assert len(train) + len(test) == len(pairs)
    assert test["premise"].nunique() == 2
    again = classification_objective.split_by_premise(pairs, n_train=None, n_test=2, seed=0)
    assert again[1].equals(test)
    small, _ = classification_objective.split_by_premise(pairs, n_train=1, n_test=2, seed=0)
    assert small["premise"].nunique() == 1
    with pytest.raises(ValueError, match="n_test"):
        classification_objective.split_by_premise(pairs, n_train=None, n_test=4)


class LookupEncoder:
    """encode() from a fixed table: texts 'x<k>' map to one-hot-ish vectors."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.calls = 0

    def encode(self, texts, batch_size=32, show_progress_bar=None):
        self.calls += 1
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


def test_linear_probe_and_embed_pairs_on_a_lookup_encoder():
    rng = np.random.default_rng(0)
    texts = [f"s{i}" for i in range(60)]
    table = {t: rng.normal(size=6) for t in texts}
    rows = []
    for i in range(0, 60, 2):  # label 0: the hypothesis is the premise itself; 1: another text
        rows.append((texts[i], texts[i], 0))
        rows.append((texts[i], texts[i + 1], 1))
    pairs = pd.DataFrame(rows, columns=["premise", "hypothesis", "label"])
    train, test = classification_objective.split_by_premise(pairs, n_train=None, n_test=10, seed=0)
    encoder = LookupEncoder(table)
    u, v, y = classification_objective.embed_pairs(encoder, train)
    assert torch.allclose(u[0], torch.tensor(table[train["premise"][0]], dtype=torch.float32))
    assert y.tolist() == train["label"].tolist()
    probe = classification_objective.linear_probe(
        encoder, train, test, [("u", "v"), ("|u-v|",)], l2=1e-4
    )
    assert list(probe.table.index) == ["(u, v)", "(|u-v|)"]
    assert probe.table.loc["(|u-v|)", "test accuracy"] == 1.0
    assert probe.pairs == {"train": len(train), "test": len(test)}
    assert probe.majority == 0.5
    assert set(probe.heads) == {"(u, v)", "(|u-v|)"}


# --------------------------------------------------------------------------- data helpers
@needs_data
def test_embed_triplets_encodes_each_text_once_and_samples():
    table = {t: np.full(3, float(i)) for i, t in enumerate("abcdef")}
    frame = pd.DataFrame({"anchor": list("aab"), "positive": list("cde"), "negative": list("fff")})
    encoder = LookupEncoder(table)
    a, p, n = fixed_embeddings.embed_triplets(encoder, frame)
    assert encoder.calls == 1
    assert a[:, 0].tolist() == [0.0, 0.0, 1.0] and n[:, 0].tolist() == [5.0, 5.0, 5.0]
    a2, _, _ = fixed_embeddings.embed_triplets(encoder, frame, n=2, seed=0)
    assert a2.shape == (2, 3)


# --------------------------------------------------------------------------- training runners
@pytest.fixture
def tiny_folder(tiny_bert, tmp_path):
    return save_tiny_encoder(tiny_bert, tmp_path / "tiny")


def _tiny_sts() -> STSData:
    s1 = ["a man plays a guitar", "a dog runs", "the sun is hot", "kids play football", "a cat"]
    s2 = ["a man plays music", "a cat sleeps", "it is cold", "children play a game", "a car"]
    return STSData(
        "stsb", "dev", s1, s2, np.array([4.5, 1.0, 0.5, 4.0, 0.2]), ["STSb"] * 5, "hand-made"
    )


NLI_ROWS = [
    ("a man plays a guitar", "a man makes music", "entailment"),
    ("a man plays a guitar", "a woman sleeps", "contradiction"),
    ("a dog runs in a park", "an animal moves", "entailment"),
    ("a dog runs in a park", "the dog is asleep", "contradiction"),
    ("kids play football", "children play", "entailment"),
    ("kids play football", "nobody plays", "contradiction"),
    ("a cat sits on a mat", "a cat is on a mat", "entailment"),
    ("a cat sits on a mat", "a dog barks", "neutral"),
]
