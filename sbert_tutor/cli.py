"""The ``sbert-tutor`` command line: thin over the library.

sbert-tutor eval-sts --model NAME_OR_PATH --tasks all|sts12,stsb,... [--aggregation all] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _json_ready(value: Any) -> Any:
    """NaN is not JSON: write it as null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    return value


def write_json(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write a results file (UTF-8, indented, NaN as null)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(_json_ready(payload), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return out


def _eval_sts(args: argparse.Namespace) -> int:
    from sbert_tutor.encoder import SentenceEncoder
    from sbert_tutor.evaluation.sts import evaluate_sts

    encoder = SentenceEncoder.from_pretrained(
        args.model, pooling=args.pooling, max_seq_length=args.max_seq_length, device=args.device
    )
    print(
        f"model: {encoder.name} (from {encoder.source}; pooling={encoder.pooling})", file=sys.stderr
    )
    table = evaluate_sts(
        encoder,
        tasks=args.tasks,
        aggregation=args.aggregation,
        split=args.split,
        variant=args.variant,
        batch_size=args.batch_size,
    )
    print(table.attrs["note"])
    print(table.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    if args.json:
        payload = {
            "model": args.model,
            "aggregation": args.aggregation,
            "results": table.attrs["details"],
            "provenance": {**table.attrs["provenance"], "command": sys.argv},
        }
        print(f"wrote {write_json(args.json, payload)}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sbert-tutor", description="Sentence-BERT from first principles."
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log where models and data come from"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    sts = sub.add_parser("eval-sts", help="Spearman/Pearson of cosine similarity on STS tasks")
    sts.add_argument("--model", required=True, help="hub name or local folder")
    sts.add_argument(
        "--tasks", default="all", help="all, or comma-separated: sts12..sts16, stsb, sickr"
    )
    sts.add_argument("--aggregation", default="all", choices=("all", "mean", "wmean"))
    sts.add_argument(
        "--split", default="test", choices=("train", "dev", "test"), help="for stsb/sickr"
    )
    sts.add_argument(
        "--variant", default="raw", choices=("raw", "senteval_tok"), help="STS12-16 text"
    )
    sts.add_argument(
        "--pooling",
        default=None,
        choices=("mean", "max", "cls"),
        help="override the model's pooling",
    )
    sts.add_argument("--max-seq-length", type=int, default=None)
    sts.add_argument("--batch-size", type=int, default=64)
    sts.add_argument(
        "--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)"
    )
    sts.add_argument(
        "--json", default=None, help="write the full results (all aggregations, subsets) here"
    )
    sts.set_defaults(func=_eval_sts)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s"
    )
    try:
        return int(args.func(args))
    except (ValueError, FileNotFoundError, OSError, NotImplementedError) as exc:
        print(f"sbert-tutor: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
