"""evaluate_sts against sentence-transformers' EmbeddingSimilarityEvaluator, and the aggregations."""

from __future__ import annotations

import numpy as np
import pytest

from sbert_tutor.data import load_sts
from sbert_tutor.data.sts import STSData
from sbert_tutor.evaluation.sts import evaluate_sts, parse_tasks, score_pairs, sts_results_table
from tests.conftest import needs_data


@needs_data
@pytest.mark.parametrize("task", ["stsb", "sts16"])
def test_matches_embedding_similarity_evaluator(minilm, st_minilm, task):
    from sentence_transformers.evaluation import EmbeddingSimilarityEvaluator

    data = load_sts(task)
    result = evaluate_sts(minilm, tasks=task)
    ref = EmbeddingSimilarityEvaluator(
        data.sentences1, data.sentences2, data.scores.tolist(), name="x"
    )(st_minilm)
    row = result.table.iloc[0]
    assert row["n"] == len(data)
    assert row["spearman"] == pytest.approx(100 * ref["x_spearman_cosine"], abs=0.01)
    assert row["pearson"] == pytest.approx(100 * ref["x_pearson_cosine"], abs=0.01)
    assert result.aggregation == "all" and "all" in result.note
    assert repr(result) == repr(result.table)  # a notebook cell shows the table
    prov = result.provenance
    assert prov["model"]["pooling"] == "mean" and all(
        len(h) == 64 for h in prov["data_files"].values()
    )


@needs_data
def test_own_pairs_match_embedding_similarity_evaluator(minilm, st_minilm):
    """200 real STSb test pairs given as the user's own, in both forms sentence-transformers'
    evaluator users have them: the correlations are the evaluator's (x100)."""
    from sentence_transformers.evaluation import EmbeddingSimilarityEvaluator

    stsb = load_sts("stsb", "test")
    s1, s2, gold = stsb.sentences1[:200], stsb.sentences2[:200], stsb.scores[:200].tolist()
    ref = EmbeddingSimilarityEvaluator(s1, s2, gold, name="x")(st_minilm)
    as_tuples = evaluate_sts(minilm, pairs=list(zip(s1, s2, gold, strict=True)))
    as_lists = evaluate_sts(minilm, sentences1=s1, sentences2=s2, scores=np.array(gold))
    for result in (as_tuples, as_lists):
        assert len(result.table) == 1
        row = result.table.iloc[0]
        assert (row["task"], row["n"]) == ("pairs", 200)
        assert row["spearman"] / 100 == pytest.approx(ref["x_spearman_cosine"], abs=1e-6)
        assert row["pearson"] / 100 == pytest.approx(ref["x_pearson_cosine"], abs=1e-6)
        prov = result.provenance
        assert prov["data"] == "the user's own pairs (200 pairs)"
        assert prov["data_sources"] == {"pairs": "the user's own pairs (200 pairs)"}
        assert prov["data_files"] == {} and "split" not in prov
        assert prov["model"]["name"] == minilm.name


def test_own_pairs_are_checked():
    class Lengths:
        def encode(self, sentences, *, batch_size=64, show_progress_bar=None):
            return np.array([[len(s), 1.0] for s in sentences])

    good = [("a", "bb", 1.0), ("ccc", "d", 2.0), ("ee", "fff", 0.5)]
    data = STSData.from_pairs(good, name="mine")
    assert evaluate_sts(Lengths(), pairs=data).table.iloc[0]["task"] == "mine"
    with pytest.raises(ValueError, match=r"scores\[1\] is nan: gold scores must be finite"):
        evaluate_sts(Lengths(), pairs=[("a", "b", 1.0), ("c", "d", float("nan"))])
    with pytest.raises(ValueError, match=r"pairs\[1\] is \('c', 'd'\): each pair must be"):
        evaluate_sts(Lengths(), pairs=[("a", "b", 1.0), ("c", "d")])
    with pytest.raises(ValueError, match="length mismatch: sentences1=2, sentences2=1"):
        evaluate_sts(Lengths(), sentences1=["a", "b"], sentences2=["c"], scores=[1, 2])
    with pytest.raises(ValueError, match=r"sentences2\[0\] is an empty string"):
        evaluate_sts(Lengths(), sentences1=["a"], sentences2=[" "], scores=[1])
    with pytest.raises(ValueError, match="all three of sentences1=, sentences2=, scores="):
        evaluate_sts(Lengths(), sentences1=["a"], sentences2=["b"])
    with pytest.raises(ValueError, match="not both"):
        evaluate_sts(Lengths(), tasks="stsb", pairs=good)
    with pytest.raises(ValueError, match="not both"):
        evaluate_sts(Lengths(), pairs=good, scores=[1.0, 2.0, 3.0])


def _toy(name="sts12"):
    # Subset A: predictions rank the 3 pairs exactly as gold -> rho = 100.
    # Subset B: predictions rank the 2 pairs in reverse -> rho = -100.
    # mean = (100 - 100) / 2 = 0;  wmean = (3 * 100 + 2 * -100) / 5 = 20.
    data = STSData(
        name=name,
        split="test",
        sentences1=list("abcde"),
        sentences2=list("fghij"),
        scores=np.array([1.0, 2.0, 3.0, 1.0, 2.0]),
        subsets=["A", "A", "A", "B", "B"],
        source="toy",
    )
    predicted = np.array([0.1, 0.2, 0.3, 0.9, 0.8])
    return data, predicted


def test_aggregations_hand_worked():
    data, predicted = _toy()
    block = score_pairs(data, predicted)
    assert block["subsets"]["A"] == {
        "spearman": pytest.approx(100.0),
        "pearson": pytest.approx(100.0),
        "n": 3,
    }
    assert block["subsets"]["B"]["spearman"] == pytest.approx(-100.0)
    assert block["spearman"]["mean"] == pytest.approx(0.0)
    assert block["spearman"]["wmean"] == pytest.approx(20.0)
    # all: one correlation over the 5 concatenated pairs. Gold ranks (ties averaged): 1.5 3.5 5 1.5 3.5;
    # predicted ranks 1 2 3 5 4 -> Spearman = Pearson of the ranks, computed by hand here:
    g = np.array([1.5, 3.5, 5, 1.5, 3.5]) - 3
    p = np.array([1, 2, 3, 5, 4]) - 3
    assert block["spearman"]["all"] == pytest.approx(100 * (g @ p) / np.sqrt((g @ g) * (p @ p)))


def test_single_set_tasks_repeat_the_value():
    data, predicted = _toy("stsb")
    block = score_pairs(data, predicted)
    assert block["spearman"]["all"] == block["spearman"]["mean"] == block["spearman"]["wmean"]


def test_table_states_aggregation_and_rejects_unknown():
    data, predicted = _toy()
    table = sts_results_table({"sts12": score_pairs(data, predicted)}, aggregation="wmean")
    assert list(table["aggregation"]) == ["wmean"] and table["spearman"][0] == pytest.approx(20.0)
    with pytest.raises(ValueError, match="all, mean, wmean"):
        sts_results_table({}, aggregation="median")


def test_bad_inputs():
    with pytest.raises(ValueError, match="valid names"):
        parse_tasks("sts12,sts99")
    with pytest.raises(ValueError, match="length mismatch"):
        STSData("stsb", "test", ["a", "b"], ["c"], np.array([1.0, 2.0]), ["x", "x"], "toy")
    with pytest.raises(ValueError, match=r"scores\[1\] is nan: gold scores must be finite"):
        STSData("stsb", "test", ["a", "b"], ["c", "d"], np.array([1.0, np.nan]), ["x", "x"], "toy")
    assert parse_tasks("all") == ["sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr"]
    assert parse_tasks(["STSb", "stsb", "SICK-R"]) == ["stsb", "sickr"]
