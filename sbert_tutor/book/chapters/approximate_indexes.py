r"""Chapter 16, approximate indexes: :func:`sweep` runs the index settings of :func:`index_plan`
on the page's sample and in ``benchmarks/ann_index.py`` on the whole pool, all timed in the same
:func:`interleaved_rounds` and scored by recall@:data:`K` against the flat index.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.recorded import recorded_results
from sbert_tutor.book.sizes import ChapterSizes, register_sizes
from sbert_tutor.search.ann import AnnIndex, build_index, default_nlist, knn_recall_at_k

__all__ = [
    "ApproximateIndexSizes",
    "COMMAND",
    "K",
    "LAYOUT_SUFFIX",
    "RECORDS",
    "SIZES",
    "SearchTexts",
    "TARGET",
    "fastest_at_recall",
    "index_plan",
    "interleaved_rounds",
    "knob_text",
    "plot_recall_qps",
    "recorded_run",
    "results_frame",
    "search_texts",
    "sweep",
    "timing",
]


@dataclass(frozen=True, kw_only=True)
class ApproximateIndexSizes(ChapterSizes):
    """Chapter 16 (approximate indexes): pool texts embedded and indexed when the chapter runs
    (a seeded sample), MS MARCO dev-small queries searched, and timing repeats."""

    corpus: int
    queries: int
    repeats: int


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, ApproximateIndexSizes] = register_sizes(
    "16_approximate_indexes",
    {
        "quick": ApproximateIndexSizes(corpus=3000, queries=300, repeats=3),
        "t4": ApproximateIndexSizes(corpus=20_000, queries=1000, repeats=3),
        "paper": ApproximateIndexSizes(corpus=50_000, queries=2000, repeats=5),
    },
)

#: The recorded full-pool runs the chapter reads, preferred first, and the command that records
#: one (``--threads 2`` writes ``ann_index_cpu_2threads``).
RECORDS = ("ann_index_cpu_2threads", "ann_index_cpu_1threads")
COMMAND = (
    "SBERT_TUTOR_DATA=... HF_HUB_OFFLINE=1 python benchmarks/ann_index.py --threads 2 "
    "--ef-construction 400 --ef-search 16,24,32,40,48,64,96,128,256 --repeats 5 --json auto"
)
#: The corner the figure shades: recall@10 at least ``recall_at_10``, at queries/s at least
#: ``speedup_vs_flat`` x the flat index's.
TARGET = {"recall_at_10": 0.95, "speedup_vs_flat": 10.0}
#: Neighbours found a query: recall@K against the exact top-K.
K = 10
#: What a family's name gets in the clustered layout (:func:`index_plan`).
LAYOUT_SUFFIX = ", clustered layout"


def knob_text(knobs: Mapping[str, Any]) -> str:
    """``{"efSearch": 48}`` -> ``"efSearch=48"`` (knobs joined by ``", "``; ``""`` for none)."""
    return ", ".join(f"{k}={v}" for k, v in knobs.items())


@dataclass(frozen=True)
class SearchTexts:
    """A seeded sample of the text pool (the corpus) and MS MARCO dev-small queries."""

    corpus: list[str]
    parts: list[str]
    queries: list[str]
    pool_size: int
    files: list[str]


def search_texts(n_corpus: int | None, n_queries: int | None, seed: int = 0) -> SearchTexts:
    """``n_corpus`` texts of :func:`sbert_tutor.data.pool.load_text_pool` drawn with ``seed``
    (pool order kept; ``None``: all) and the first ``n_queries`` MS MARCO dev-small queries."""
    from sbert_tutor.data.msmarco import load_msmarco_queries
    from sbert_tutor.data.pool import load_text_pool
    from sbert_tutor.stats import seeded_subset

    pool = load_text_pool()
    everything = n_corpus is None or n_corpus >= len(pool)
    keep = range(len(pool)) if everything else seeded_subset(len(pool), n_corpus, seed=seed)
    queries, query_files = load_msmarco_queries("msmarco-dev")
    return SearchTexts(
        corpus=[pool.texts[i] for i in keep],
        parts=[pool.parts[i] for i in keep],
        queries=list(queries.values())[:n_queries],
        pool_size=len(pool),
        files=sorted({str(Path(f)) for f in (*pool.files, *query_files)}),
    )


def recorded_run() -> dict[str, Any] | None:
    """The first of :data:`RECORDS` that is recorded, else ``None``."""
    return next((r for r in map(recorded_results, RECORDS) if r is not None), None)


def timing(times: Sequence[float], n_queries: int, ids: np.ndarray | None) -> dict[str, Any]:
    """``times`` (seconds of one batched search each), their median, queries/s
    (``n_queries`` / median) and ``ids``."""
    median = statistics.median(times)
    return {"median_s": median, "times_s": list(times), "qps": n_queries / median, "ids": ids}


def interleaved_rounds(
    flat: AnnIndex,
    settings: Sequence[tuple[AnnIndex, dict[str, int]]],
    queries: np.ndarray,
    repeats: int,
    show_progress_bar: bool = False,
) -> tuple[list[float], list[dict[str, Any]]]:
    """``repeats`` rounds, each a batched top-:data:`K` search of all ``queries`` on the flat index
    then at every ``(index, knobs)`` of ``settings``: the flat index's seconds (one a round) and
    each setting's :func:`timing`. Every setting is timed once a round, so a drift of the
    machine's speed during the rounds reaches all of them, and the flat index, alike."""
    from tqdm.auto import tqdm

    searched = [(flat, {}), *settings]  # the flat index first in every round
    times: list[list[float]] = [[] for _ in searched]
    ids: list[np.ndarray | None] = [None for _ in searched]
    for _ in tqdm(range(repeats), desc="timed rounds", unit="round", disable=not show_progress_bar):
        for j, (index, knobs) in enumerate(searched):
            start = time.perf_counter()
            _, ids[j] = index.search(queries, K, **knobs)
            times[j].append(time.perf_counter() - start)
    return times[0], [timing(t, len(queries), i) for t, i in zip(times[1:], ids[1:], strict=True)]


def index_plan(
    n: int,
    hnsw_m: Sequence[int] = (16, 32),
    ef_construction: int = 80,
    hnsw_sq8_m: Sequence[int] = (32,),
    layout_clusters: int | None = None,
    ef_search: Sequence[int] = (16, 32, 64, 128, 256),
    nlist: int | None = None,
    nprobe: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256),
    pq_m: int = 48,
) -> list[tuple[str, str, dict[str, Any], str, list[int]]]:
    """The settings swept, ``(family, kind, build knobs, search knob, its values)``: HNSW for each
    of ``hnsw_m`` and HNSW-SQ8 for each of ``hnsw_sq8_m`` (both with ``ef_construction``), each
    HNSW-SQ8 again in the clustered layout of ``layout_clusters`` k-means clusters (0 leaves it
    out), then IVF-Flat and IVF-PQ without the ``nprobe`` values above ``nlist``. ``None`` for
    ``layout_clusters`` or ``nlist``: :func:`~sbert_tutor.search.ann.default_nlist` of ``n``."""
    nlist = nlist or default_nlist(n)
    clusters = default_nlist(n) if layout_clusters is None else layout_clusters
    probes = [p for p in nprobe if p <= nlist]
    graph = {"efConstruction": ef_construction}
    hnsw = [(f"HNSW M={m}", "hnsw", {"M": m} | graph) for m in hnsw_m]
    for m in hnsw_sq8_m:
        hnsw.append((f"HNSW-SQ8 M={m}", "hnsw_sq8", {"M": m} | graph))
        if clusters:  # the same graph in the clustered layout
            layout = {"M": m} | graph | {"layout_clusters": clusters}
            hnsw.append((f"HNSW-SQ8 M={m}{LAYOUT_SUFFIX}", "hnsw_sq8", layout))
    return [
        *((family, kind, knobs, "efSearch", list(ef_search)) for family, kind, knobs in hnsw),
        ("IVF-Flat", "ivf_flat", {"nlist": nlist}, "nprobe", probes),
        (f"IVF-PQ m={pq_m}", "ivf_pq", {"nlist": nlist, "m": pq_m, "nbits": 8}, "nprobe", probes),
    ]


def sweep(
    corpus: np.ndarray,
    queries: np.ndarray,
    plan: Iterable[tuple[str, str, dict[str, Any], str, list[int]]],
    repeats: int = 3,
    show_progress_bar: bool = True,
) -> list[dict[str, Any]]:
    """Exact search with the flat index (the reference top-10), every index of ``plan`` built,
    all settings timed in the same :func:`interleaved_rounds` (the flat row's times are their
    flat searches): a row per (index, search-knob value) with recall@10 against the flat index,
    queries/s (median of ``repeats``), speed-up over the flat index (its median seconds / the
    setting's), bytes and build seconds. Cosine similarity throughout."""
    from tqdm.auto import tqdm

    flat = build_index(corpus, "flat", metric="cosine")
    _, exact_ids = flat.search(queries, K)
    settings = []  # (family, index, search knobs)
    for family, kind, knobs, knob, values in tqdm(
        list(plan), desc="indexes built", unit="index", disable=not show_progress_bar
    ):
        index = build_index(corpus, kind, metric="cosine", **knobs)
        settings += [(family, index, {knob: value}) for value in values]
    flat_times, timings = interleaved_rounds(
        flat, [(index, knobs) for _, index, knobs in settings], queries, repeats, show_progress_bar
    )
    base = timing(flat_times, len(queries), exact_ids)
    return [
        {
            "family": family,
            "kind": index.kind,
            "build_knobs": index.knobs,
            "search_knobs": knobs,
            "recall_at_10": knn_recall_at_k(t["ids"], exact_ids, K),
            "qps": t["qps"],
            "median_s": t["median_s"],
            "times_s": t["times_s"],
            "speedup_vs_flat": base["median_s"] / t["median_s"],
            "nbytes": index.nbytes,
            "bytes_per_vector": index.nbytes / len(index),
            "build_seconds": index.build_seconds,
        }
        for (family, index, knobs), t in [
            (("Flat (exact)", flat, {}), base),
            *zip(settings, timings, strict=True),
        ]
    ]


def results_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The sweep as a table: index, knob, recall@10, queries/s, x flat, MiB, build seconds."""
    return pd.DataFrame(
        {
            "index": [r["family"] for r in rows],
            "search knob": [knob_text(r["search_knobs"]) or "-" for r in rows],
            "recall@10": [r["recall_at_10"] for r in rows],
            "queries/s": [r["qps"] for r in rows],
            "x flat": [r["speedup_vs_flat"] for r in rows],
            "MiB": [r["nbytes"] / 2**20 for r in rows],
            "build s": [r["build_seconds"] for r in rows],
        }
    )


def plot_recall_qps(rows: Sequence[Mapping[str, Any]], title: str = "", ax=None):
    """Recall@10 against speed (log scale): each setting's queries/s as a multiple of the flat
    index timed beside it (``speedup_vs_flat``, :func:`interleaved_rounds`), one curve per index
    family, the flat index as the line at 1 and the corner of :data:`TARGET` (recall >= 0.95 at
    >= 10x flat) shaded."""
    ax = new_axes(ax, figsize=(8, 4.2))
    frame = results_frame(rows)
    ax.axhline(1.0, color="black", lw=1, ls="--", label="Flat (exact)")
    recall, speedup = TARGET["recall_at_10"], TARGET["speedup_vs_flat"]
    top = max(frame["x flat"].max(), speedup) * 1.5
    corner = f"recall >= {recall}, >= {speedup:.0f}x flat"
    ax.fill_between([recall, 1.005], speedup, top, color="#2ca02c", alpha=0.12, label=corner)
    for family, group in frame[frame["index"] != "Flat (exact)"].groupby("index", sort=False):
        ax.plot(group["recall@10"], group["x flat"], marker="o", ms=4, label=family)
        for point in (group.iloc[0], group.iloc[-1]):  # the first and the last knob value
            xy = (point["recall@10"], point["x flat"])
            ax.annotate(point["search knob"], xy, (3, 3), textcoords="offset points", size=7)
    ax.set(yscale="log", ylim=(None, top), title=title)
    ax.set(xlabel="recall@10 against exact search", ylabel="queries / second, x the flat index")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.figure.tight_layout()
    return ax


def fastest_at_recall(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The fastest setting with recall@10 >= 0.95, its speed-up over the flat index, and whether
    that speed-up is at least 10x (``met``; both thresholds from :data:`TARGET`)."""
    ok = [r for r in rows if r["kind"] != "flat" and r["recall_at_10"] >= TARGET["recall_at_10"]]
    if not ok:
        return {"index": None, "recall_at_10": None, "speedup_vs_flat": None, "met": False}
    best = max(ok, key=lambda r: r["speedup_vs_flat"])
    return {
        "index": f"{best['family']} ({knob_text(best['search_knobs'])})",
        "recall_at_10": best["recall_at_10"],
        "speedup_vs_flat": best["speedup_vs_flat"],
        "met": best["speedup_vs_flat"] >= TARGET["speedup_vs_flat"],
    }
