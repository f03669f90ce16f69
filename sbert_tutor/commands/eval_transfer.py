"""``sbert-tutor eval-transfer``: SentEval's seven transfer tasks (logistic regression on embeddings)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from sbert_tutor.commands.common import add_model_options, load_encoder, write_json

__all__: list[str] = []


def _parse_l2_grid(text: str) -> tuple[float, ...]:
    """``"1e-5,1e-4"`` -> ``(1e-05, 0.0001)``, with an error that shows a valid value."""
    try:
        grid = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        grid = ()
    if not grid or min(grid) <= 0:
        raise argparse.ArgumentTypeError(
            f"--l2-grid must be comma-separated positive numbers like 1e-5,1e-4,1e-3, got {text!r}"
        )
    return grid


def _default_jobs() -> int:
    """The cores this process may use (its CPU affinity), at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(8, cores))


def run(args: argparse.Namespace) -> int:
    from sbert_tutor.data.senteval import parse_transfer_tasks
    from sbert_tutor.evaluation.transfer import evaluate_transfer

    tasks = parse_transfer_tasks(args.tasks)  # a typo in --tasks fails here, before any model loads
    encoder = load_encoder(args)
    load_before = os.getloadavg()
    start = time.perf_counter()
    result = evaluate_transfer(
        encoder,
        tasks=tasks,
        l2_grid=args.l2_grid,
        k=args.kfold,
        seed=args.seed,
        batch_size=args.batch_size,
        max_items=args.max_items,
        n_jobs=args.jobs,
        classifier=args.classifier,
    )
    seconds = time.perf_counter() - start
    print(
        "accuracy x100 of a logistic regression on frozen embeddings (SentEval protocol; "
        f"classifier: {args.classifier})"
    )
    if args.max_items is not None:
        print(
            f"note: at most {args.max_items} items a split (a quick subsample, not the benchmark)"
        )
    print(result.table.to_string(index=False, float_format=lambda x: f"{x:.2f}", na_rep=""))
    print(result.timing().to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    print(f"total {seconds:.1f} s", file=sys.stderr)
    if args.json:
        payload = {
            "model": args.model,
            **result.to_json(),
            "seconds": seconds,
            # 1/5/15-minute load averages: timings on a shared machine need them to be read
            "load_average": {"start": load_before, "end": os.getloadavg()},
        }
        payload["provenance"] = {**payload["provenance"], "command": sys.argv}
        print(f"wrote {write_json(args.json, payload)}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval-transfer",
        help="SentEval transfer tasks: logistic regression on frozen embeddings (SBERT Table 5)",
    )
    add_model_options(parser)
    parser.add_argument(
        "--tasks",
        default="all",
        help="all, or comma-separated: mr, cr, subj, mpqa, sst2, trec, mrpc",
    )
    parser.add_argument(
        "--l2-grid",
        type=_parse_l2_grid,
        default=None,
        help="L2 strengths per item to choose from (default: SentEval's 1e-5,1e-4,1e-3,1e-2)",
    )
    parser.add_argument("--kfold", type=int, default=10, help="folds of each cross-validation")
    parser.add_argument("--seed", type=int, default=1111, help="fold shuffling (SentEval: 1111)")
    parser.add_argument(
        "--max-items",
        type=int,
        default=None,
        help="at most this many items a split (stratified subsample) for a quick run",
    )
    parser.add_argument(
        "--classifier",
        choices=("senteval", "lbfgs"),
        default="senteval",
        help="senteval: SentEval's own Adam-trained linear layer with early stopping (its "
        "numbers; default); lbfgs: scikit-learn trained to convergence (the optimum of the same "
        "objective, up to ~2 points higher on some tasks)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=_default_jobs(),
        help="processes for the classifiers: the models of each grid (senteval) or the "
        "cross-validation folds (lbfgs); results do not depend on it (default: the cores "
        "this process may use, at most 8)",
    )
    parser.add_argument("--json", default=None, help="write the table, details and provenance here")
    parser.set_defaults(func=run)
