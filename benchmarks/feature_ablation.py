"""Chapter 6's feature-set ablation, recorded at a longer length.

Not a test: a run too long for the book's quick profile, recorded once with its provenance and
shown beside the chapter's live run. It is the chapter's own experiment (``seeded_variants`` over
``FEATURE_SETS``, the softmax objective on the NLI training pairs, from the quick profile's start
and batch size), with SBERT's learning rate (``--lr``, 2e-5) for one epoch over all the pairs
(or ``--steps``; the live run: 100 steps over 1,600 pairs at 1e-4), scored on all of STSb dev
(Spearman x100 of the cosine) at the end and, for each variant's first seed, every
``--eval-every`` steps.

Example (46 minutes on two AVX2 CPU cores; ``--json auto`` writes
``sbert_tutor/book/results/feature_ablation_cpu_<threads>threads.json``)::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/feature_ablation.py \\
        --json auto
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--steps", type=int, default=None, help="optimizer steps of each run (default: one epoch)"
    )
    p.add_argument("--lr", type=float, default=2e-5, help="peak learning rate (SBERT's: 2e-5)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="one run per seed")
    p.add_argument("--eval-every", type=int, default=200, help="steps between curve points")
    p.add_argument("--json", default=None, help="results file ('auto': named by the torch threads)")
    args = p.parse_args(argv)

    import torch

    from sbert_tutor.book.chapters.classification_objective import (
        FEATURE_SETS,
        SIZES,
        feature_variants,
    )
    from sbert_tutor.book.configs import training_config
    from sbert_tutor.book.seeds import seeded_variants
    from sbert_tutor.commands.common import write_json
    from sbert_tutor.data import load_sts
    from sbert_tutor.data.nli import labelled_pairs, load_nli_train
    from sbert_tutor.provenance import provenance

    sizes = dataclasses.replace(
        SIZES["quick"],
        steps=args.steps,
        epochs=1,
        lr=args.lr,
        seeds=tuple(args.seeds),
        examples=None,
        eval_pairs=None,
    )
    nli = load_nli_train()
    stsb_dev = load_sts("stsb", "dev")
    config = training_config(sizes, eval_before=False, show_progress_bar=True)
    start = time.perf_counter()
    ablation = seeded_variants(
        sizes.start,
        feature_variants(FEATURE_SETS),
        labelled_pairs(nli),
        config,
        stsb_dev,
        seeds=sizes.seeds,
        eval_steps=args.eval_every,
    )
    seconds = time.perf_counter() - start
    report = {
        "benchmark": "feature_ablation",
        "seconds": seconds,
        "sizes": {
            "start": ablation.start_model,
            "steps": args.steps or "one epoch",
            "steps_done": {n: log["steps_done"] for n, log in ablation.logs.items()},
            "batch_size": sizes.batch_size,
            "lr": sizes.lr,
            "warmup_ratio": sizes.warmup_ratio,
            "seeds": list(sizes.seeds),
            "training pairs": len(nli.labels),
            "training data": nli.source,
            "eval_data": ablation.eval_data,
        },
        "start_spearman": ablation.start,
        "runs": ablation.runs.to_dict(orient="records"),
        "curves": {name: record.evals for name, record in ablation.records.items()},
        "provenance": provenance(
            profile="quick",
            data_files=[*nli.files, *stsb_dev.files],
            extra={"command": sys.argv},
        ),
    }
    if args.json:
        path = (
            REPO
            / "sbert_tutor/book/results"
            / f"feature_ablation_cpu_{torch.get_num_threads()}threads.json"
            if args.json == "auto"
            else Path(args.json)
        )
        print(f"wrote {write_json(path, report)}", file=sys.stderr)


if __name__ == "__main__":
    main()
