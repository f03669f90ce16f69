"""Approximate nearest-neighbour indexes on real embeddings: recall@10 against exact search vs speed.

Not a test: a measurement (book chapter 16; issue 24, approximate indexes). The corpus is every
distinct text of the project's data sets (:func:`sbert_tutor.data.pool.load_text_pool`), the
queries the 6,980 MS MARCO dev-small queries (none of them is in the corpus), both embedded
once with all-MiniLM-L6-v2 (fp32) and cached outside the repository (``--cache``, keyed by the
hash of the texts and the model settings). Then, with ``--threads`` for every index alike:

* exact search with faiss' flat index (:func:`sbert_tutor.ann.build_index` ``"flat"``): the
  reference top-10 and the speed baseline;
* HNSW for each ``M`` x ``efSearch``, IVF-Flat and IVF-PQ for each ``nprobe``.

For each setting: recall@10 against the exact top-10 (:func:`sbert_tutor.metrics.recall_at_k`),
queries per second (all queries in one batched ``search`` call; median of ``--repeats``), its
ratio to the flat index, the index's memory (bytes of ``faiss.serialize_index``) and its build
time. Issue 24's bar: some index reaches recall@10 >= 0.95 at >= 10x the flat index's QPS.

Examples::

    SBERT_TUTOR_DATA=../shared/data HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 \\
        python benchmarks/ann_index.py --threads 1 --json auto
    python benchmarks/ann_index.py --threads 1 --corpus-size 5000 --queries 200 --json /tmp/a.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "sbert_tutor" / "book" / "results"  # where the book reads them
#: Issue 24's bar: recall@10 at least this at QPS at least ``speedup`` x the flat index's.
BAR = {"recall_at_10": 0.95, "speedup_vs_flat": 10.0}
K = 10


# ----------------------------------------------------------------------------- data and cache
def texts(corpus_size: int | None, n_queries: int | None) -> dict[str, Any]:
    """The pool (or a seeded subset of ``corpus_size`` of it) and the first ``n_queries``
    MS MARCO dev-small queries, with the files read and the pool's make-up."""
    from sbert_tutor.data.msmarco import load_msmarco_queries
    from sbert_tutor.data.pool import load_text_pool
    from sbert_tutor.stats import seeded_subset

    pool = load_text_pool()
    corpus, parts = pool.texts, pool.parts
    if corpus_size is not None and corpus_size < len(corpus):
        keep = seeded_subset(len(corpus), corpus_size, seed=0)
        corpus = [corpus[i] for i in keep]
        parts = [parts[i] for i in keep]
    queries, query_files = load_msmarco_queries("msmarco-dev")
    query_texts = list(queries.values())[:n_queries]
    overlap = len(set(query_texts) & set(corpus))
    return {
        "corpus": corpus,
        "queries": query_texts,
        "files": sorted({str(f) for f in (*pool.files, *query_files)}),
        "pool_size": len(pool),
        "corpus_parts": {p: parts.count(p) for p in dict.fromkeys(parts)},
        "sources": pool.sources,
        "queries_in_corpus": overlap,
    }


def embed(
    corpus: list[str], queries: list[str], cache: Path, batch_size: int, threads: int
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """fp32 embeddings of ``corpus`` and ``queries``: from ``cache`` when the texts' hashes and
    the model settings match its ``meta.json``, else encoded (once) and stored there."""
    import torch

    from sbert_tutor import SentenceEncoder
    from sbert_tutor.data.pool import texts_sha256

    key = {"corpus_sha256": texts_sha256(corpus), "queries_sha256": texts_sha256(queries)}
    folder = cache / f"{key['corpus_sha256'][:16]}_{key['queries_sha256'][:16]}"
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if all(meta.get(k) == v for k, v in key.items()) and meta["model"]["name"] == MODEL:
            print(f"embeddings from {folder}", file=sys.stderr)
            return np.load(folder / "corpus.npy"), np.load(folder / "queries.npy"), meta
    torch.set_num_threads(threads)
    encoder = SentenceEncoder.from_pretrained(MODEL, device="cpu", compute_dtype="fp32")
    out = {}
    seconds = {}
    for name, items in (("queries", queries), ("corpus", corpus)):
        start = time.perf_counter()
        out[name] = encoder.encode(items, batch_size=batch_size, show_progress_bar=True)
        seconds[name] = time.perf_counter() - start
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "corpus.npy", out["corpus"])
    np.save(folder / "queries.npy", out["queries"])
    meta = {
        **key,
        "n_corpus": len(corpus),
        "n_queries": len(queries),
        "model": encoder.describe(),
        "encode_seconds": seconds,
        "encode_threads": threads,
        "batch_size": batch_size,
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    print(f"embeddings written to {folder}", file=sys.stderr)
    return out["corpus"], out["queries"], meta


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def timed_search(index: Any, queries: np.ndarray, repeats: int, **knobs: int) -> dict[str, Any]:
    """All queries in one batched search, ``repeats`` times: median seconds, QPS, last ids."""
    times = []
    ids = None
    for _ in range(repeats):
        start = time.perf_counter()
        _, ids = index.search(queries, K, **knobs)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return {"median_s": median, "times_s": times, "qps": len(queries) / median, "ids": ids}


def sweep(
    corpus: np.ndarray, queries: np.ndarray, args: argparse.Namespace
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The flat reference, then every index setting; one row per (index, search knob)."""
    from tqdm.auto import tqdm

    from sbert_tutor.ann import build_index, knn_recall_at_k

    flat = build_index(corpus, "flat", metric="cosine")
    base = timed_search(flat, queries, args.repeats)
    exact = base["ids"]
    rows: list[dict[str, Any]] = []

    def record(family: str, index: Any, search_knobs: dict[str, int], t: dict[str, Any]) -> None:
        rows.append(
            {
                "family": family,
                "kind": index.kind,
                "build_knobs": index.knobs,
                "search_knobs": search_knobs,
                "recall_at_10": knn_recall_at_k(t["ids"], exact, K),
                "qps": t["qps"],
                "median_s": t["median_s"],
                "times_s": t["times_s"],
                "speedup_vs_flat": t["qps"] / base["qps"],
                "nbytes": index.nbytes,
                "bytes_per_vector": index.nbytes / len(index),
                "build_seconds": index.build_seconds,
            }
        )

    record("Flat (exact)", flat, {}, base)
    plan: list[tuple[str, str, dict[str, Any], str, list[int]]] = []
    for m in ints(args.hnsw_m):
        knobs = {"M": m, "efConstruction": args.ef_construction}
        plan.append((f"HNSW M={m}", "hnsw", knobs, "efSearch", ints(args.ef_search)))
    plan.append(("IVF-Flat", "ivf_flat", {"nlist": args.nlist}, "nprobe", ints(args.nprobe)))
    pq = {"nlist": args.nlist, "m": args.pq_m, "nbits": 8}
    plan.append((f"IVF-PQ m={args.pq_m}", "ivf_pq", pq, "nprobe", ints(args.nprobe)))
    for family, kind, knobs, knob, values in tqdm(plan, desc="indexes", unit="index"):
        index = build_index(corpus, kind, metric="cosine", **knobs)
        for value in values:
            record(
                family,
                index,
                {knob: value},
                timed_search(index, queries, args.repeats, **{knob: value}),
            )
            row = rows[-1]
            print(
                f"{family:14s} {knob}={value:<4d} recall@10={row['recall_at_10']:.4f} "
                f"qps={row['qps']:9.1f} x{row['speedup_vs_flat']:6.2f} "
                f"{row['nbytes'] / 2**20:7.1f} MiB build {row['build_seconds']:.1f}s",
                file=sys.stderr,
            )
        del index
    return rows, exact


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch and faiss threads")
    parser.add_argument("--corpus-size", type=int, default=None, help="seeded subset of the pool")
    parser.add_argument("--queries", type=int, default=None, help="first N dev-small queries")
    parser.add_argument("--cache", default="/tmp/ann_cache", help="embedding cache folder")
    parser.add_argument("--batch-size", type=int, default=64, help="encode batch size")
    parser.add_argument("--repeats", type=int, default=3, help="timed searches per setting")
    parser.add_argument("--hnsw-m", default="16,32", help="HNSW M values")
    parser.add_argument("--ef-construction", type=int, default=40, help="HNSW efConstruction")
    parser.add_argument("--ef-search", default="16,32,64,128,256", help="HNSW efSearch values")
    parser.add_argument("--nlist", type=int, default=None, help="IVF cells (default 4*sqrt(n))")
    parser.add_argument("--nprobe", default="1,2,4,8,16,32,64,128", help="IVF nprobe values")
    parser.add_argument("--pq-m", type=int, default=48, help="IVF-PQ sub-quantisers (8 bits)")
    parser.add_argument("--encode-only", action="store_true", help="fill the cache and stop")
    parser.add_argument("--json", default=None, help="results file; 'auto' names it")
    args = parser.parse_args(argv)

    data = texts(args.corpus_size, args.queries)
    print(
        f"corpus {len(data['corpus']):,} texts (pool {data['pool_size']:,}), "
        f"{len(data['queries']):,} queries",
        file=sys.stderr,
    )
    corpus, queries, meta = embed(
        data["corpus"], data["queries"], Path(args.cache), args.batch_size, args.threads
    )
    if args.encode_only:
        return 0

    import faiss
    import torch

    from sbert_tutor.ann import default_nlist
    from sbert_tutor.commands.common import write_json
    from sbert_tutor.provenance import provenance

    faiss.omp_set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    if args.nlist is None:
        args.nlist = default_nlist(len(corpus))
    rows, _ = sweep(corpus, queries, args)
    best = [r for r in rows if r["recall_at_10"] >= BAR["recall_at_10"] and r["kind"] != "flat"]
    fastest = max(best, key=lambda r: r["qps"]) if best else None
    criterion = {
        "criterion": f"fastest index with recall@10 >= {BAR['recall_at_10']}: QPS vs flat",
        "index": None if fastest is None else f"{fastest['family']} {fastest['search_knobs']}",
        "recall_at_10": None if fastest is None else fastest["recall_at_10"],
        "value": None if fastest is None else fastest["speedup_vs_flat"],
        "bar": BAR["speedup_vs_flat"],
    }
    criterion["met"] = (
        criterion["value"] is not None and criterion["value"] >= BAR["speedup_vs_flat"]
    )
    print(
        f"{criterion['criterion']}: {criterion['index']} x{criterion['value']} "
        f"-> {'met' if criterion['met'] else 'NOT met'}",
        file=sys.stderr,
    )
    if args.json:
        out = (
            RESULTS / f"ann_index_cpu_{args.threads}threads.json"
            if args.json == "auto"
            else Path(args.json)
        )
        write_json(
            out,
            {
                "benchmark": "ann_index",
                "model": MODEL,
                "metric": "cosine",
                "k": K,
                "threads": args.threads,
                "repeats": args.repeats,
                "n_corpus": int(corpus.shape[0]),
                "n_queries": int(queries.shape[0]),
                "dim": int(corpus.shape[1]),
                "corpus": {
                    "what": "every distinct text of the project's data sets "
                    "(sbert_tutor.data.pool.load_text_pool)"
                    + (f", seeded subset of {args.corpus_size}" if args.corpus_size else ""),
                    "pool_size": data["pool_size"],
                    "parts": data["corpus_parts"],
                    "sources": data["sources"],
                    "sha256": meta["corpus_sha256"],
                },
                "queries": {
                    "what": "MS MARCO dev-small queries, file order"
                    + (f", first {args.queries}" if args.queries else ""),
                    "in_corpus": data["queries_in_corpus"],
                    "sha256": meta["queries_sha256"],
                },
                "embeddings": {
                    k: meta[k] for k in ("encode_seconds", "encode_threads", "batch_size")
                },
                "settings": {
                    "nlist": args.nlist,
                    "ef_construction": args.ef_construction,
                    "pq_m": args.pq_m,
                    "pq_nbits": 8,
                },
                "results": rows,
                "criteria": [criterion],
                "provenance": provenance(
                    data_files=data["files"],
                    model=meta["model"],
                    command=sys.argv,
                    faiss=faiss.__version__,
                    faiss_threads=args.threads,
                ),
            },
        )
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
