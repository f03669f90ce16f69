"""sbert_tutor.metrics against trec_eval (through ir_measures / pytrec_eval) and by hand."""

from __future__ import annotations

import doctest
import math
import random

import pytest

from sbert_tutor import metrics
from sbert_tutor.metrics import (
    accuracy_at_k,
    average_precision,
    evaluate_run,
    evaluate_run_per_query,
    idcg_at_k,
    ndcg_at_k,
    precision_at_k,
    rank_documents,
    recall_at_k,
    reciprocal_rank_at_k,
    run_from_topk,
)

KS = (1, 3, 5, 10, 20, 50)  # rankings have at most 30 documents: 50 is always beyond the end


def random_collection(seed: int, n_queries: int = 300):
    """Graded qrels (0-3) and a run with every awkward case trec_eval conventions decide.

    - many tied scores (scores drawn from 5 values), ids whose string order differs from their
      numeric order ("d9" > "d10"), so the docid tie-break matters;
    - queries whose judged documents are all grade 0, and queries with empty judgements;
    - queries with relevant documents that the run misses, or for which it retrieved nothing;
    - retrieved documents missing from the qrels; run queries missing from the qrels;
    - rankings shorter than most cutoffs.
    """
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        pool = [f"d{j}" for j in range(40)]
        judged = rng.sample(pool, rng.randint(0, 12))
        kind = rng.random()
        if kind < 0.1:
            qrels[qid] = dict.fromkeys(judged, 0)  # judged, nothing relevant
        else:
            qrels[qid] = {d: rng.choice((0, 0, 1, 1, 2, 3)) for d in judged}
        kind = rng.random()
        if kind < 0.08:
            continue  # query missing from the run
        if kind < 0.12:
            run[qid] = {}  # present, nothing retrieved
            continue
        retrieved = rng.sample(pool, rng.randint(1, 30))
        if rng.random() < 0.7:
            run[qid] = {d: rng.randint(0, 4) / 4 for d in retrieved}  # heavy ties
        else:
            run[qid] = {d: rng.uniform(-1, 1) for d in retrieved}
    for q in range(n_queries, n_queries + 20):  # run-only queries: ignored by everyone
        run[f"q{q}"] = {f"d{j}": rng.random() for j in range(5)}
    return qrels, run


def reference(qrels, run, ks, threshold):
    """trec_eval's numbers via ir_measures' pytrec_eval provider, like-for-like with our conventions.

    - queries without a relevant document are dropped from the qrels (our convention);
    - ir_measures averages over all qrels queries, a query missing from the run counting 0
      (= trec_eval -c);
    - ``rel=threshold`` is trec_eval's -l relevance level (nDCG ignores it, like ours);
    - RR@k: ir_measures routes RR@k to its msmarco provider, which breaks ties differently from
      trec_eval, so RR@k is derived from trec_eval's uncut recip_rank (1/r) instead:
      RR@k = 1/r if r <= k else 0.
    """
    import ir_measures
    import pytrec_eval
    from ir_measures import AP, RR, P, R, Success, nDCG

    kept = {q: g for q, g in qrels.items() if any(v >= threshold for v in g.values())}
    measures = {}
    for k in ks:
        measures[f"precision@{k}"] = P(rel=threshold) @ k
        measures[f"accuracy@{k}"] = Success(rel=threshold) @ k
        measures[f"recall@{k}"] = R(rel=threshold) @ k
        measures[f"ndcg@{k}"] = nDCG @ k
        measures[f"map@{k}"] = AP(rel=threshold) @ k
    measures["map"] = AP(rel=threshold)
    per_query: dict[str, dict[str, float]] = {q: {} for q in kept}
    names = {m: name for name, m in measures.items()}
    for metric in ir_measures.pytrec_eval.iter_calc(list(measures.values()), kept, run):
        per_query[metric.query_id][names[metric.measure]] = metric.value

    rr = pytrec_eval.RelevanceEvaluator(kept, {"recip_rank"}, relevance_level=threshold)
    rr_values = {q: v["recip_rank"] for q, v in rr.evaluate(run).items()}
    for q in kept:
        value = rr_values.get(q, 0.0)
        rank = round(1 / value) if value > 0 else None
        for k in ks:
            per_query[q][f"mrr@{k}"] = 1 / rank if rank is not None and rank <= k else 0.0
    # cross-check the aggregation path too
    means = ir_measures.pytrec_eval.calc_aggregate([RR(rel=threshold)], kept, run)
    assert means[RR(rel=threshold)] == pytest.approx(sum(rr_values.values()) / len(kept), abs=1e-12)
    return per_query


@pytest.mark.parametrize(("seed", "threshold"), [(0, 1), (1, 2), (2, 3)])
def test_evaluate_run_matches_trec_eval(seed, threshold):
    qrels, run = random_collection(seed)
    ref = reference(qrels, run, KS, threshold)
    ours = evaluate_run_per_query(run, qrels, ks=KS, relevance_threshold=threshold)

    assert list(ours) == list(ref)  # same queries, in qrels order
    # the collection does exercise every convention
    assert 100 < len(ours) < len(qrels)  # some queries have no relevant document
    assert any(q not in run for q in ours) and any(run.get(q) == {} for q in ours)
    assert any(len(set(run.get(q, {}).values())) < len(run.get(q, {})) for q in ours)  # ties
    for q in ref:
        assert set(ours[q]) == set(ref[q])
        for name, value in ref[q].items():
            assert ours[q][name] == pytest.approx(value, abs=1e-9), (q, name)

    means = evaluate_run(run, qrels, ks=KS, relevance_threshold=threshold)
    assert list(means) == [f"{m}@{k}" for m in metrics.METRIC_NAMES for k in KS] + ["map"]
    for name, value in means.items():
        expected = sum(ref[q][name] for q in ref) / len(ref)
        assert value == pytest.approx(expected, abs=1e-9), name
        assert 0.0 <= value <= 1.0


def test_ir_measures_aggregate_agrees_on_default_options():
    """The README-level call (ir_measures.calc_aggregate) gives our means on the default options."""
    import ir_measures
    from ir_measures import AP, P, R, Success, nDCG

    qrels, run = random_collection(seed=7)
    kept = {q: g for q, g in qrels.items() if any(v >= 1 for v in g.values())}
    ours = evaluate_run(run, qrels, ks=(1, 10, 50))
    ref = ir_measures.calc_aggregate(
        [P @ 10, R @ 50, Success @ 1, nDCG @ 10, AP @ 10, AP], kept, run
    )
    assert ours["precision@10"] == pytest.approx(ref[P @ 10], abs=1e-9)
    assert ours["recall@50"] == pytest.approx(ref[R @ 50], abs=1e-9)
    assert ours["accuracy@1"] == pytest.approx(ref[Success @ 1], abs=1e-9)
    assert ours["ndcg@10"] == pytest.approx(ref[nDCG @ 10], abs=1e-9)
    assert ours["map@10"] == pytest.approx(ref[AP @ 10], abs=1e-9)
    assert ours["map"] == pytest.approx(ref[AP], abs=1e-9)


def test_per_query_functions_agree_with_evaluate_run():
    qrels, run = random_collection(seed=3, n_queries=120)
    per_query = evaluate_run_per_query(run, qrels, ks=KS, relevance_threshold=2)
    for q, values in per_query.items():
        ranking = rank_documents(run.get(q, {}))
        grades = qrels[q]
        for k in KS:
            assert precision_at_k(ranking, grades, k, 2) == pytest.approx(values[f"precision@{k}"])
            assert recall_at_k(ranking, grades, k, 2) == pytest.approx(values[f"recall@{k}"])
            assert accuracy_at_k(ranking, grades, k, 2) == values[f"accuracy@{k}"]
            assert reciprocal_rank_at_k(ranking, grades, k, 2) == pytest.approx(values[f"mrr@{k}"])
            assert ndcg_at_k(ranking, grades, k) == pytest.approx(values[f"ndcg@{k}"])
            assert average_precision(ranking, grades, k, 2) == pytest.approx(values[f"map@{k}"])
        assert average_precision(ranking, grades, None, 2) == pytest.approx(values["map"])


def test_negative_grades_and_uncut_ndcg_match_trec_eval():
    import pytrec_eval

    qrels = {"q": {"spam": -2, "a": 1, "b": 3, "c": 0}}
    run = {"q": {"spam": 9.0, "x": 8.0, "a": 7.0, "c": 6.0, "b": 5.0}}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "ndcg_cut_3"}).evaluate(run)["q"]
    ranking = rank_documents(run["q"])
    assert ndcg_at_k(ranking, qrels["q"], None) == pytest.approx(ref["ndcg"], abs=1e-12)
    assert ndcg_at_k(ranking, qrels["q"], 3) == pytest.approx(ref["ndcg_cut_3"], abs=1e-12)
    # by hand: the -2 counts 0, so DCG@3 = 1/log2(4) and IDCG@3 = 3 + 1/log2(3)
    assert ndcg_at_k(ranking, qrels["q"], 3) == pytest.approx(0.5 / (3 + 1 / math.log2(3)))


# ---------------------------------------------------------------------------------------------
# A hand-worked example (the one the book's evaluation chapter walks through)
# ---------------------------------------------------------------------------------------------
#
# q1 judgements: d1=3, d2=0, d3=1, d4=2, d9=1 (d9 is never retrieved)
# q1 run: d5 .9, d1 .8, d3 .8, d2 .5, d4 .1
#   d1 and d3 tie at .8 -> trec_eval puts the larger id first: d3 before d1.
#   ranking: d5 d3 d1 d2 d4;  relevant (grade >= 1): 0 1 1 0 1;  R = 4 (d1, d3, d4, d9)
#   k=1 : nothing relevant at rank 1: P = R = RR = AP = nDCG = 0
#   k=3 : P@3 = 2/3; Recall@3 = 2/4; Accuracy@3 = 1; RR@3 = 1/2
#         AP@3 = (P@2 + P@3)/R = (1/2 + 2/3)/4 = 7/24
#         DCG@3 = 0/log2(2) + 1/log2(3) + 3/log2(4) = 1/log2(3) + 3/2
#         IDCG@3: grades sorted 3,2,1,1 -> 3 + 2/log2(3) + 1/log2(4)
#   k=10 (longer than the 5-document ranking): P@10 = 3/10 (divided by 10, not 5)
#         Recall@10 = 3/4; AP@10 = AP = (1/2 + 2/3 + 3/5)/4 = 53/120
#         DCG@10 = DCG@3 + 0/log2(5) + 2/log2(6);  IDCG@10 = IDCG@3 + 1/log2(5)
# q2 judgements: a=0 -> no relevant document: left out of the means
# q3 judgements: x=1, but q3 is not in the run -> every measure 0, and averaged
# q4 is in the run only -> ignored
# Means over {q1, q3} are q1's values halved.
HAND_QRELS = {
    "q1": {"d1": 3, "d2": 0, "d3": 1, "d4": 2, "d9": 1},
    "q2": {"a": 0},
    "q3": {"x": 1},
}
HAND_RUN = {
    "q1": {"d5": 0.9, "d1": 0.8, "d3": 0.8, "d2": 0.5, "d4": 0.1},
    "q2": {"a": 1.0},
    "q4": {"y": 1.0},
}
DCG3 = 1 / math.log2(3) + 3 / 2
IDCG3 = 3 + 2 / math.log2(3) + 1 / 2
DCG10 = DCG3 + 2 / math.log2(6)
IDCG10 = IDCG3 + 1 / math.log2(5)


def test_hand_worked_example():
    assert rank_documents(HAND_RUN["q1"]) == ["d5", "d3", "d1", "d2", "d4"]
    q1 = {
        "precision@1": 0, "accuracy@1": 0, "recall@1": 0, "mrr@1": 0, "ndcg@1": 0, "map@1": 0,
        "precision@3": 2 / 3, "accuracy@3": 1, "recall@3": 2 / 4, "mrr@3": 1 / 2,
        "ndcg@3": DCG3 / IDCG3, "map@3": 7 / 24,
        "precision@10": 3 / 10, "accuracy@10": 1, "recall@10": 3 / 4, "mrr@10": 1 / 2,
        "ndcg@10": DCG10 / IDCG10, "map@10": 53 / 120,
        "map": 53 / 120,
    }  # fmt: skip
    per_query = evaluate_run_per_query(HAND_RUN, HAND_QRELS, ks=(1, 3, 10))
    assert list(per_query) == ["q1", "q3"]
    assert per_query["q1"] == pytest.approx(q1, abs=1e-12)
    assert set(per_query["q3"].values()) == {0.0}
    means = evaluate_run(HAND_RUN, HAND_QRELS, ks=(1, 3, 10))
    assert means == pytest.approx({k: v / 2 for k, v in q1.items()}, abs=1e-12)
    assert means["ndcg@10"] == pytest.approx(0.5593 / 2, abs=1e-4)  # the decimal, for the book


def test_hand_worked_example_threshold_2():
    # relevant now means grade >= 2: d1 (rank 3) and d4 (rank 5), R = 2; q3 (x=1) drops out.
    means = evaluate_run(HAND_RUN, HAND_QRELS, ks=(3, 10), relevance_threshold=2)
    assert means["precision@3"] == pytest.approx(1 / 3)
    assert means["mrr@10"] == pytest.approx(1 / 3)
    assert means["recall@3"] == pytest.approx(1 / 2)
    assert means["map"] == pytest.approx((1 / 3 + 2 / 5) / 2)
    assert means["ndcg@10"] == pytest.approx(DCG10 / IDCG10)  # nDCG ignores the threshold


def test_idcg_all_relevant_variant():
    ideal10 = sum(1 / math.log2(i + 1) for i in range(1, 11))  # 4.5436: ten relevant positions
    assert idcg_at_k({"a": 1}, 10, idcg="all_relevant") == pytest.approx(ideal10)
    # one relevant passage ranked first: perfect for trec_eval, 1/4.5436 for the variant
    assert ndcg_at_k(["a", "b"], {"a": 1}, 10) == 1.0
    assert ndcg_at_k(["a", "b"], {"a": 1}, 10, idcg="all_relevant") == pytest.approx(1 / ideal10)
    assert ndcg_at_k(["a", "b"], {"a": 1}, 10, idcg="all_relevant") == pytest.approx(
        0.2201, abs=1e-4
    )
    # graded, q1 of the hand example: sorted grades 3,2,1,1 then six gain-1 fillers
    ideal = IDCG10 + sum(1 / math.log2(i + 1) for i in range(5, 11))
    ranking = rank_documents(HAND_RUN["q1"])
    assert ndcg_at_k(ranking, HAND_QRELS["q1"], 10, idcg="all_relevant") == pytest.approx(
        DCG10 / ideal
    )
    # with at least k positive grades both conventions agree
    many = {f"d{i}": 1 + i % 3 for i in range(12)}
    ranking = [f"d{i}" for i in range(12)]
    assert ndcg_at_k(ranking, many, 10, idcg="all_relevant") == pytest.approx(
        ndcg_at_k(ranking, many, 10)
    )
    with pytest.raises(ValueError, match="idcg"):
        ndcg_at_k(ranking, many, 10, idcg="ideal")
    with pytest.raises(ValueError, match="cutoff"):
        ndcg_at_k(ranking, many, None, idcg="all_relevant")


def test_per_query_functions_edge_cases():
    # a set of ids means binary judgements
    assert precision_at_k(["a", "b"], {"b"}, 2) == 0.5
    assert recall_at_k(["a", "b"], set(), 2) == 0.0
    assert average_precision(["a"], {"a": 0}) == 0.0
    assert ndcg_at_k(["a"], {"a": 0}, 5) == 0.0
    assert reciprocal_rank_at_k([], {"a": 1}) == 0.0
    with pytest.raises(ValueError, match="more than once"):
        precision_at_k(["a", "a"], {"a": 1}, 2)
    with pytest.raises(ValueError, match="positive integer"):
        precision_at_k(["a"], {"a": 1}, 0)
    with pytest.raises(ValueError, match="NaN"):
        rank_documents({"a": float("nan")})
    with pytest.raises(ValueError, match="nothing to average"):
        evaluate_run({"q": {"a": 1.0}}, {"q": {"a": 0}})


def test_run_from_topk():
    import numpy as np
    import torch

    scores = np.array([[0.9, 0.5, 0.1], [0.7, 0.7, -np.inf]], dtype=np.float32)
    indices = np.array([[2, 0, 1], [1, 0, -1]])
    run = run_from_topk(["q1", 7], ["a", "b", "c"], scores, indices)
    assert run == {"q1": {"c": pytest.approx(0.9), "a": 0.5, "b": pytest.approx(0.1)},
                   "7": {"b": pytest.approx(0.7), "a": pytest.approx(0.7)}}  # fmt: skip
    assert (
        run_from_topk(
            ["q1", 7], ["a", "b", "c"], torch.from_numpy(scores), torch.from_numpy(indices)
        )
        == run
    )
    with pytest.raises(ValueError, match="same shape"):
        run_from_topk(["q"], ["a"], scores[:1], indices[:1, :2])
    with pytest.raises(ValueError, match="out of range"):
        run_from_topk(["q1", "q2"], ["a", "b"], scores, indices)


def test_docstring_examples():
    result = doctest.testmod(metrics)
    assert result.attempted > 10 and result.failed == 0


# ------------------------------------------------------------------ runs that cannot be scored


def test_empty_run_is_an_error():
    qrels = {"q1": {"a": 1}}
    for run in ({}, {"q1": {}}):
        with pytest.raises(ValueError, match=r"the run is empty .* nothing to score"):
            evaluate_run(run, qrels)


def test_int_ids_against_str_ids_name_the_mismatch():
    run = {1: {"a": 0.9}, 2: {"b": 0.5}}
    qrels = {"1": {"a": 1}, "2": {"b": 1}}
    with pytest.raises(
        ValueError,
        match=r"share no judged query: run query ids \[1, 2\] \(int\), judged qrels query ids "
        r"\['1', '2'\] \(str\)\. The ids match once written as strings",
    ):
        evaluate_run(run, qrels)


def test_disjoint_ids_name_both_sides():
    with pytest.raises(ValueError, match=r"run query ids \['x1'\] \(str\), judged .*\['q1'\]"):
        evaluate_run({"x1": {"a": 1.0}}, {"q1": {"a": 1}, "q2": {"b": 0}})


def test_partial_overlap_is_reported_and_counted_zero():
    from sbert_tutor.metrics import MissingQueriesWarning

    run = {"q1": {"a": 1.0}}
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 0}}
    with pytest.warns(
        MissingQueriesWarning, match=r"2 of 3 judged queries are not in the run"
    ) as w:
        means = evaluate_run(run, qrels, ks=(1,))
    assert w[0].filename == __file__  # points at the caller, not inside the library
    assert means["mrr@1"] == pytest.approx(1 / 3)  # trec_eval -c: missing queries score 0


# ------------------------------------------------------------------ ids that repeat


def test_run_from_topk_refuses_a_repeated_document_id():
    """The issue's case: pA twice in the corpus would keep pA's lower score (0.7, not 0.9)."""
    with pytest.raises(ValueError, match=r"doc_ids repeats the id 'pA' at positions 0 and 2"):
        run_from_topk(["q1"], ["pA", "pB", "pA"], [[0.9, 0.8, 0.7]], [[0, 1, 2]])


def test_run_from_topk_refuses_a_repeated_query_id():
    """Two rows with one query id would be merged into one query."""
    with pytest.raises(ValueError, match=r"query_ids repeats the id 'q1' at positions 0 and 1"):
        run_from_topk(["q1", "q1"], ["a", "b"], [[0.9], [0.8]], [[0], [1]])
    with pytest.raises(ValueError, match=r"query_ids repeats the id 7 at positions 0 and 2"):
        run_from_topk([7, 8, 7], ["a", "b"], [[0.9], [0.8], [0.1]], [[0], [1], [1]])


def test_run_from_topk_refuses_ids_that_are_one_string():
    """Ids are compared as given, so 1 and "1" are two ids; the run keys them by str(), where they
    would become one: refused, naming both."""
    with pytest.raises(
        ValueError, match=r"query_ids\[0\] = 1 and query_ids\[1\] = '1' are different ids"
    ):
        run_from_topk([1, "1"], ["a", "b"], [[0.9], [0.8]], [[0], [1]])
    with pytest.raises(ValueError, match=r"doc_ids\[0\] = 10 and doc_ids\[1\] = '10'"):
        run_from_topk(["q"], [10, "10"], [[0.9, 0.8]], [[0, 1]])
    # distinct as strings: mixed types are fine
    assert run_from_topk([1, "2"], [10, "11"], [[0.9], [0.8]], [[0], [1]]) == {
        "1": {"10": pytest.approx(0.9)},
        "2": {"11": pytest.approx(0.8)},
    }


def test_run_from_topk_refuses_a_row_that_names_a_document_twice():
    with pytest.raises(ValueError, match=r"query 'q1' hold corpus position 1 \(doc id 'b'\) twice"):
        run_from_topk(["q1"], ["a", "b"], [[0.9, 0.8]], [[1, 1]])


@pytest.mark.filterwarnings("ignore::sbert_tutor.metrics.MissingQueriesWarning")
def test_qrels_as_sets_are_relevance_one_as_in_trec_eval():
    """sentence-transformers' qrels form {qid: {pid, ...}}: every listed id is relevant with grade
    1, which is what trec_eval (via ir_measures) computes on the same qrels written with grade 1."""
    qrels_graded, run = random_collection(5, n_queries=120)
    as_sets = {q: {d for d, g in docs.items() if g >= 1} for q, docs in qrels_graded.items()}
    as_ones = {q: dict.fromkeys(docs, 1) for q, docs in as_sets.items()}
    ref = reference(as_ones, run, KS, 1)
    ours = evaluate_run_per_query(run, as_sets, ks=KS)
    assert list(ours) == list(ref) and len(ours) > 50
    for q in ref:
        for name, value in ref[q].items():
            assert ours[q][name] == pytest.approx(value, abs=1e-9), (q, name)
    assert evaluate_run(run, as_sets, ks=KS) == evaluate_run(run, as_ones, ks=KS)
    lists = {q: sorted(docs) for q, docs in as_sets.items()}
    assert evaluate_run(run, lists, ks=KS) == evaluate_run(run, as_ones, ks=KS)


def test_qrels_as_a_list_may_not_repeat_an_id():
    with pytest.raises(ValueError, match=r"relevant docids of query 'q1' repeats the id 'a'"):
        evaluate_run({"q1": {"a": 1.0}}, {"q1": ["a", "b", "a"]})
    with pytest.raises(TypeError, match=r"judgements of query 'q1' must be .* not int"):
        evaluate_run({"q1": {"a": 1.0}}, {"q1": 3})
