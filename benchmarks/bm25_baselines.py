"""BM25 (bm25s, k1 = 0.82, b = 0.68) against Anserini's, and the BM25 / dense / hybrid baselines.

Not a test: a measurement. Two parts, one JSON with provenance:

1. **Agreement with Anserini.** The data folder ships Anserini's BM25 top 20 of 600 MS MARCO
   dev queries, retrieved from the full 8.8M-passage collection; every one of those passages is
   in ``corpus_mini`` (16,799 passages). Our BM25 searches ``corpus_mini``: were its scores
   Anserini's, its top 20 would be exactly Anserini's (a smaller corpus only removes
   competitors), except that the collection statistics (idf, mean length) are the mini corpus's.
   Reported: the mean overlap of the two top-20 sets (and top 10), and how many queries agree
   completely.
2. **Baselines** on the MS MARCO dev subset (540 queries) and TREC DL 2019 (43 queries), both
   over ``corpus_mini``: MRR@10, nDCG@10 and recall@100 (``trec_eval`` conventions, DL19's
   binary measures at grade >= 2) of BM25, the dense all-MiniLM-L6-v2 (cosine, exact search) and
   their reciprocal-rank fusion (k = 60, each run cut at ``--depth``). ``--no-dense``: BM25 only.

Example::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/bm25_baselines.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def overlap_with_anserini(corpus: dict[str, str], depth: int = 20) -> tuple[dict[str, Any], Any]:
    from sbert_tutor.data.msmarco import (
        bm25_candidates_path,
        load_bm25_candidates,
        load_msmarco_queries,
    )
    from sbert_tutor.metrics import rank_documents
    from sbert_tutor.search.bm25 import BM25Index

    anserini = load_bm25_candidates()
    queries, files = load_msmarco_queries("msmarco-dev")
    missing = [q for q in anserini if q not in queries]
    if missing:
        raise SystemExit(f"{len(missing)} candidate queries have no text, e.g. {missing[:3]}")
    start = time.perf_counter()
    index = BM25Index(corpus)
    indexed = time.perf_counter() - start
    run = index.search({q: queries[q] for q in anserini}, top_k=depth)
    searched = time.perf_counter() - start - indexed
    per_k = {}
    for k in (10, 20):
        shares = []
        for qid, theirs in anserini.items():
            ours = rank_documents(run[qid])[:k]
            shares.append(len(set(ours) & set(theirs[:k])) / k)
        per_k[f"overlap@{k}"] = {
            "mean": sum(shares) / len(shares),
            "queries_identical": sum(s == 1.0 for s in shares),
            "queries": len(shares),
        }
    top1 = sum(rank_documents(run[q])[:1] == theirs[:1] for q, theirs in anserini.items())
    result = {
        **per_k,
        "top1_agreement": top1 / len(anserini),
        "index_seconds": indexed,
        "search_seconds": searched,
    }
    return result, [*files, bm25_candidates_path()], index


def baselines(
    index: Any, dense: bool, depth: int, device: str = "cpu"
) -> tuple[dict[str, Any], list[Any]]:
    from sbert_tutor.data.msmarco import load_msmarco
    from sbert_tutor.metrics import evaluate_run, rank_documents
    from sbert_tutor.search.fusion import rrf

    def cut(run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return {q: {d: docs[d] for d in rank_documents(docs)[:depth]} for q, docs in run.items()}

    results: dict[str, Any] = {}
    files: list[Any] = []
    passage_embeddings = None
    encoder = None
    for name in ("msmarco-dev-subset", "trec-dl19"):
        data = load_msmarco(name)
        files += list(data.files)
        runs = {"bm25": index.search(data.queries, top_k=depth)}
        if dense:
            import numpy as np

            from sbert_tutor import SentenceEncoder
            from sbert_tutor.metrics import run_from_topk
            from sbert_tutor.search.exact import semantic_search

            pids = list(data.corpus)
            if encoder is None:
                encoder = SentenceEncoder.from_pretrained(MODEL, device=device)
                start = time.perf_counter()
                passage_embeddings = encoder.encode(
                    [data.corpus[p] for p in pids], batch_size=64, normalize_embeddings=True
                )
                results["dense_encode_seconds"] = time.perf_counter() - start
            qids = list(data.queries)
            query_embeddings = encoder.encode(
                [data.queries[q] for q in qids], normalize_embeddings=True
            )
            scores, indices = semantic_search(
                np.asarray(query_embeddings), passage_embeddings, top_k=depth, device=device
            )
            runs["dense"] = run_from_topk(qids, pids, scores, indices)
            runs["hybrid_rrf"] = rrf([cut(runs["bm25"]), cut(runs["dense"])])
        results[name] = {
            method: {
                key: value
                for key, value in evaluate_run(
                    run, data.qrels, ks=(10, 100), relevance_threshold=data.relevance_threshold
                ).items()
                if key in ("mrr@10", "ndcg@10", "recall@100")
            }
            for method, run in runs.items()
        }
        results[name]["queries"] = len(data.queries)
    return results, files


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--no-dense", action="store_true", help="BM25 only (no dense or hybrid run)")
    p.add_argument("--depth", type=int, default=100, help="run depth (recall@100 needs 100)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", help="where the dense model encodes and searches")
    p.add_argument("--json", type=Path, help="write the report here")
    args = p.parse_args(argv)

    import torch

    from sbert_tutor.data.msmarco import load_msmarco
    from sbert_tutor.provenance import provenance
    from sbert_tutor.search.bm25 import ANSERINI_B, ANSERINI_K1

    torch.set_num_threads(args.threads)
    corpus = dict(load_msmarco("msmarco-dev-subset").corpus)
    agreement, files, index = overlap_with_anserini(corpus)
    print(json.dumps(agreement, indent=2), file=sys.stderr)
    scores, more = baselines(index, not args.no_dense, args.depth, args.device)
    report = {
        "benchmark": "bm25_baselines",
        "bm25": {"library": "bm25s", "k1": ANSERINI_K1, "b": ANSERINI_B, "method": "lucene"},
        "corpus": {"name": "corpus_mini", "passages": len(corpus)},
        "anserini_agreement": agreement,
        "retrieval": scores,
        "dense_model": None if args.no_dense else MODEL,
        "rrf_k": 60,
        "provenance": provenance(data_files=[*files, *more], extra={"command": sys.argv}),
    }
    if args.json:
        from sbert_tutor.commands.common import write_json

        print(f"wrote {write_json(args.json, report)}", file=sys.stderr)
    else:
        print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
