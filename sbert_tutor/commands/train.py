"""``sbert-tutor train``: fine-tune a sentence encoder with one loss; write the model and a log.

sbert-tutor train --model NAME_OR_PATH --loss cosine --train stsb --out DIR [--max-steps N]

``DIR`` becomes a sentence-transformers folder (``sbert-tutor eval-sts --model DIR`` reads it) with
``training_log.json``: settings, the loss curve, evaluation points, timing and provenance.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sbert_tutor.commands.common import add_model_options, load_encoder, write_json

LOSSES = ("cosine", "softmax", "triplet", "mnrl", "supmpn", "ce", "contrastive")
LOG_FILE = "training_log.json"


def run(args: argparse.Namespace) -> int:
    from sbert_tutor import distributed
    from sbert_tutor.training import TrainingConfig
    from sbert_tutor.training.recipe import fit

    # under torchrun: one GPU per process, or a clear error before any child touches CUDA
    args.device = distributed.process_device(args.device)
    distributed.init_from_env(device=args.device)

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
        show_progress=not args.no_progress,
    )
    encoder = load_encoder(args)
    result = fit(
        encoder,
        args.loss,
        args.train,
        config,
        max_examples=args.max_examples,
        eval_task=args.eval_task if args.eval_steps else None,
        hard_negatives=args.hard_negatives,
        num_positives=args.num_positives,
        num_negatives=args.num_negatives,
        score_range=tuple(args.score_range) if args.score_range is not None else None,
        resume_from=args.resume,
        command=sys.argv,
    )
    if distributed.rank() != 0:  # under torchrun, process 0 writes the model and the log
        return 0
    log = {
        "model": args.model,
        **result.log,
        "train_data": {"name": args.train, **result.log["train_data"]},
    }
    out = result.encoder.save(args.out)
    log_path = write_json(
        Path(args.log) if args.log else out / LOG_FILE, {**log, "output": str(out)}
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
        "train", help="fine-tune a sentence encoder (model folder + JSON log with the loss curve)"
    )
    add_model_options(parser)
    parser.set_defaults(batch_size=16)
    parser.add_argument("--loss", required=True, choices=LOSSES)
    parser.add_argument(
        "--train",
        required=True,
        help="stsb, sick, nli, allnli, snli, multinli, or a .tsv/.csv/.jsonl file",
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
        help="evaluate on --eval-task dev every N steps (and before/after training)",
    )
    parser.add_argument("--eval-task", default="stsb", help="STS task for --eval-steps (dev split)")
    parser.add_argument("--save-steps", type=int, default=None, help="checkpoint every N steps")
    parser.add_argument("--resume", default=None, help="checkpoint folder to resume from")
    parser.add_argument(
        "--max-examples", type=int, default=None, help="train on a seeded random subset"
    )
    parser.add_argument(
        "--hard-negatives", action="store_true", help="mnrl on NLI: add the contradiction"
    )
    parser.add_argument("--num-positives", type=int, default=2, help="supmpn: positives a group")
    parser.add_argument("--num-negatives", type=int, default=2, help="supmpn: negatives a group")
    parser.add_argument(
        "--score-range",
        type=float,
        nargs=2,
        default=None,
        metavar=("LOW", "HIGH"),
        help="cosine on a file: the scale of its scores",
    )
    parser.add_argument(
        "--log", default=None, help=f"where to write the log (default DIR/{LOG_FILE})"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)
