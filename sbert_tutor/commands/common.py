"""Helpers shared by the subcommands: JSON results files and common options."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

__all__ = ["write_json"]


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


def _pooling_arg(text: str) -> str:
    """``--pooling``: a mode of :mod:`sbert_tutor.encoders.pooling`, or several joined by '+'."""
    from sbert_tutor.encoders.pooling import check_pooling

    try:
        return check_pooling(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--pooling``, ``--max-seq-length``, ``--batch-size``, ``--device``."""
    parser.add_argument(
        "--model",
        required=True,
        help="hub name, local folder (any sentence-transformers version) or plain HF model",
    )
    parser.add_argument(
        "--pooling",
        default=None,
        type=_pooling_arg,
        metavar="MODE",
        help="override the model's pooling: mean, max, cls, mean_sqrt_len_tokens, weightedmean, "
        "lasttoken, or several joined by '+' (default: the model's own; mean for a plain model)",
    )
    parser.add_argument(
        "--max-seq-length",
        type=int,
        default=None,
        help="truncate longer inputs (default: the model's own)",
    )
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per forward pass")
    parser.add_argument(
        "--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)"
    )


def load_encoder(args: argparse.Namespace):
    """The encoder named by ``--model`` with the overrides given, announcing its source on stderr."""
    import sys

    from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

    encoder = SentenceEncoder.from_pretrained(
        args.model, pooling=args.pooling, max_seq_length=args.max_seq_length, device=args.device
    )
    print(
        f"model: {encoder.name} (from {encoder.source}; pooling={encoder.pooling})", file=sys.stderr
    )
    return encoder
