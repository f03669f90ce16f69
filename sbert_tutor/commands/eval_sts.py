"""``sbert-tutor eval-sts``: Spearman/Pearson of cosine similarity on STS tasks."""

from __future__ import annotations

import argparse
import sys

from sbert_tutor.commands.common import add_model_options, load_encoder, write_json

__all__: list[str] = []


def run(args: argparse.Namespace) -> int:
    from sbert_tutor.evaluation.sts import evaluate_sts, parse_tasks

    tasks = parse_tasks(args.tasks)  # a typo in --tasks fails here, before any model loads
    encoder = load_encoder(args)
    result = evaluate_sts(
        encoder,
        tasks=tasks,
        aggregation=args.aggregation,
        split=args.split,
        variant=args.variant,
        batch_size=args.batch_size,
    )
    print(result.note)
    print(result.table.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    if args.json:
        payload = {
            "model": args.model,
            "aggregation": args.aggregation,
            "results": result.details,
            "provenance": {**result.provenance, "command": sys.argv},
        }
        print(f"wrote {write_json(args.json, payload)}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("eval-sts", help="Spearman/Pearson of cosine similarity on STS tasks")
    add_model_options(parser)
    parser.add_argument(
        "--tasks", default="all", help="all, or comma-separated: sts12..sts16, stsb, sickr"
    )
    parser.add_argument(
        "--aggregation",
        default="all",
        choices=("all", "mean", "wmean"),
        help="STS12-16: all = subsets concatenated; mean / wmean = (weighted) mean of subsets",
    )
    parser.add_argument(
        "--split", default="test", choices=("train", "dev", "test"), help="for stsb/sickr"
    )
    parser.add_argument(
        "--variant", default="raw", choices=("raw", "senteval_tok"), help="STS12-16 text"
    )
    parser.add_argument(
        "--json", default=None, help="write the full results (all aggregations, subsets) here"
    )
    parser.set_defaults(func=run)
