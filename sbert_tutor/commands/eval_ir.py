"""``sbert-tutor eval-ir``: retrieval metrics (MRR, nDCG, recall, ...) on MS MARCO / TREC DL."""

from __future__ import annotations

import argparse
import sys

from sbert_tutor.commands.common import add_model_options, load_encoder, write_json

__all__: list[str] = []

#: The measures printed first (and the ones papers report for these datasets).
_HEADLINE = ("mrr@10", "ndcg@10", "recall@10")


def _parse_ks(text: str) -> tuple[int, ...]:
    """``"1,5,10"`` -> ``(1, 5, 10)``, with an error that says what a valid value looks like."""
    try:
        ks = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--ks must be comma-separated positive integers like 1,5,10, got {text!r}"
        ) from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(
            f"--ks must be comma-separated positive integers like 1,5,10, got {text!r}"
        )
    return ks


def run(args: argparse.Namespace) -> int:
    from sbert_tutor.data import msmarco
    from sbert_tutor.evaluation.retrieval import evaluate_retrieval

    data = msmarco.load_msmarco(args.dataset, corpus=args.corpus)
    threshold = (
        data.relevance_threshold if args.relevance_threshold is None else args.relevance_threshold
    )
    encoder = load_encoder(args)
    result = evaluate_retrieval(
        encoder,
        data.queries,
        data.corpus,
        data.qrels,
        ks=args.ks,
        score=args.score,
        top_k=args.top_k,
        batch_size=args.batch_size,
        corpus_chunk_size=args.corpus_chunk_size,
        relevance_threshold=threshold,
        data_files=data.files,
        provenance={"dataset": data.describe(), "notes": list(data.notes)},
    )
    results = result.results
    print(f"{data.name} ({data.corpus_name} corpus): {result.note}")
    for note in data.notes:
        print(f"note: {note}")
    print(result.table.to_string(float_format=lambda x: f"{x:.4f}"))
    print("  ".join(f"{m}={results[m]:.4f}" for m in _HEADLINE if m in results))
    if args.json:
        payload = {
            "model": args.model,
            "dataset": data.name,
            "corpus": data.corpus_name,
            "relevance_threshold": threshold,
            "n_queries": result.n_queries,
            "n_passages": result.n_passages,
            "results": results,
            "provenance": {**result.provenance, "command": sys.argv},
        }
        print(f"wrote {write_json(args.json, payload)}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval-ir", help="retrieval metrics (MRR@k, nDCG@k, recall@k, ...) on MS MARCO / TREC DL"
    )
    add_model_options(parser)
    parser.add_argument(
        "--dataset",
        required=True,
        help="msmarco-dev-subset or trec-dl19 (offline, on corpus_mini), msmarco-dev or "
        "trec-dl20 (full collection, streamed from the hub)",
    )
    parser.add_argument(
        "--corpus",
        default=None,
        choices=("mini", "full"),
        help="mini (16,799 passages, data folder) or full (8.8M, streamed from the hub); "
        "default: the dataset's own",
    )
    parser.add_argument("--ks", type=_parse_ks, default=(1, 5, 10), help="cutoffs, e.g. 1,5,10")
    parser.add_argument("--score", default="cosine", choices=("cosine", "dot", "euclidean"))
    parser.add_argument(
        "--top-k", type=int, default=None, help="passages retrieved per query (default: max k)"
    )
    parser.add_argument(
        "--corpus-chunk-size",
        type=int,
        default=50_000,
        help="passages encoded and searched at a time",
    )
    parser.add_argument(
        "--relevance-threshold",
        type=int,
        default=None,
        help="lowest grade counted relevant by binary measures (default: 2 for TREC DL, else 1)",
    )
    parser.add_argument("--json", default=None, help="write results and provenance here")
    parser.set_defaults(func=run)
