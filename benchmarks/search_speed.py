"""Search speed: ``semantic_search`` vs a dense torch matmul + topk vs FAISS ``IndexFlatIP``.

Not a test: a measurement for the computational-efficiency chapter. Same normalised random
embeddings for all three (seeded), cosine = inner product on unit vectors, top-10, medians over
repeats. FAISS is optional (``pip install faiss-cpu``); without it that column is omitted.
``dense`` materialises the full ``[n_queries, n]`` score matrix; ``semantic_search`` never does.

Example::

    python benchmarks/search_speed.py --sizes 100000,1000000 --queries 1000 --json out.json
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--chunk-size", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    from sbert_tutor.book.cost import median_seconds
    from sbert_tutor.commands.common import write_json
    from sbert_tutor.provenance import provenance
    from sbert_tutor.search.exact import semantic_search

    try:
        import faiss
    except ImportError:
        faiss = None
    queries = unit_rows(args.queries, args.dim, seed=1)
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        corpus = unit_rows(n, args.dim, seed=2)
        t_ours, (_, idx_ours) = median_seconds(
            lambda c=corpus: semantic_search(
                queries, c, top_k=args.top_k, score="dot", chunk_size=args.chunk_size, device="cpu"
            ),
            args.repeats,
        )

        def dense(c=corpus):
            scores = torch.from_numpy(queries) @ torch.from_numpy(c).T
            return scores.topk(args.top_k, dim=1).indices.numpy()

        t_dense, idx_dense = median_seconds(dense, args.repeats)
        row = {
            "n": n,
            "queries": args.queries,
            "semantic_search_s": t_ours,
            "dense_matmul_topk_s": t_dense,
            "ratio_dense_over_ours": t_dense / t_ours,
            "same_top1_as_dense": float(np.mean(idx_ours[:, 0] == idx_dense[:, 0])),
        }
        if faiss is not None:
            index = faiss.IndexFlatIP(args.dim)
            index.add(corpus)
            t_faiss, (_, idx_faiss) = median_seconds(
                lambda i=index: i.search(queries, args.top_k), args.repeats
            )
            row["faiss_flat_ip_s"] = t_faiss
            row["ratio_faiss_over_ours"] = t_faiss / t_ours
            row["same_top1_as_faiss"] = float(np.mean(idx_ours[:, 0] == idx_faiss[:, 0]))
        rows.append(row)
        print(
            ", ".join(
                f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"
                for key, value in row.items()
            )
        )
        del corpus
    if args.json:
        payload = {
            "benchmark": "search",
            "args": vars(args),
            "results": rows,
            "provenance": provenance(extra={"command": sys.argv}),
        }
        print(f"wrote {write_json(args.json, payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
