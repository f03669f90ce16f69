"""Helpers shared by the subcommands: JSON results files and common options."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any


def json_ready(value: Any) -> Any:
    """NaN is not JSON: write it as null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    return value


def write_json(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write a results file (UTF-8, indented, NaN as null)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(json_ready(payload), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return out


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """--model, --pooling, --max-seq-length, --batch-size, --device."""
    parser.add_argument("--model", required=True, help="hub name or local folder")
    parser.add_argument(
        "--pooling",
        default=None,
        choices=("mean", "max", "cls"),
        help="override the model's pooling",
    )
    parser.add_argument("--max-seq-length", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)"
    )


def load_encoder(args: argparse.Namespace):
    """The encoder named by --model with the overrides given, announcing its source on stderr."""
    import sys

    from sbert_tutor.encoder import SentenceEncoder

    encoder = SentenceEncoder.from_pretrained(
        args.model, pooling=args.pooling, max_seq_length=args.max_seq_length, device=args.device
    )
    print(
        f"model: {encoder.name} (from {encoder.source}; pooling={encoder.pooling})", file=sys.stderr
    )
    return encoder
