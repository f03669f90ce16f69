"""Compressed embeddings: bytes a vector against retrieval and STS quality.

Not a test: the measurement behind the compressed-embeddings chapter (book chapter 15). One
model encodes the MS MARCO dev subset (540 queries over ``corpus_mini``'s 16,799 passages) and
the STSb test pairs once, in float32; every compressed form is then made from those vectors, so
the rows differ only in the compression:

* ``float32``: exact cosine search (the reference);
* ``int8``: scalar quantisation, ranges from the corpus embeddings; int8 dot-product search;
* ``binary``: sign bits, Hamming search, no rescoring;
* ``binary + rescore xM``: Hamming search for ``top_k * M`` candidates, then the float32 query
  against the candidates' stored vectors (``int8`` or ``binary`` ones, both rows are written);
* ``truncate D``: the first ``D`` dimensions, renormalised, exact cosine search.

For every row: bytes a vector, the memory ratio to float32, MRR@10 and nDCG@10 (dev subset),
Spearman x 100 on STSb test (cosine for float/int8/truncation, the negative Hamming distance for
binary: a rescoring needs a float query, which STS does not have), and queries/s of the search
alone (median over repeats, queries already encoded).

Embeddings are cached under ``--cache-dir`` (never in the repository), keyed by the model and a
hash of the texts, so a second run only searches.

Example::

    OMP_NUM_THREADS=1 python benchmarks/compressed_embeddings.py --threads 1 \\
        --cache-dir /tmp/compress_cache --json sbert_tutor/book/results/compressed_embeddings_cpu.json
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def cached_encode(
    encoder, texts: list[str], cache_dir: Path, what: str, batch_size: int
) -> np.ndarray:
    """Float32 embeddings of ``texts``, read from / written to ``cache_dir``."""
    key = hashlib.sha256(("\x00".join([encoder.name, *texts])).encode()).hexdigest()[:16]
    path = cache_dir / f"{what}_{key}.npy"
    if path.exists():
        return np.load(path)
    t0 = time.perf_counter()
    emb = encoder.encode(texts, batch_size=batch_size, show_progress_bar=True)
    print(f"encoded {len(texts):,} {what} in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, emb)
    return emb


def load_inputs(args: argparse.Namespace):
    """Encoder, MS MARCO dev subset, STSb test and their float32 embeddings."""
    from sbert_tutor import SentenceEncoder
    from sbert_tutor.data.msmarco import load_msmarco
    from sbert_tutor.data.sts import load_sts
    from sbert_tutor.evaluation.retrieval import select_queries

    encoder = SentenceEncoder.from_pretrained(args.model)
    data = load_msmarco("msmarco-dev-subset", "mini")
    queries, qrels = select_queries(data.queries, data.qrels, data.relevance_threshold)
    pids = list(data.corpus)
    if args.passages:
        pids = sample_pids(pids, qrels, args.passages)
    cache = Path(args.cache_dir)
    corpus_emb = cached_encode(
        encoder, [data.corpus[p] for p in pids], cache, "corpus", args.batch_size
    )
    qids = list(queries)
    query_emb = cached_encode(
        encoder, [queries[q] for q in qids], cache, "queries", args.batch_size
    )
    sts = load_sts("stsb", "test")
    s1 = cached_encode(encoder, sts.sentences1, cache, "stsb1", args.batch_size)
    s2 = cached_encode(encoder, sts.sentences2, cache, "stsb2", args.batch_size)
    return encoder, data, qids, qrels, pids, corpus_emb, query_emb, sts, s1, s2


def sample_pids(pids: list[str], qrels, n: int) -> list[str]:
    """Every judged passage plus distractors in corpus order, ``n`` in all (a smaller corpus)."""
    judged = {p for docs in qrels.values() for p in docs}
    rest = [p for p in pids if p not in judged]
    keep = judged | set(rest[: max(0, n - len(judged))])
    return [p for p in pids if p in keep]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--passages", type=int, default=None, help="a smaller corpus (tests)")
    parser.add_argument("--cache-dir", default="/tmp/sbert_tutor_compressed_embeddings")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from sbert_tutor.book.chapters.compressed_embeddings import compact_forms, compression_table
    from sbert_tutor.commands.common import write_json
    from sbert_tutor.provenance import provenance

    encoder, data, qids, qrels, pids, corpus, queries, sts, s1, s2 = load_inputs(args)
    table = compression_table(
        queries,
        corpus,
        qids,
        pids,
        qrels,
        (s1, s2, sts.scores),
        top_k=args.top_k,
        repeats=args.repeats,
        relevance_threshold=data.relevance_threshold,
    )
    compact = compact_forms(table)
    kept = compact.columns[-1]  # "keeps >= 95% of MRR@10"
    print(table.round(4).to_string())
    print(compact[["memory ratio to float32", f"MRR@{args.top_k} / float32", kept]])
    if args.json:
        payload = {
            "benchmark": "compressed_embeddings",
            "args": vars(args),
            "data": {
                "msmarco": data.describe()
                | {"passages searched": len(pids), "queries evaluated": len(qids)},
                "sts": {
                    "task": "stsb",
                    "split": "test",
                    "pairs": len(sts.scores),
                    "source": sts.source,
                },
                "int8 ranges": "per-dimension min/max of the passage embeddings (used for STS too)",
                "sts scores": "cosine (float32, truncation, int8 codes), negative Hamming (binary); "
                "rescored rows have none",
                "ties": "measures follow trec_eval: equal scores are ranked by passage id descending",
            },
            "bar": {
                "claim": "binary embeddings with rescoring keep >= 95% of float MRR@10 at >= 16x less memory",
                "rows": compact.reset_index()[["variant", kept]]
                .rename(columns={kept: "meets the bar"})
                .to_dict("records"),
                "holds": bool(compact.loc[compact["rescore multiplier"].notna(), kept].any()),
            },
            "results": table.reset_index().to_dict("records"),
            "provenance": provenance(
                profile="none",
                data_files=sorted({str(f) for f in (*data.files, *sts.files)}),
                model=encoder.describe(),
                extra={"command": ["python", *sys.argv], "threads": args.threads},
            ),
        }
        print(f"wrote {write_json(args.json, payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
