"""Chapter 16's sweep (the page's and ``benchmarks/ann_index.py``'s) against exact search, the
timing rounds, and the fastest setting at recall@10 >= 0.95."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("faiss")

from sbert_tutor.book.chapters.approximate_indexes import (  # noqa: E402
    fastest_at_recall,
    index_plan,
    interleaved_rounds,
    results_frame,
    sweep,
)


def rows_by_hand():
    def row(family, kind, recall, qps, nbytes, knobs):
        return {
            "family": family,
            "kind": kind,
            "build_knobs": {},
            "search_knobs": knobs,
            "recall_at_10": recall,
            "qps": qps,
            "speedup_vs_flat": qps / 100.0,
            "nbytes": nbytes,
            "build_seconds": 1.0,
        }

    return [
        row("Flat (exact)", "flat", 1.0, 100.0, 4000, {}),
        row("HNSW M=16", "hnsw", 0.90, 3000.0, 5000, {"efSearch": 16}),
        row("HNSW M=16", "hnsw", 0.96, 1500.0, 5000, {"efSearch": 64}),
        row("IVF-Flat", "ivf_flat", 0.97, 900.0, 4200, {"nprobe": 8}),
        row("IVF-PQ m=8", "ivf_pq", 0.50, 5000.0, 400, {"nprobe": 8}),
    ]


def test_the_fastest_setting_above_the_recall_threshold_is_taken():
    check = fastest_at_recall(rows_by_hand())
    # 0.96 at 15x flat beats 0.97 at 9x; 0.90 and 0.50 are below the recall threshold
    assert check["index"] == "HNSW M=16 (efSearch=64)"
    assert check["speedup_vs_flat"] == pytest.approx(15.0) and check["met"]
    slow = [
        r | {"qps": 500.0, "speedup_vs_flat": 5.0} if r["kind"] != "flat" else r
        for r in rows_by_hand()
    ]
    assert not fastest_at_recall(slow)["met"]


def test_sweep_against_exact_search():
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((400, 16)).astype(np.float32)
    queries = rng.standard_normal((20, 16)).astype(np.float32)
    plan = index_plan(
        len(corpus),
        hnsw_m=(8,),
        hnsw_sq8_m=(8,),
        ef_search=(400,),
        nlist=10,
        nprobe=(10, 20),
        pq_m=4,
    )
    assert plan[1][:2] == ("HNSW-SQ8 M=8", "hnsw_sq8")
    # the same graph in the clustered layout, 4*sqrt(400) = 80 clusters by default
    assert plan[2][:3] == (
        "HNSW-SQ8 M=8, clustered layout",
        "hnsw_sq8",
        {"M": 8, "efConstruction": 80, "layout_clusters": 80},
    )
    assert plan[3] == ("IVF-Flat", "ivf_flat", {"nlist": 10}, "nprobe", [10])  # 20 > nlist dropped
    assert len(index_plan(400, hnsw_m=(8,), hnsw_sq8_m=(8,), layout_clusters=0)) == 4
    rows = sweep(corpus, queries, plan, repeats=2, show_progress_bar=False)
    frame = results_frame(rows).set_index(["index", "search knob"])
    # the flat row: the rounds' flat searches; every setting timed once a round
    assert rows[0]["family"] == "Flat (exact)" and len(rows[0]["times_s"]) == 2
    flat_s = rows[0]["median_s"]
    for r in rows[1:]:
        assert len(r["times_s"]) == 2
        assert r["speedup_vs_flat"] == pytest.approx(flat_s / r["median_s"])
        assert r["qps"] == pytest.approx(len(queries) / np.median(r["times_s"]))
    assert frame.loc[("Flat (exact)", "-"), "recall@10"] == 1.0
    assert frame.loc[("Flat (exact)", "-"), "x flat"] == 1.0
    # HNSW with efSearch = n and IVF probing every list are exact search
    assert frame.loc[("HNSW M=8", "efSearch=400"), "recall@10"] == 1.0
    assert frame.loc[("IVF-Flat", "nprobe=10"), "recall@10"] == 1.0
    assert frame.loc[("IVF-PQ m=4", "nprobe=10"), "recall@10"] < 1.0
    # the 8-bit graph searches rounded vectors: near-exact, in a quarter of the vector bytes
    assert frame.loc[("HNSW-SQ8 M=8", "efSearch=400"), "recall@10"] >= 0.9
    assert (
        frame.loc[("HNSW-SQ8 M=8", "efSearch=400"), "MiB"]
        < frame.loc[("HNSW M=8", "efSearch=400"), "MiB"]
    )
    # the clustered layout: other memory order, the same exhaustive walk; 8 bytes a vector more
    clustered = frame.loc[("HNSW-SQ8 M=8, clustered layout", "efSearch=400")]
    assert clustered["recall@10"] >= 0.9
    sq8 = frame.loc[("HNSW-SQ8 M=8", "efSearch=400"), "MiB"]
    assert clustered["MiB"] * 2**20 - sq8 * 2**20 == pytest.approx(8 * len(corpus), abs=512)


class _Recording:
    """A stand-in index: records each search's knobs in a shared log, sleeps ``seconds[knob]``."""

    def __init__(self, name, log, seconds):
        self.name, self.log, self.seconds = name, log, seconds

    def search(self, queries, k, **knobs):
        import time

        value = knobs.get("efSearch")
        self.log.append((self.name, value))
        time.sleep(self.seconds[value])
        return None, np.full((len(queries), k), value or 0)


def test_interleaved_rounds_time_flat_then_every_setting_in_each_round():
    log = []
    flat = _Recording("flat", log, {None: 0.02})
    hnsw = _Recording("hnsw", log, {16: 0.001, 64: 0.005})
    other = _Recording("other", log, {32: 0.001})
    settings = [(hnsw, {"efSearch": 16}), (hnsw, {"efSearch": 64}), (other, {"efSearch": 32})]
    queries = np.zeros((4, 3), dtype=np.float32)
    flat_times, timings = interleaved_rounds(flat, settings, queries, repeats=3)
    assert log == [("flat", None), ("hnsw", 16), ("hnsw", 64), ("other", 32)] * 3
    assert len(flat_times) == 3 and min(flat_times) >= 0.02
    assert [len(t["times_s"]) for t in timings] == [3, 3, 3]
    assert timings[1]["median_s"] >= 0.005 and timings[0]["median_s"] < timings[1]["median_s"]
    assert timings[1]["qps"] == pytest.approx(4 / timings[1]["median_s"])
    assert (timings[0]["ids"] == 16).all() and (timings[2]["ids"] == 32).all()
