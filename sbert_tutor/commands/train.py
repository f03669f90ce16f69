"""``sbert-tutor train``: fine-tune a sentence encoder with one loss; write the model and a log.

::

    sbert-tutor train --model NAME_OR_PATH --loss cosine --train stsb --out DIR [--max-steps N]
    sbert-tutor train --model NAME_OR_PATH --loss cached_mnrl --mini-batch-size 32 \
        --batch-size 256 --train triplets.tsv --out DIR

``DIR`` becomes a sentence-transformers folder (``sbert-tutor eval-sts --model DIR`` reads it) with
``training_log.json``: settings, the loss curve, evaluation points, timing and provenance.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sbert_tutor.commands.common import add_model_options, load_encoder, write_json

__all__: list[str] = []

#: What ``sbert-tutor train --help`` says about a training file (the reader:
#: ``sbert_tutor.training.sources.read_training_file``); ``sbert-tutor train --help`` shows it.
#:
#: :meta hide-value:
FILE_FORMAT = """\
A training file is .tsv (or .txt), .csv or .jsonl (.json: one JSON object a line). A .tsv/.csv
file starts with a header line naming its columns; every line has one field per column. In a
.tsv file quote characters are text (no quoting; a text may not hold a tab); a .csv file follows
the usual CSV quoting ("a, b" is one field). The label is the column named label, score, labels
or scores (in any case), or the one --label-column names; the texts are the other columns, in
the order of the file, or those --text-columns names (matched in any case). Example (cosine,
scores 0-5, so --score-range 0 5):

    sentence1<TAB>sentence2<TAB>score
    A man is playing a guitar.<TAB>A person plays the guitar.<TAB>4.6
    A cat sleeps.<TAB>The stock market fell.<TAB>0.2"""

_LOG_FILE = "training_log.json"
#: Flags that set the objective option of the same name, for every objective that takes it
#: (any other option: ``--loss-option NAME=VALUE``).
_OPTION_FLAGS = (
    "hard_negatives",
    "num_positives",
    "num_negatives",
    "score_range",
    "mini_batch_size",
)


class _LossNames(Sequence[str]):
    """The registered loss names, read when argparse first needs them.

    The registry lives with the objectives, which import torch; reading it lazily keeps
    ``sbert-tutor --help`` (and every other command) from paying for that import.
    """

    def _names(self) -> tuple[str, ...]:
        from sbert_tutor.training.objectives import OBJECTIVES

        return tuple(OBJECTIVES)

    def __getitem__(self, index):  # type: ignore[override]
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, value: object) -> bool:
        return value in self._names()


def _parse_option(text: str) -> tuple[str, Any]:
    """``"scale=20"`` -> ``("scale", 20)``: the value is a Python literal (number, bool, tuple)
    where it reads as one, else the string."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"--loss-option must look like NAME=VALUE, got {text!r}")
    try:
        parsed = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        parsed = value.strip()
    return name.strip().replace("-", "_"), parsed


def _parse_columns(text: str) -> list[str]:
    """``"question,answer"`` -> ``["question", "answer"]``."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(
            f"--text-columns must be comma-separated column names like question,answer, got "
            f"{text!r}"
        )
    return names


def objective_options(args: argparse.Namespace) -> dict[str, Any]:
    """The objective options given on the command line (flags, then ``--loss-option``)."""
    options = {name: getattr(args, name) for name in _OPTION_FLAGS}
    options = {k: v for k, v in options.items() if v is not None and v is not False}
    if options.get("score_range") is not None:
        options["score_range"] = tuple(options["score_range"])
    options.update(dict(args.loss_option or ()))
    return options


def run(args: argparse.Namespace) -> int:
    from sbert_tutor.training import distributed

    # under torchrun: one GPU per process, or a clear error before any child touches CUDA
    args.device = distributed.process_device(args.device)
    distributed.init_from_env(device=args.device)
    try:
        code = _train(args)
    except BaseException:
        distributed.close(wait=False)  # the others may be stuck in a collective: do not wait
        raise
    distributed.close()  # every process waits for the others, then leaves the group
    return code


def _train(args: argparse.Namespace) -> int:
    from sbert_tutor.evaluation.sts import parse_tasks
    from sbert_tutor.training import TrainingConfig, distributed
    from sbert_tutor.training.recipe import fit
    from sbert_tutor.training.sources import check_training_source

    check_training_source(args.train)  # typos in names fail here, before any model loads
    if args.eval_file is not None:
        check_training_source(args.eval_file)
    elif args.eval_steps:
        parse_tasks(args.eval_task)

    config = TrainingConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup_ratio=args.warmup_ratio,
        max_steps=args.max_steps,
        max_grad_norm=args.max_grad_norm if args.max_grad_norm > 0 else None,
        seed=args.seed,
        amp=None if args.amp == "none" else args.amp,
        eval_steps=args.eval_steps,
        save_steps=args.save_steps,
        checkpoint_dir=str(Path(args.out) / "checkpoints") if args.save_steps else None,
        show_progress_bar=not args.no_progress,
    )
    encoder = load_encoder(args)
    result = fit(
        encoder,
        args.loss,
        args.train,
        config,
        objective_options=objective_options(args),
        max_examples=args.max_examples,
        eval_task=args.eval_task if args.eval_steps and args.eval_file is None else None,
        eval_data=args.eval_file,
        text_columns=args.text_columns,
        label_column=args.label_column,
        resume_from=args.resume,
        provenance={"command": sys.argv},
    )
    if distributed.rank() != 0:  # under torchrun, process 0 writes the model and the log
        return 0
    log = {
        "model": args.model,
        **result.log,
        "train_data": {"name": args.train, **result.log["train_data"]},
    }
    out = result.model.save(args.out)
    log_path = write_json(
        Path(args.log) if args.log else out / _LOG_FILE, {**log, "output": str(out)}
    )
    record = result.record
    print(
        f"{log['steps_done']} steps in {result.seconds:.1f} s; "
        f"loss {record.steps[0]['loss']:.4f} -> {record.steps[-1]['loss']:.4f}"
    )
    if record.evals and log["evaluator"]:
        metric = log["evaluator"]
        print(
            f"{metric}: {record.evals[0][metric]:.2f} (step {record.evals[0]['step']}) -> "
            f"{record.evals[-1][metric]:.2f} (step {record.evals[-1]['step']})"
        )
    print(f"wrote the model to {out} and the log to {log_path}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "train",
        help="fine-tune a sentence encoder (model folder + JSON log with the loss curve)",
        description="Fine-tune a sentence encoder with one loss; write the model folder and a "
        "JSON log.\n\n" + FILE_FORMAT,
    )
    add_model_options(parser)
    parser.set_defaults(batch_size=16)
    parser.add_argument(
        "--loss", required=True, choices=_LossNames(), metavar="LOSS", help="%(choices)s"
    )
    parser.add_argument(
        "--train",
        required=True,
        help="stsb, sick, nli, allnli, snli, multinli, or a .tsv/.csv/.jsonl file (format above)",
    )
    parser.add_argument(
        "--label-column",
        default=None,
        metavar="NAME",
        help="the file's label column (default: the one called label, score, labels or scores; "
        "any case)",
    )
    parser.add_argument(
        "--text-columns",
        type=_parse_columns,
        default=None,
        metavar="A,B,...",
        help="the file's text columns, in this order (default: every other column, in file order)",
    )
    parser.add_argument("--out", required=True, help="folder for the trained model and its log")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--max-steps", type=int, default=None, help="overrides --epochs")
    parser.add_argument("--warmup-ratio", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--max-grad-norm", type=float, default=1.0, help="0 disables clipping")
    parser.add_argument(
        "--amp",
        default="none",
        choices=("none", "fp16", "bf16", "auto"),
        help="mixed precision on CUDA (auto: bf16 on compute capability >= 8.0, else fp16)",
    )
    parser.add_argument(
        "--eval-steps",
        type=int,
        default=None,
        help="evaluate on --eval-file or --eval-task dev every N steps (and before/after training)",
    )
    parser.add_argument(
        "--eval-file",
        default=None,
        metavar="FILE",
        help="your own dev pairs (two text columns and a score, same formats as --train): "
        "Spearman/Pearson of the similarity before and after training (and every "
        "--eval-steps), logged as dev_spearman / dev_pearson",
    )
    parser.add_argument("--eval-task", default="stsb", help="STS task for --eval-steps (dev split)")
    parser.add_argument("--save-steps", type=int, default=None, help="checkpoint every N steps")
    parser.add_argument("--resume", default=None, help="checkpoint folder to resume from")
    parser.add_argument(
        "--max-examples", type=int, default=None, help="train on a seeded random subset"
    )
    options = parser.add_argument_group(
        "objective options", "each sets the option of that name of the chosen --loss"
    )
    options.add_argument(
        "--hard-negatives", action="store_true", help="on NLI, add the contradiction (e.g. mnrl)"
    )
    options.add_argument("--num-positives", type=int, help="positives a group (e.g. supmpn)")
    options.add_argument("--num-negatives", type=int, help="negatives a group (e.g. supmpn)")
    options.add_argument(
        "--mini-batch-size",
        type=int,
        help="texts a forward pass, the batch's memory bound (e.g. cached_mnrl)",
    )
    options.add_argument(
        "--score-range",
        type=float,
        nargs=2,
        metavar=("LOW", "HIGH"),
        help="the scale of the scores of a file (e.g. cosine)",
    )
    options.add_argument(
        "--loss-option",
        type=_parse_option,
        action="append",
        metavar="NAME=VALUE",
        help="any other option of the objective, e.g. scale=20 (repeatable)",
    )
    parser.add_argument(
        "--log", default=None, help=f"where to write the log (default DIR/{_LOG_FILE})"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)
