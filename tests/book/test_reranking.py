"""Chapter 14: the cross-encoder start is the bi-encoder start's transformer, the random-order
floor is the mean over every order, the grid of first stages by re-rankers (the page's and
``benchmarks/rerank_study.py``'s) agrees with a hand-worked run, and the recorded study with the
per-query values its record stores."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from sbert_tutor.book.chapters.reranking import random_order_rr, rerank_grid
from sbert_tutor.book.weak_start import CrossEncoderStart, WeakStart
from sbert_tutor.data.msmarco import MSMarcoData
from tests.scripts import load_script

pytestmark = pytest.mark.usefixtures("single_thread")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def study():
    """``benchmarks/rerank_study.py``, the recorded study's code (its grid of first stages by
    re-rankers is the loop the chapter's page runs live)."""
    return load_script("benchmarks/rerank_study.py")  # its `from retriever_study import ...`


def test_the_cross_encoder_starts_from_the_same_weights_as_the_bi_encoder():
    start = WeakStart(layers=1)
    bi = start.load()
    ce = CrossEncoderStart(start).load()
    assert len(ce.model.base_model.encoder.layer) == 1 == ce.model.config.num_hidden_layers
    ce_state = ce.model.base_model.state_dict()
    for name, weight in bi.model.state_dict().items():
        if name.startswith("pooler"):
            continue
        assert torch.equal(ce_state[name], weight), name
    assert ce.num_labels == 1 and "cross-encoder" in CrossEncoderStart(start).label
    # the head is drawn with the seed: the same seed, the same head
    again = CrossEncoderStart(start).load()
    assert torch.equal(again.model.classifier.weight, ce.model.classifier.weight)


def _data() -> MSMarcoData:
    return MSMarcoData(
        name="msmarco-dev-subset",
        queries={"q1": "a", "q2": "b"},
        qrels={"q1": {"c": 1}, "q2": {"x": 1}},
        corpus={p: p for p in "abcxyz"},
        corpus_name="mini",
        relevance_threshold=1,
        source="hand-made",
    )


@pytest.mark.parametrize(
    ("ranking", "relevant", "k"),
    [
        ("abcdef", {"c"}, 6),
        ("abcdef", {"a", "e"}, 5),
        ("abcdefghijkl", {"b", "c", "d"}, 7),
        ("abcdefghijkl", {"k"}, 4),
        ("abcdefghijkl", {"z"}, 4),
    ],
)
def test_random_order_rr_is_the_mean_over_every_order_of_the_top_k(ranking, relevant, k):
    """The closed form against brute force: RR@10 averaged over all k! orders of the top k
    (the rest in place)."""
    from itertools import permutations

    ranking = list(ranking)
    total, count = 0.0, 0
    for top in permutations(ranking[:k]):
        order = [*top, *ranking[k:]][:10]
        hits = [i for i, p in enumerate(order, 1) if p in relevant]
        total += 1 / hits[0] if hits else 0.0
        count += 1
    assert random_order_rr(ranking, relevant, k) == pytest.approx(total / count)


class _Oracle:
    """A cross-encoder stand-in that scores a pair by a table: ``{(query, passage): score}``."""

    def __init__(self, table):
        self.table = table

    def predict(self, pairs, batch_size=32, show_progress_bar=None):
        import numpy as np

        return np.array([self.table[pair] for pair in pairs], dtype=float)


def test_rerank_grid_by_hand():
    data = _data()
    first = {"q1": {"a": 0.9, "b": 0.8, "c": 0.7}, "q2": {"x": 0.9, "y": 0.5, "z": 0.1}}
    perfect = _Oracle({(q, p): float(p in "cx") for q in "ab" for p in "abcxyz"})
    backwards = _Oracle({(q, p): float(p not in "cx") for q in "ab" for p in "abcxyz"})
    table, per_query = rerank_grid(
        {"first": first}, {"perfect": perfect, "backwards": backwards}, data, k=3
    )
    rows = table.loc["first"]
    assert rows.loc["none", "mrr@10"] == pytest.approx((1 / 3 + 1) / 2)
    assert rows.loc["perfect", "mrr@10"] == pytest.approx(1.0)
    # backwards puts the relevant passage last of the 3 (ties keep the first stage's order)
    assert rows.loc["backwards", "mrr@10"] == pytest.approx(1 / 3)
    assert rows.loc["perfect", "change"] == pytest.approx(1.0 - (1 / 3 + 1) / 2)
    assert rows.loc["perfect", "better / worse queries"] == "1 / 0"
    assert rows["first stage recall@3"].tolist() == pytest.approx([1.0] * 3)
    assert rows["random order of top 3"].tolist() == pytest.approx([(1 + 1 / 2 + 1 / 3) / 3] * 3)
    assert per_query["first"]["perfect"] == {"q1": 1.0, "q2": 1.0}


def test_rerank_grid_reuses_scores_already_computed():
    """Scores given for a (first stage, re-ranker) are used as they are: the scorer is not called
    for that pair, and the row equals the one it would have computed."""
    data = _data()
    first = {"q1": {"a": 0.9, "b": 0.8, "c": 0.7}, "q2": {"x": 0.9, "y": 0.5, "z": 0.1}}
    table = {(q, p): float(p in "cx") for q in "ab" for p in "abcxyz"}
    computed, _ = rerank_grid({"first": first}, {"perfect": _Oracle(table)}, data, k=3)

    class Refuses:
        def predict(self, pairs, batch_size=32, show_progress_bar=None):
            raise AssertionError("scored again")

    known = {q: {p: float(p in "cx") for p in first[q]} for q in first}
    reused, _ = rerank_grid(
        {"first": first}, {"perfect": Refuses()}, data, k=3, scored={("first", "perfect"): known}
    )
    pd.testing.assert_frame_equal(reused, computed)


def test_the_recorded_study_agrees_with_its_per_query_values(study):
    """Every row of the recorded re-ranking study is recomputed from the RR@10 it stores query
    by query: the mean, and the paired bootstrap of the change over the first stage alone."""
    from sbert_tutor.book.chapters.reranking import RERANK_RECORD
    from sbert_tutor.book.recorded import recorded_results
    from sbert_tutor.stats import paired_bootstrap

    record = recorded_results(RERANK_RECORD)
    assert record["profile"] == "t4" and record["provenance"]["profile"] == "t4"
    table = pd.DataFrame(record["rows"]).set_index(["first stage", "re-ranker"])
    per_query = record["per_query_rr@10"]
    assert set(table.index.get_level_values(1)) == {"none", study.WEAK, study.TRAINED}
    for (stage, name), row in table.iterrows():
        values = per_query[stage][name]
        assert values.keys() == per_query[stage]["none"].keys()
        assert row["mrr@10"] == pytest.approx(sum(values.values()) / len(values))
        if name == "none":
            continue
        queries = list(values)
        boot = paired_bootstrap(
            [values[q] for q in queries], [per_query[stage]["none"][q] for q in queries]
        )
        assert (row["change"], row["95% low"], row["95% high"]) == pytest.approx(
            (boot.change, boot.low, boot.high)
        )
        assert row["better / worse queries"] == f"{boot.better} / {boot.worse}"
    # the trained re-ranker is the t4 profile's: two epochs over its rows, batch 16
    assert "1000 steps of 16" in record["rerankers"][study.TRAINED]
    assert "30 steps of 16" in record["rerankers"][study.WEAK]
