r"""Chapter 16, approximate indexes: the sweep of index settings the page runs on its sample and
``benchmarks/ann_index.py`` on the whole pool, and how the chapter shows it.

:func:`index_plan` lists the settings; :func:`sweep` runs them: exact search with the flat
index, every index built, then all settings timed in the same rounds (:func:`interleaved_rounds`,
one :func:`timing` a setting), each row scored by recall@:data:`K` against the flat index's top
:data:`K`. Also here: the sizes, the texts searched (:func:`search_texts`), the recorded run
(:func:`recorded_run`), the sweep's rows as a table (:func:`results_frame`), the
recall-vs-speed figure (:func:`plot_recall_qps`) and the fastest setting that keeps recall@10 >=
0.95 (:func:`fastest_at_recall`).
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
    "search_seconds",
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
    keep = (
        range(len(pool))
        if n_corpus is None or n_corpus >= len(pool)
        else seeded_subset(len(pool), n_corpus, seed=seed)
    )
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
    from sbert_tutor.book.recorded import recorded_results

    for name in RECORDS:
        record = recorded_results(name)
        if record is not None:
            return record
    return None


def search_seconds(index: AnnIndex, queries: np.ndarray, **knobs: int) -> tuple[float, np.ndarray]:
    """One batched ``search`` of all ``queries`` for their top-:data:`K`: its wall-clock seconds
    and the ids found."""
    start = time.perf_counter()
    _, ids = index.search(queries, K, **knobs)
    return time.perf_counter() - start, ids


def timing(times: Sequence[float], n_queries: int, ids: np.ndarray | None) -> dict[str, Any]:
    """``times`` (seconds of one batched search each) as their median, queries/s
    (``n_queries`` / median), the times themselves and ``ids``."""
    median = statistics.median(times)
    return {"median_s": median, "times_s": list(times), "qps": n_queries / median, "ids": ids}


def interleaved_rounds(
    flat: AnnIndex,
    settings: Sequence[tuple[AnnIndex, dict[str, int]]],
    queries: np.ndarray,
    repeats: int,
    show_progress_bar: bool = False,
) -> tuple[list[float], list[dict[str, Any]]]:
    """``repeats`` rounds, each one flat search then one search at every ``(index, knobs)`` of
    ``settings`` in turn: the flat index's seconds (one a round) and each setting's
    :func:`timing`. Every setting is timed once a round, so a drift of the machine's speed during
    the rounds reaches all of them, and the flat index, alike."""
    from tqdm.auto import tqdm

    flat_times: list[float] = []
    times: list[list[float]] = [[] for _ in settings]
    ids: list[np.ndarray | None] = [None for _ in settings]
    for _ in tqdm(range(repeats), desc="timed rounds", unit="round", disable=not show_progress_bar):
        flat_times.append(search_seconds(flat, queries)[0])
        for j, (index, knobs) in enumerate(settings):
            seconds, ids[j] = search_seconds(index, queries, **knobs)
            times[j].append(seconds)
    return flat_times, [timing(t, len(queries), i) for t, i in zip(times, ids, strict=True)]


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
    """The settings swept: ``(family, kind, build knobs, search knob, its values)``: HNSW for each
    of ``hnsw_m`` and HNSW-SQ8 for each of ``hnsw_sq8_m`` (both with ``ef_construction``), each
    HNSW-SQ8 again with the clustered layout of ``layout_clusters`` k-means clusters (``None``:
    :func:`sbert_tutor.search.ann.default_nlist` of ``n``; 0 leaves it out), then IVF-Flat and IVF-PQ;
    ``nlist`` defaults to :func:`~sbert_tutor.search.ann.default_nlist` of ``n`` and ``nprobe`` values
    above it are dropped."""
    nlist = nlist or default_nlist(n)
    clusters = default_nlist(n) if layout_clusters is None else layout_clusters
    probes = [p for p in nprobe if p <= nlist]
    plan: list[tuple[str, str, dict[str, Any], str, list[int]]] = [
        (
            f"HNSW M={m}",
            "hnsw",
            {"M": m, "efConstruction": ef_construction},
            "efSearch",
            list(ef_search),
        )
        for m in hnsw_m
    ]
    plan += [
        (
            f"HNSW-SQ8 M={m}" + (LAYOUT_SUFFIX if layout else ""),
            "hnsw_sq8",
            {"M": m, "efConstruction": ef_construction}
            | ({"layout_clusters": clusters} if layout else {}),
            "efSearch",
            list(ef_search),
        )
        for m in hnsw_sq8_m
        for layout in ((False, True) if clusters else (False,))
    ]
    plan.append(("IVF-Flat", "ivf_flat", {"nlist": nlist}, "nprobe", probes))
    pq = {"nlist": nlist, "m": pq_m, "nbits": 8}
    plan.append((f"IVF-PQ m={pq_m}", "ivf_pq", pq, "nprobe", probes))
    return plan


def sweep(
    corpus: np.ndarray,
    queries: np.ndarray,
    plan: Iterable[tuple[str, str, dict[str, Any], str, list[int]]],
    repeats: int = 3,
    show_progress_bar: bool = True,
) -> list[dict[str, Any]]:
    """Exact search with the flat index (the reference top-10), every index of ``plan`` built,
    then all settings timed in the same :func:`interleaved_rounds`: one row per (index,
    search-knob value) with recall@10 against the flat index, queries/s (median of ``repeats``),
    its speed-up over the flat index (median flat seconds / the setting's median seconds), the
    index's bytes and build seconds. The flat row's times are the rounds' flat searches.
    Cosine similarity throughout."""
    from tqdm.auto import tqdm

    flat = build_index(corpus, "flat", metric="cosine")
    _, exact_ids = flat.search(queries, K)
    built = [
        (family, build_index(corpus, kind, metric="cosine", **knobs), knob, values)
        for family, kind, knobs, knob, values in tqdm(
            list(plan), desc="indexes built", unit="index", disable=not show_progress_bar
        )
    ]
    settings = [
        (family, index, {knob: value}) for family, index, knob, values in built for value in values
    ]
    flat_times, timings = interleaved_rounds(
        flat, [(index, knobs) for _, index, knobs in settings], queries, repeats, show_progress_bar
    )
    base = timing(flat_times, len(queries), exact_ids)

    def row(family: str, index: AnnIndex, knobs: dict[str, int], t: dict[str, Any]) -> dict:
        return {
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

    return [
        row("Flat (exact)", flat, {}, base),
        *(row(f, index, knobs, t) for (f, index, knobs), t in zip(settings, timings, strict=True)),
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
    top = max(frame["x flat"].max(), TARGET["speedup_vs_flat"]) * 1.5
    ax.fill_between(
        [TARGET["recall_at_10"], 1.005],
        TARGET["speedup_vs_flat"],
        top,
        color="#2ca02c",
        alpha=0.12,
        label=f"recall >= {TARGET['recall_at_10']}, >= {TARGET['speedup_vs_flat']:.0f}x flat",
    )
    for family, group in frame[frame["index"] != "Flat (exact)"].groupby("index", sort=False):
        ax.plot(group["recall@10"], group["x flat"], marker="o", ms=4, label=family)
        first, last = group.iloc[0], group.iloc[-1]
        for point in (first, last):
            ax.annotate(
                point["search knob"],
                (point["recall@10"], point["x flat"]),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
    ax.set_yscale("log")
    ax.set_ylim(top=top)
    ax.set_xlabel("recall@10 against exact search")
    ax.set_ylabel("queries / second, x the flat index")
    ax.set_title(title)
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
    knobs = knob_text(best["search_knobs"])
    return {
        "index": f"{best['family']} ({knobs})",
        "recall_at_10": best["recall_at_10"],
        "speedup_vs_flat": best["speedup_vs_flat"],
        "met": best["speedup_vs_flat"] >= TARGET["speedup_vs_flat"],
    }
