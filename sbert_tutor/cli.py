"""The ``sbert-tutor`` command line: thin over the library, one module per subcommand.

sbert-tutor eval-sts --model NAME_OR_PATH --tasks all|sts12,stsb,... [--aggregation all] [--json PATH]
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from sbert_tutor.commands import eval_ir, eval_sts, eval_transfer, train

#: Subcommand modules, each with ``register(subparsers)``; add new commands here.
COMMANDS = [eval_sts, eval_ir, eval_transfer, train]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sbert-tutor", description="Sentence-BERT from first principles."
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log where models and data come from"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
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
