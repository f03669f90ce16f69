"""Peak memory of one training step: ``mnrl`` against ``cached_mnrl`` (GradCache), CPU or GPU.

Not a test: a measurement. Each variant runs in a fresh Python process (their peaks must not
mix): it loads the offline all-MiniLM-L6-v2, builds the :class:`~sbert_tutor.training.Trainer`
on ``--batch-size`` real (query, relevant passage) pairs of the MS MARCO dev subset (``--data
msmarco``) or SNLI (premise, entailed hypothesis) pairs (``--data nli``), then resets the
process's peak resident set (``/proc/self/clear_refs``, so model loading does not count) and
runs one optimizer step on the whole batch in training mode (dropout on; ``--no-dropout``: the
two variants' losses are then equal, a check of the run). Reported per variant:
resident memory before the step, the peak during it (``VmHWM``), their difference (what the step
itself needed: activations, gradients, AdamW's state), the step's wall time and its loss.

``cached_mnrl`` embeds ``--mini-batch-size`` texts a forward pass, so its activations are those
of a mini-batch; ``mnrl`` holds the activations of all ``2 x batch`` texts at once.

Example::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/cached_mnrl_memory.py \\
        --batch-size 256 --mini-batch-size 32 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from peak_memory import current_rss, peak_rss, reset_peak

REPO = Path(__file__).resolve().parents[1]
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
VARIANTS = ("mnrl", "cached_mnrl")


def training_pairs(data: str, n: int) -> tuple[list[tuple[str, str]], list[str]]:
    """The first ``n`` training pairs and the data files they came from."""
    if data == "msmarco":
        from sbert_tutor.data.msmarco import load_msmarco

        dev = load_msmarco("msmarco-dev-subset")
        pairs = []
        for qid in sorted(dev.queries):
            pid = sorted(p for p, grade in dev.qrels[qid].items() if grade >= 1)[0]
            pairs.append((dev.queries[qid], dev.corpus[pid]))
        files = [str(f) for f in dev.files]
    else:
        import warnings

        from sbert_tutor.data.nli import entailment_pairs, load_nli_train

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SNLI dev+test stand-in is fine for memory
            nli = load_nli_train()
        table = entailment_pairs(nli)
        pairs = list(zip(table.table["anchor"], table.table["positive"], strict=True))
        files = [str(f) for f in table.files]
    if len(pairs) < n:
        raise SystemExit(f"--data {data} has {len(pairs)} pairs, fewer than --batch-size {n}")
    return pairs[:n], files


def run_worker(args: argparse.Namespace) -> None:
    import torch

    from sbert_tutor import SentenceEncoder
    from sbert_tutor.training import Trainer, TrainingConfig, make_objective, set_seed

    torch.set_num_threads(args.threads)
    encoder = SentenceEncoder.from_pretrained(MODEL, device="cpu")
    if args.max_seq_length:
        encoder.max_seq_length = args.max_seq_length
    pairs, _ = training_pairs(args.data, args.batch_size)
    options = {"mini_batch_size": args.mini_batch_size} if args.worker == "cached_mnrl" else {}
    config = TrainingConfig(
        batch_size=args.batch_size, max_steps=1, seed=0, lr=2e-5, show_progress_bar=False
    )
    trainer = Trainer(encoder, make_objective(args.worker, options=options), pairs, config)
    encoder.train(not args.no_dropout)
    set_seed(0)  # the same random state (dropout masks) in every run of a variant
    reset = reset_peak()
    before = current_rss()
    start = time.perf_counter()
    loss, grad_norm, _ = trainer.train_step(list(range(args.batch_size)))
    seconds = time.perf_counter() - start
    peak = peak_rss()
    print(
        json.dumps(
            {
                "variant": args.worker,
                "rss_before_step_bytes": before,
                "peak_rss_bytes": peak,
                "peak_minus_before_bytes": peak - before,
                "peak_was_reset": reset,
                "step_seconds": seconds,
                "loss": loss,
                "grad_norm": grad_norm,
                "max_seq_length": encoder.max_seq_length,
                "dropout": not args.no_dropout,
                "token_lengths": {
                    "max": int(trainer.lengths.max()),
                    "mean": float(trainer.lengths.mean()),
                },
            }
        )
    )


def run_cuda(args: argparse.Namespace) -> dict[str, Any]:
    """GPU memory of one training step per batch size and variant, all in this process: the
    allocator's peak (``torch.cuda.max_memory_allocated``) is reset before each step, so the
    peaks do not mix; ``peak_minus_before_bytes`` is what the step itself allocated."""
    import torch

    from sbert_tutor import SentenceEncoder
    from sbert_tutor.provenance import provenance
    from sbert_tutor.training import Trainer, TrainingConfig, make_objective, set_seed

    sizes = [int(b) for b in str(args.batch_size).split(",")]
    _, files = training_pairs(args.data, max(sizes))
    record = provenance(data_files=files, extra={"command": sys.argv})
    device = torch.device(args.device)
    rows = []
    for batch_size in sizes:
        pairs, _ = training_pairs(args.data, batch_size)
        for variant in args.variants:
            encoder = SentenceEncoder.from_pretrained(MODEL, device=str(device))
            if args.max_seq_length:
                encoder.max_seq_length = args.max_seq_length
            options = {"mini_batch_size": args.mini_batch_size} if variant == "cached_mnrl" else {}
            config = TrainingConfig(
                batch_size=batch_size, max_steps=1, seed=0, lr=2e-5, show_progress_bar=False
            )
            trainer = Trainer(encoder, make_objective(variant, options=options), pairs, config)
            encoder.train(not args.no_dropout)
            set_seed(0)
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            start = time.perf_counter()
            loss, grad_norm, _ = trainer.train_step(list(range(batch_size)))
            torch.cuda.synchronize(device)
            seconds = time.perf_counter() - start
            peak = torch.cuda.max_memory_allocated(device)
            row = {
                "variant": variant,
                "batch_size": batch_size,
                "allocated_before_step_bytes": before,
                "peak_allocated_bytes": peak,
                "peak_minus_before_bytes": peak - before,
                "step_seconds": seconds,
                "loss": loss,
                "grad_norm": grad_norm,
            }
            rows.append(row)
            print(
                f"{variant} @ {batch_size}: step +{row['peak_minus_before_bytes'] / 2**20:.0f} MiB, "
                f"{seconds:.2f} s, loss {loss:.4f}",
                file=sys.stderr,
                flush=True,
            )
            del trainer, encoder
            torch.cuda.empty_cache()
    return {
        "benchmark": "cached_mnrl_memory",
        "device": "cuda",
        "gpu": torch.cuda.get_device_name(device),
        "model": MODEL,
        "data": args.data,
        "mini_batch_size": args.mini_batch_size,
        "max_seq_length": args.max_seq_length or None,
        "dropout": not args.no_dropout,
        "precision": "fp32",
        "rows": rows,
        "provenance": record,
    }


def run_driver(args: argparse.Namespace) -> dict[str, Any]:
    from sbert_tutor.provenance import provenance

    _, files = training_pairs(args.data, args.batch_size)
    record = provenance(data_files=files, extra={"command": sys.argv})  # as the workers start
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    results: dict[str, Any] = {}
    for variant in args.variants:
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", variant]
        argv += ["--data", args.data, "--batch-size", str(args.batch_size)]
        argv += ["--mini-batch-size", str(args.mini_batch_size), "--threads", str(args.threads)]
        argv += ["--max-seq-length", str(args.max_seq_length or 0)]
        argv += ["--no-dropout"] if args.no_dropout else []
        print(f"{variant} ...", file=sys.stderr, flush=True)
        proc = subprocess.run(argv, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            results[variant] = {"error": proc.stderr[-2000:], "returncode": proc.returncode}
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        results[variant] = row
        print(
            f"{variant}: peak {row['peak_rss_bytes'] / 2**20:.0f} MiB, step "
            f"+{row['peak_minus_before_bytes'] / 2**20:.0f} MiB, {row['step_seconds']:.1f} s, "
            f"loss {row['loss']:.4f}",
            file=sys.stderr,
        )
    ok = all("error" not in results.get(v, {"error": 1}) for v in VARIANTS)
    ratio = (
        results["mnrl"]["peak_minus_before_bytes"]
        / results["cached_mnrl"]["peak_minus_before_bytes"]
        if ok
        else None
    )
    return {
        "benchmark": "cached_mnrl_memory",
        "model": MODEL,
        "data": args.data,
        "batch_size": args.batch_size,
        "mini_batch_size": args.mini_batch_size,
        "threads": args.threads,
        "max_seq_length": args.max_seq_length or None,
        "results": results,
        "step_memory_ratio_mnrl_over_cached": ratio,
        "provenance": record,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--data", choices=("msmarco", "nli"), default="msmarco")
    p.add_argument(
        "--batch-size",
        default="256",
        help="pairs per step; with --device cuda a comma-separated list (e.g. 64,128,256,512)",
    )
    p.add_argument(
        "--device",
        default="cpu",
        help="cpu (each variant in a fresh process, resident memory) or cuda (the allocator's peak)",
    )
    p.add_argument("--mini-batch-size", type=int, default=32)
    p.add_argument(
        "--max-seq-length", type=int, default=0, help="cut texts here (0: the model's own)"
    )
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--no-dropout",
        action="store_true",
        help="step in eval mode: the two losses are then equal (a check of the run)",
    )
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    p.add_argument("--json", type=Path, help="write the report here")
    p.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.device != "cpu":
        report = run_cuda(args)
    else:
        args.batch_size = int(args.batch_size)
        if args.worker:
            run_worker(args)
            return
        report = run_driver(args)
    if args.json:
        from sbert_tutor.commands.common import write_json

        print(f"wrote {write_json(args.json, report)}", file=sys.stderr)
    else:
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
