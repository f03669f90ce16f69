"""The ``sbert-tutor`` command line: thin over the library, one module per subcommand.

::

    sbert-tutor eval-sts --model NAME_OR_PATH --tasks all|sts12,stsb,... [--aggregation all] [--json PATH]
    sbert-tutor eval-ir  --model NAME_OR_PATH --dataset trec-dl19 [--ks 1,5,10] [--json PATH]
    sbert-tutor train    --model NAME_OR_PATH --loss cosine --train stsb --out DIR
    sbert-tutor mine     --model NAME_OR_PATH --pairs pairs.tsv --out triplets.tsv

``sbert-tutor COMMAND --help`` shows every option with its default and examples.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from sbert_tutor import __version__
from sbert_tutor.commands import eval_ir, eval_sts, eval_transfer, mine, train
from sbert_tutor.validation import OptionError

__all__ = ["main"]

#: Subcommand modules, each with ``register(subparsers)``; add new commands here.
_COMMANDS = [eval_sts, eval_ir, eval_transfer, train, mine]

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: Examples shown at the end of each subcommand's ``--help``.
_EXAMPLES = {
    "eval-sts": [
        f"sbert-tutor eval-sts --model {MODEL} --tasks all --json sts.json",
        f"sbert-tutor eval-sts --model {MODEL} --tasks sts12,sts13 --aggregation wmean "
        "--variant senteval_tok",
        "sbert-tutor eval-sts --model ./my-model --tasks stsb --split dev",
    ],
    "eval-ir": [
        f"sbert-tutor eval-ir --model {MODEL} --dataset trec-dl19",
        f"sbert-tutor eval-ir --model {MODEL} --dataset msmarco-dev-subset --ks 1,10,100 "
        "--json ir.json",
    ],
    "eval-transfer": [
        f"sbert-tutor eval-transfer --model {MODEL} --tasks all --json transfer.json",
        f"sbert-tutor eval-transfer --model {MODEL} --tasks mr,trec --max-items 400 --kfold 5",
        f"sbert-tutor eval-transfer --model {MODEL} --tasks cr --classifier lbfgs",
    ],
    "train": [
        f"sbert-tutor train --model {MODEL} --loss cosine --train stsb --out m --max-steps 100",
        "sbert-tutor train --model bert-base-uncased --loss mnrl --train nli --batch-size 64 --out m",
        "sbert-tutor train --model ./m --loss cosine --train my_pairs.tsv --score-range 0 1 --out m2",
        "sbert-tutor train --model ./m --loss cached_mnrl --train triplets.tsv --batch-size 256 "
        "--mini-batch-size 32 --out m3",
    ],
    "mine": [
        f"sbert-tutor mine --model {MODEL} --pairs pairs.tsv --corpus passages.tsv "
        "--relative-margin 0.05 --num-negatives 3 --out triplets.tsv",
        f"sbert-tutor mine --model {MODEL} --pairs pairs.tsv --cross-encoder "
        "cross-encoder/ms-marco-MiniLM-L6-v2 --absolute-margin 0 --teacher-margins --out distil.tsv",
    ],
}


#: The flag that sets each keyword of the library (for errors: ``cli_spelling``). An
#: objective's other options are ``--loss-option NAME=VALUE``.
_FLAGS = {
    "train": "--train",
    "loss": "--loss",
    "score_range": "--score-range",
    "hard_negatives": "--hard-negatives",
    "num_positives": "--num-positives",
    "num_negatives": "--num-negatives",
    "mini_batch_size": "--mini-batch-size",
    "label_column": "--label-column",
    "text_columns": "--text-columns",
    "eval_data": "--eval-file",
    "max_examples": "--max-examples",
    "max_steps": "--max-steps",
    "batch_size": "--batch-size",
    "epochs": "--epochs",
    "lr": "--lr",
    "warmup_ratio": "--warmup-ratio",
    "max_grad_norm": "--max-grad-norm",
    "eval_steps": "--eval-steps",
    "save_steps": "--save-steps",
    "max_items": "--max-items",
    "k": "--kfold",
}


def cli_spelling(name: str, value: Any) -> str:
    """An option as the command line writes it: ``--score-range 0 5``, ``--text-columns a,b``,
    ``--loss-option scale=20`` for an objective option without a flag of its own."""
    flag = _FLAGS.get(name)
    if flag is None:
        return f"--loss-option {name}={value!r}"
    if value is True:
        return flag
    if name == "text_columns":
        return f"{flag} {','.join(map(str, value))}"
    if isinstance(value, (tuple, list)):
        return f"{flag} {' '.join(map(str, value))}"
    return f"{flag} {value}"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows each option's default (when it has one worth showing); keeps the examples' lines."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if not _shows_default(action) or "default" in text:
            return text
        return f"{text} (default: %(default)s)".strip()


def _shows_default(action: argparse.Action) -> bool:
    default = action.default
    return bool(action.option_strings) and default not in (None, False, argparse.SUPPRESS)


def _with_defaults(parser: argparse.ArgumentParser) -> None:
    """Give every option without help a line, so that its default is shown."""
    for action in parser._actions:
        if action.help is None and _shows_default(action):
            action.help = "(default: %(default)s)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sbert-tutor",
        description="Sentence-BERT from first principles: evaluate and train sentence encoders.",
        epilog="Run `sbert-tutor COMMAND --help` for a command's options, defaults and examples.",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"sbert-tutor {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log where models and data come from"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.register(sub)
    for name, sub_parser in sub.choices.items():
        sub_parser.formatter_class = _HelpFormatter
        _with_defaults(sub_parser)
        if name in _EXAMPLES and not sub_parser.epilog:
            sub_parser.epilog = "examples:\n" + "\n".join(f"  {e}" for e in _EXAMPLES[name])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``sbert-tutor`` command: parse ``argv`` (the command line when ``None``), run the
    subcommand, return its exit status."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s"
    )
    try:
        return int(args.func(args))
    except OptionError as exc:  # advice in the command line's terms: flags, not keywords
        print(f"sbert-tutor: error: {exc.spelled(cli_spelling)}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError, OSError, NotImplementedError) as exc:
        print(f"sbert-tutor: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
