"""Approximate nearest-neighbour indexes on real embeddings: recall@10 against exact search vs speed.

Not a test: a measurement (book chapter 16; issue 24, approximate indexes). The corpus is every
distinct text of the project's data sets (:func:`sbert_tutor.data.pool.load_text_pool`), the
queries the 6,980 MS MARCO dev-small queries (none of them is in the corpus), both embedded
once with all-MiniLM-L6-v2 (fp32) and cached outside the repository (``--cache``, keyed by the
hash of the texts and the model settings). Then, with ``--threads`` for every index alike:

* exact search with faiss' flat index (:func:`sbert_tutor.search.ann.build_index` ``"flat"``): the
  reference top-10 and the speed baseline;
* HNSW and HNSW-SQ8 (8-bit vectors) for each ``M`` x ``efSearch``, HNSW-SQ8 again in the
  clustered layout (``layout_clusters``, :func:`sbert_tutor.search.ann.cluster_layout`), IVF-Flat and
  IVF-PQ for each ``nprobe``.

For each setting: recall@10 against the exact top-10 (:func:`sbert_tutor.search.ann.knn_recall_at_k`),
queries per second (all queries in one batched ``search`` call; median of ``--repeats``), its
ratio to the flat index, the index's memory (bytes of ``faiss.serialize_index``) and its build
time. Every index is built first, then all settings are timed in the same ``--repeats`` rounds
(each round one flat search, then every setting once:
:func:`sbert_tutor.book.chapters.approximate_indexes.interleaved_rounds`). The check it records:
does some index reach recall@10 >= 0.95 at >= 10x the flat index's QPS?

Examples::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 \\
        python benchmarks/ann_index.py --threads 1 --json auto
    python benchmarks/ann_index.py --threads 1 --corpus-size 5000 --queries 200 --json /tmp/a.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "sbert_tutor" / "book" / "results"  # where the book reads them


# ----------------------------------------------------------------------------- data and cache
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch and faiss threads")
    parser.add_argument("--corpus-size", type=int, default=None, help="seeded subset of the pool")
    parser.add_argument("--queries", type=int, default=None, help="first N dev-small queries")
    parser.add_argument("--cache", default="/tmp/ann_cache", help="embedding cache folder")
    parser.add_argument("--batch-size", type=int, default=64, help="encode batch size")
    parser.add_argument("--repeats", type=int, default=3, help="timed searches per setting")
    parser.add_argument("--hnsw-m", default="16,32", help="HNSW M values")
    parser.add_argument("--hnsw-sq8-m", default="32", help="HNSW-SQ8 M values")
    parser.add_argument(
        "--layout-clusters",
        type=int,
        default=None,
        help="k-means clusters of HNSW-SQ8's clustered layout (default 4*sqrt(n); 0: none)",
    )
    parser.add_argument("--ef-construction", type=int, default=80, help="HNSW efConstruction")
    parser.add_argument("--ef-search", default="16,32,64,128,256", help="HNSW efSearch values")
    parser.add_argument("--nlist", type=int, default=None, help="IVF cells (default 4*sqrt(n))")
    parser.add_argument("--nprobe", default="1,2,4,8,16,32,64,128,256", help="IVF nprobe values")
    parser.add_argument("--pq-m", type=int, default=48, help="IVF-PQ sub-quantisers (8 bits)")
    parser.add_argument("--encode-only", action="store_true", help="fill the cache and stop")
    parser.add_argument("--json", default=None, help="results file; 'auto' names it")
    args = parser.parse_args(argv)

    from sbert_tutor.book.chapters.approximate_indexes import (
        TARGET,
        K,
        fastest_at_recall,
        index_plan,
        results_frame,
        search_texts,
        sweep,
    )

    data = search_texts(args.corpus_size, args.queries)
    print(
        f"corpus {len(data.corpus):,} texts (pool {data.pool_size:,}), "
        f"{len(data.queries):,} queries",
        file=sys.stderr,
    )
    corpus, queries, meta = embed(
        data.corpus, data.queries, Path(args.cache), args.batch_size, args.threads
    )
    if args.encode_only:
        return 0

    import faiss
    import pandas as pd
    import torch

    from sbert_tutor.commands.common import write_json
    from sbert_tutor.provenance import provenance
    from sbert_tutor.search.ann import default_nlist

    faiss.omp_set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    if args.nlist is None:
        args.nlist = default_nlist(len(corpus))
    if args.layout_clusters is None:
        args.layout_clusters = default_nlist(len(corpus))
    plan = index_plan(
        len(corpus),
        hnsw_m=ints(args.hnsw_m),
        ef_construction=args.ef_construction,
        hnsw_sq8_m=ints(args.hnsw_sq8_m),
        layout_clusters=args.layout_clusters,
        ef_search=ints(args.ef_search),
        nlist=args.nlist,
        nprobe=ints(args.nprobe),
        pq_m=args.pq_m,
    )
    rows = sweep(corpus, queries, plan, repeats=args.repeats)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(results_frame(rows).round(4).to_string(index=False), file=sys.stderr)
    check = fastest_at_recall(rows)
    criterion = {
        "criterion": f"fastest index with recall@10 >= {TARGET['recall_at_10']}: QPS vs flat",
        "index": check["index"],
        "recall_at_10": check["recall_at_10"],
        "value": check["speedup_vs_flat"],
        "bar": TARGET["speedup_vs_flat"],
        "met": check["met"],
    }
    print(f"{criterion}", file=sys.stderr)
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
                "timing": "interleaved rounds: all indexes built, then each round searches the "
                "flat index once and every setting once; x flat = median flat seconds / the "
                "setting's median seconds, over the same rounds",
                "n_corpus": int(corpus.shape[0]),
                "n_queries": int(queries.shape[0]),
                "dim": int(corpus.shape[1]),
                "corpus": {
                    "what": "every distinct text of the project's data sets "
                    "(sbert_tutor.data.pool.load_text_pool)"
                    + (f", seeded subset of {args.corpus_size}" if args.corpus_size else ""),
                    "pool_size": data.pool_size,
                    "parts": {p: data.parts.count(p) for p in dict.fromkeys(data.parts)},
                    "sha256": meta["corpus_sha256"],
                },
                "queries": {
                    "what": "MS MARCO dev-small queries, file order"
                    + (f", first {args.queries}" if args.queries else ""),
                    "in_corpus": len(set(data.queries) & set(data.corpus)),
                    "sha256": meta["queries_sha256"],
                },
                "embeddings": {
                    k: meta[k] for k in ("encode_seconds", "encode_threads", "batch_size")
                },
                "settings": {
                    "nlist": args.nlist,
                    "ef_construction": args.ef_construction,
                    "layout_clusters": args.layout_clusters,
                    "pq_m": args.pq_m,
                    "pq_nbits": 8,
                },
                "results": rows,
                "criteria": [criterion],
                "provenance": provenance(
                    data_files=data.files,
                    model=meta["model"],
                    extra={
                        "command": sys.argv,
                        "faiss": faiss.__version__,
                        "faiss_threads": args.threads,
                    },
                ),
            },
        )
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
