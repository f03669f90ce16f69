"""Chapter 12 (sbert_tutor.book.distance_dilemma): the training-set construction on hand-made
data, the data split on the real files, the bootstrap table, and the train-and-evaluate runner on
a tiny BERT (mechanics only)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from sbert_tutor.book.chapters import distance_dilemma
from sbert_tutor.book.chapters.distance_dilemma import platt_scale
from sbert_tutor.data.msmarco import MSMarcoData
from sbert_tutor.metrics import evaluate_run
from sbert_tutor.training import TrainingConfig
from tests.conftest import needs_data, save_tiny_encoder

pytestmark = pytest.mark.usefixtures("single_thread")


# ------------------------------------------------------------------------- training sets
class BagEncoder:
    """Deterministic 'encoder': counts of a few words. Enough to check the bookkeeping."""

    name = "bag-of-words"
    vocab = ("cat", "dog", "sun", "rain", "tea")

    def __init__(self):
        self.calls = 0

    def encode(self, texts, batch_size=64, show_progress_bar=None):
        self.calls += 1
        return np.array(
            [[t.split().count(w) + 0.1 * (i + 1) for i, w in enumerate(self.vocab)] for t in texts]
        )


def _hand_data() -> distance_dilemma.DilemmaData:
    test = MSMarcoData(
        name="msmarco-dev-subset",
        queries={"t1": "tea"},
        qrels={"t1": {"p9": 1}},
        corpus={"p9": "tea tea", "p8": "rain"},
        corpus_name="mini",
        relevance_threshold=1,
        source="hand-made",
    )
    return distance_dilemma.DilemmaData(
        train_queries={"q1": "cat", "q2": "sun"},
        positives={"q1": ["p1"], "q2": ["p3", "p4"]},
        negatives={"q1": ["p2", "p3", "p5"], "q2": ["p1"]},
        passages={
            "p1": "cat cat",
            "p2": "dog",
            "p3": "sun",
            "p4": "sun sun rain",
            "p5": "dog cat",
        },
        test=test,
    )


def test_build_training_sets_counts_and_teacher():
    data, teacher = _hand_data(), BagEncoder()
    sets = distance_dilemma.build_training_sets(data, teacher, negatives_per_query=2)
    # q1: 1 positive + 2 negatives; q2: 2 positives + 1 negative
    assert len(sets.pairs) == 3 + 3
    assert sets.pairs["label"].tolist() == [1, 0, 0, 1, 1, 0]
    assert sets.pairs["passage"].tolist() == [
        "cat cat",
        "dog",
        "sun",
        "sun",
        "sun sun rain",
        "cat cat",
    ]
    # triplets: every positive with every kept negative (1x2 + 2x1)
    assert list(sets.triplet().table.itertuples(index=False, name=None)) == [
        ("cat", "cat cat", "dog"),
        ("cat", "cat cat", "sun"),
        ("sun", "sun", "cat cat"),
        ("sun", "sun sun rain", "cat cat"),
    ]
    assert teacher.calls == 1  # every text encoded once
    emb = BagEncoder().encode(["cat", "cat cat"])
    cos = emb[0] @ emb[1] / np.linalg.norm(emb[0]) / np.linalg.norm(emb[1])
    assert sets.pairs["teacher_cosine"].iloc[0] == pytest.approx(cos, abs=1e-12)
    a, b = sets.calibration
    assert (a, b) == platt_scale(sets.pairs["teacher_cosine"], sets.pairs["label"])
    np.testing.assert_allclose(sets.pairs["teacher_logit"], a * sets.pairs["teacher_cosine"] + b)
    siamese = sets.siamese()
    first = tuple(siamese.table.iloc[0])
    assert first == ("cat", "cat cat", sets.pairs["teacher_logit"].iloc[0])
    assert siamese.source.startswith("distance-dilemma pairs with teacher logits")
    summary = distance_dilemma.teacher_summary(sets)
    assert summary.loc["positive", "pairs"] == 3 and summary.loc["BM25 negative", "pairs"] == 3
    all_negs = distance_dilemma.build_training_sets(data, BagEncoder(), negatives_per_query=None)
    assert len(all_negs.triplets) == 3 + 2


def test_build_training_sets_rejects_zero_negatives():
    with pytest.raises(ValueError, match="negatives_per_query"):
        distance_dilemma.build_training_sets(_hand_data(), BagEncoder(), negatives_per_query=0)


# ----------------------------------------------------------------------------- result tables
def _long_table() -> pd.DataFrame:
    rows = []
    for setup, arch, distance, base in [
        ("start model / cosine", "start model", "cosine", 0.5),
        ("start model / euclidean", "start model", "euclidean", 0.5),
        ("Siamese / cosine", "Siamese", "cosine", 0.55),
        ("Triplet / euclidean", "Triplet", "euclidean", 0.45),
    ]:
        for measure in distance_dilemma.MEASURES:
            for k in (1, 10):
                rows.append(
                    dict(
                        setup=setup,
                        architecture=arch,
                        distance=distance,
                        measure=measure,
                        k=k,
                        value=base + k / 100,
                    )
                )
    return pd.DataFrame(rows)


def test_results_grid_and_best_setup():
    table = _long_table()
    grid = distance_dilemma.results_grid(table)
    assert list(grid.columns) == [f"{m}@{k}" for m in distance_dilemma.MEASURES for k in (1, 10)]
    assert grid.loc["Siamese / cosine", "mrr@10"] == pytest.approx(0.65)
    change = distance_dilemma.best_setup(table, "mrr", 10)
    assert change.to_dict() == pytest.approx(
        {"Siamese / cosine": 0.05, "Triplet / euclidean": -0.05}
    )


def test_bootstrap_sentence_sorts_setups_by_their_interval():
    boot = pd.DataFrame(
        {
            "mrr@10 change": [0.05, -0.03, 0.01, -0.02],
            "95% low": [0.02, -0.06, -0.01, -0.04],
            "95% high": [0.08, -0.001, 0.03, 0.0],
        },
        index=["A", "B", "C", "D"],
    )
    assert distance_dilemma.bootstrap_sentence(boot) == (
        "better than the start model beyond chance: A (+0.050); "
        "worse than the start model beyond chance: B (-0.030); "
        "within chance: C (+0.010), D (-0.020)"
    )
    # a group nobody is in is left out
    assert distance_dilemma.bootstrap_sentence(boot.loc[["C"]]) == "within chance: C (+0.010)"


def test_setup_score():
    assert distance_dilemma.setup_score("ce_score", {"similarity": "euclidean"}) == "euclidean"
    assert distance_dilemma.setup_score("triplet", {"distance": "cosine"}) == "cosine"
    assert distance_dilemma.setup_score("triplet", {"distance": "cosine_relu"}) == "cosine"
    with pytest.raises(ValueError, match="no ranking score"):
        distance_dilemma.setup_score("triplet", {"distance": "manhattan"})


# ------------------------------------------------------------------------------ real data
@needs_data
def test_load_dilemma_data_split_is_disjoint_and_consistent():
    from sbert_tutor.data.msmarco import load_bm25_candidates, load_msmarco

    data = distance_dilemma.load_dilemma_data(n_test=50, n_other=0)
    dev = load_msmarco("msmarco-dev-subset")
    ranked = load_bm25_candidates(with_labels=True)
    assert len(data.test.queries) == 50
    assert not set(data.train_queries) & set(data.test.queries)
    assert data.describe()["overlap_queries"] == 0
    assert len(data.train_queries) > 400  # 540 minus the test queries, minus any without negatives
    for qid in data.train_queries:
        assert set(data.positives[qid]) <= {p for p, g in dev.qrels[qid].items() if g >= 1}
        assert not set(data.negatives[qid]) & set(dev.qrels[qid])
        bm25_order = [p for p, _ in ranked[qid]]
        positions = [bm25_order.index(p) for p in data.negatives[qid]]
        assert positions == sorted(positions)
    # every test query keeps its judged passages, so the metrics measure the model, not the gap
    for docs in data.test.qrels.values():
        assert set(docs) <= set(data.test.corpus)
    triplets = distance_dilemma.held_out_triplets(
        data.test, 5, {q: [p for p, _ in v] for q, v in ranked.items()}
    )
    assert len(triplets) == 5
    assert all(q in data.test.queries.values() for q, _, _ in triplets)


# ------------------------------------------------------------------ the runner on a tiny BERT
@pytest.fixture
def tiny_folder(tiny_bert, tmp_path):
    return save_tiny_encoder(tiny_bert, tmp_path / "tiny", normalize=True)


def test_run_dilemma_on_a_tiny_bert(tiny_folder):
    data = _hand_data()
    sets = distance_dilemma.build_training_sets(data, BagEncoder(), negatives_per_query=2)
    config = TrainingConfig(max_steps=2, batch_size=2, show_progress_bar=False, eval_before=False)
    run = distance_dilemma.run_dilemma(tiny_folder, sets, data.test, config, ks=(1, 2))
    assert set(run.records) == set(distance_dilemma.SETUPS)
    assert all(log["steps_done"] == 2 for log in run.logs.values())
    assert run.logs["Siamese / euclidean"]["loss"] == {
        "name": "ce_score",
        "similarity": "euclidean",
    }
    assert run.logs["Triplet / cosine"]["train_data"]["examples"] == 4
    assert run.logs["Siamese / cosine"]["train_data"]["examples"] == 6
    assert run.logs["Triplet / cosine"]["train_data"]["source"].startswith(
        "distance-dilemma triplets: "
    )
    grid = distance_dilemma.results_grid(run.table)
    assert len(grid) == 2 + len(distance_dilemma.SETUPS)
    # the table holds what the metrics module gives for the same encoder's ranking
    encoder = run.encoders["Triplet / euclidean"]
    q = encoder.encode(["tea"])
    docs = list(data.test.corpus)
    d = encoder.encode([data.test.corpus[p] for p in docs])
    dist = np.linalg.norm(q - d, axis=1)
    ref = evaluate_run(
        {"t1": {p: -float(x) for p, x in zip(docs, dist, strict=True)}}, data.test.qrels, ks=(1, 2)
    )
    row = run.table[(run.table["setup"] == "Triplet / euclidean") & (run.table["measure"] == "mrr")]
    assert row.set_index("k")["value"].to_dict() == pytest.approx(
        {1: ref["mrr@1"], 2: ref["mrr@2"]}
    )
    assert set(run.per_query) == set(grid.index) == set(run.runs)
    # the kept run is the ranking the table was computed from (the same distances)
    kept = run.runs["Triplet / euclidean"]["t1"]
    assert sorted(kept, key=kept.get, reverse=True)[:2] == [docs[i] for i in np.argsort(dist)[:2]]
    assert evaluate_run(run.runs["Triplet / euclidean"], data.test.qrels, ks=(1, 2)) == (
        pytest.approx(ref)
    )
    boot = distance_dilemma.bootstrap_vs_start(run, "mrr@2", n_resamples=50)
    assert set(boot.index) == set(distance_dilemma.SETUPS)
    mrr2 = run.table[(run.table["measure"] == "mrr") & (run.table["k"] == 2)].set_index("setup")
    start = mrr2.loc["start model / euclidean", "value"]
    change = mrr2.loc["Triplet / euclidean", "value"] - start
    assert boot.loc["Triplet / euclidean", "mrr@2 change"] == pytest.approx(change)
    assert run.per_query["Triplet / euclidean"]["mrr@2"].mean() == pytest.approx(ref["mrr@2"])
    points, summary = distance_dilemma.triplet_geometry(
        {"start": run.encoders["start model"]}, [("tea", "tea tea", "rain"), ("cat", "cat", "dog")]
    )
    assert len(points) == 6 and set(points["role"]) == {"query", "positive", "negative"}
    assert 0 < summary.loc["start", "PCA variance shown"] <= 1 + 1e-9


def test_bootstrap_changes_hand_examples():
    idx = ["q1", "q2", "q3", "q4"]
    per_query = {
        "base": pd.DataFrame({"mrr@10": [0.5, 1.0, 0.0, 0.25]}, index=idx),
        "shifted": pd.DataFrame({"mrr@10": [0.6, 1.1, 0.1, 0.35]}, index=idx),
        # q1 1.0, q2 0.5, q3 0.0, q4 0.25, stored in reverse query order: matched by id, the
        # changes are +0.5, -0.5, 0, 0 (by position they would be -0.25, -1, +0.5, +0.75)
        "mixed": pd.DataFrame({"mrr@10": [0.25, 0.0, 0.5, 1.0]}, index=idx[::-1]),
    }
    out = distance_dilemma.bootstrap_changes(per_query, "base", n_resamples=500)
    # a constant per-query change: every resample has the same mean, the interval is a point
    assert out.loc["shifted", "mrr@10 change"] == pytest.approx(0.1)
    assert out.loc["shifted", "95% low"] == pytest.approx(0.1)
    assert out.loc["shifted", "95% high"] == pytest.approx(0.1)
    assert out.loc["shifted", "queries better"] == 4
    # +0.5 on q1, -0.5 on q2: mean 0, the interval straddles 0
    assert out.loc["mixed", "mrr@10 change"] == pytest.approx(0.0)
    assert out.loc["mixed", "95% low"] < 0 < out.loc["mixed", "95% high"]
    assert (out.loc["mixed", "queries better"], out.loc["mixed", "queries worse"]) == (1, 1)
    with pytest.raises(KeyError, match="no per-query results"):
        distance_dilemma.bootstrap_changes(per_query, "nope")


def test_target_cosines_and_shift():
    table = distance_dilemma.target_cosines([0.0, 0.5, 1.0])
    assert table["Siamese / cosine"].tolist() == [0.0, 0.5, 1.0]
    assert table["Siamese / euclidean"].tolist() == [0.5, 0.875, 1.0]
    # the euclidean target is the cosine at unit-vector distance 1 - y
    y = 0.3
    cos = table.loc[0.5, "Siamese / euclidean"]
    assert math.sqrt(2 - 2 * cos) == pytest.approx(1 - 0.5)
    assert 1 - (1 - y) ** 2 / 2 == pytest.approx(distance_dilemma.target_cosines([y]).iloc[0, 1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        distance_dilemma.target_cosines([1.2])
    sets = distance_dilemma.build_training_sets(_hand_data(), BagEncoder(), negatives_per_query=2)
    shift = distance_dilemma.target_shift(sets)
    pos = sets.pairs[sets.pairs["label"] == 1]
    probs = 1 / (1 + np.exp(-pos["teacher_logit"]))
    assert shift.loc["positive", "target: Siamese / cosine"] == pytest.approx(probs.mean())
    assert shift.loc["positive", "teacher_cosine"] == pytest.approx(pos["teacher_cosine"].mean())


def test_margin_activity_by_hand():
    # one query, one positive at cosine 0.8 and one negative at cosine 0.2 (teacher cosines)
    pairs = pd.DataFrame(
        {
            "query": ["q", "q"],
            "passage": ["p", "n"],
            "label": [1, 0],
            "teacher_cosine": [0.8, 0.2],
            "teacher_logit": [0.0, 0.0],
        }
    )
    triplets = pd.DataFrame({"query": ["q"], "positive": ["p"], "negative": ["n"]})
    sets = distance_dilemma.TrainingSets(pairs=pairs, triplets=triplets, calibration=(1.0, 0.0))
    table = distance_dilemma.margin_activity(
        sets, [("cosine", 0.5), ("cosine", 5.0), ("euclidean", 1.0)]
    )
    # cosine: (1 - 0.8) - (1 - 0.2) + 0.5 = -0.1 -> inactive; with 5: 4.4, never below 3
    assert table.loc[("cosine", 0.5), "active hinges %"] == 0.0
    assert table.loc[("cosine", 5.0), "mean loss now"] == pytest.approx(4.4)
    assert table.loc[("cosine", 5.0), "lowest reachable loss"] == 3.0
    # euclidean on unit vectors: sqrt(0.4) - sqrt(1.6) + 1 = 1 - sqrt(0.4) = 0.3675
    assert table.loc[("euclidean", 1.0), "mean loss now"] == pytest.approx(1 - math.sqrt(0.4))
    assert table.loc[("euclidean", 1.0), "lowest reachable loss"] == 0.0
    assert table.loc[("cosine", 0.5), "used by"] == "this chapter"
    assert table.loc[("cosine", 5.0), "used by"] == ""
    with pytest.raises(ValueError, match="distance"):
        distance_dilemma.margin_activity(sets, [("manhattan", 1.0)])


def test_margin_activity_with_the_studys_thresholded_cosine():
    # one positive at cosine 0.8; negatives at cosine 0.2 and -0.5 (past orthogonal)
    pairs = pd.DataFrame(
        {
            "query": ["q", "q", "q"],
            "passage": ["p", "n", "m"],
            "label": [1, 0, 0],
            "teacher_cosine": [0.8, 0.2, -0.5],
            "teacher_logit": [0.0, 0.0, 0.0],
        }
    )
    triplets = pd.DataFrame({"query": ["q", "q"], "positive": ["p", "p"], "negative": ["n", "m"]})
    sets = distance_dilemma.TrainingSets(pairs=pairs, triplets=triplets, calibration=(1.0, 0.0))
    table = distance_dilemma.margin_activity(
        sets, [("cosine_relu", 0.5), ("cosine_relu", 1.0), ("cosine_relu", 5.0), ("cosine", 5.0)]
    )
    # 1 - ReLU(cos): gaps ReLU(c_n) - ReLU(c_p) = 0.2 - 0.8 = -0.6 and 0 - 0.8 = -0.8
    assert table.loc[("cosine_relu", 0.5), "active hinges %"] == 0.0
    # margin 1: 0.4 and 0.2, both active; the argument is never below 1 - 1 = 0
    assert table.loc[("cosine_relu", 1.0), "active hinges %"] == 100.0
    assert table.loc[("cosine_relu", 1.0), "mean loss now"] == pytest.approx(0.3)
    assert table.loc[("cosine_relu", 1.0), "lowest reachable loss"] == 0.0
    # margin 5: 4.4 and 4.2, never below 4; 1 - cos: 4.4 and 3.7, never below 3
    assert table.loc[("cosine_relu", 5.0), "mean loss now"] == pytest.approx(4.3)
    assert table.loc[("cosine_relu", 5.0), "lowest reachable loss"] == 4.0
    assert table.loc[("cosine", 5.0), "mean loss now"] == pytest.approx(4.05)
    assert table.loc[("cosine", 5.0), "lowest reachable loss"] == 3.0
    assert table.loc[("cosine_relu", 5.0), "used by"] == "the study"
    assert table.loc[("cosine_relu", 1.0), "used by"] == "the study"


def test_study_margins_are_the_papers():
    from sbert_tutor.book.chapters.distance_dilemma import DistanceDilemmaSizes
    from sbert_tutor.book.published import DISTANCE_DILEMMA
    from sbert_tutor.book.sizes import sizes_for

    margins = sorted(opts["margin"] for _, opts in distance_dilemma.STUDY_MARGIN_SETUPS.values())
    assert margins == [DISTANCE_DILEMMA["triplet cosine margin, retried"], 5.0, 5.0]
    # the study's cosine distance is thresholded by a ReLU (the note under its eq. 1, for eq. 4)
    distances = sorted(
        opts["distance"] for _, opts in distance_dilemma.STUDY_MARGIN_SETUPS.values()
    )
    assert distances == ["cosine_relu", "cosine_relu", "euclidean"]
    assert DISTANCE_DILEMMA["triplet margin"] == 5.0
    assert not sizes_for(DistanceDilemmaSizes, "quick").study_margins
    assert sizes_for(DistanceDilemmaSizes, "paper").study_margins


# ------------------------------------------------------------------------------ Platt scaling
def _platt_objective(w, c, y):
    n_pos, n_neg = (y == 1).sum(), (y == 0).sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    z = w[0] * c + w[1]
    # cross-entropy with soft targets, written with logaddexp for stability
    return float(np.sum(t * np.logaddexp(0, -z) + (1 - t) * np.logaddexp(0, z)))


@pytest.mark.parametrize("separable", [False, True])
def test_platt_scale_matches_a_generic_optimiser(separable):
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.2).astype(int)
    c = rng.normal(0.2, 0.15, 300) + (0.6 if separable else 0.15) * y
    if separable:
        c[y == 1] = np.maximum(c[y == 1], c[y == 0].max() + 0.01)
    a, b = platt_scale(c, y)
    ref = minimize(
        _platt_objective,
        x0=[0.0, 0.0],
        args=(c, y),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000},
    )
    # ours is at least as good a minimum as the generic optimiser's, and at the same place
    assert _platt_objective([a, b], c, y) <= ref.fun + 1e-9
    assert a == pytest.approx(ref.x[0], rel=1e-4, abs=1e-4)
    assert b == pytest.approx(ref.x[1], rel=1e-4, abs=1e-4)
    assert a > 0  # higher teacher cosine -> more likely relevant
    assert math.isfinite(a)


def test_platt_scale_symmetric_hand_example():
    # two points per class, mirrored around c = 0 with equal counts: b = 0 by symmetry
    a, b = platt_scale([-1.0, -0.5, 0.5, 1.0], [0, 0, 1, 1])
    assert b == pytest.approx(0.0, abs=1e-12)
    assert a > 0


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        ([0.1, 0.2], [1], "equal-length"),
        ([0.1, float("nan")], [1, 0], "NaN"),
        ([0.1, 0.2], [1, 2], "0 or 1"),
        ([0.1, 0.2], [1, 1], "both classes"),
    ],
)
def test_platt_scale_errors(scores, labels, match):
    with pytest.raises(ValueError, match=match):
        platt_scale(scores, labels)
