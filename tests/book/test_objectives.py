"""The book layer of chapters 6-8: chapter 7's schedule plot, the triplet margins' facts chapter 8
reads off its sweep, the run budget of the chapters' tables, embedded triplets; and the NLI rows
and STS pairs the seeded runners are tested on (``tests/book/test_seeds.py``).

Chapter 6's linear probe and chapter 7's table of target scalings are on their pages, checked
there by ``assert``s: the probe against z-scores computed by hand, the table on a worked example.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from sbert_tutor.book import fixed_embeddings, reporting
from sbert_tutor.book.chapters import regression_objective
from sbert_tutor.data.sts import STSData
from sbert_tutor.losses import pairwise_distance, triplet
from tests.conftest import needs_data

pytestmark = pytest.mark.usefixtures("single_thread")


# --------------------------------------------------------------------------- schedule plot
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


# --------------------------------------------------------------------------- run budget
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


# --------------------------------------------------------------------------- data helpers
class LookupEncoder:
    """encode() from a fixed table: texts 'x<k>' map to one-hot-ish vectors."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.calls = 0

    def encode(self, texts, batch_size=32, show_progress_bar=None):
        self.calls += 1
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


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


# --------------------------------------------------------------------------- for test_seeds.py
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
