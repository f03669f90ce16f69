"""The "Training a retriever" chapter's study, recorded: six ways to fine-tune one bi-encoder.

Not a test: a run too long for the book's quick profile, recorded once with its provenance and
shown beside the chapter's live quick run. It calls
:func:`sbert_tutor.book.chapters.training_a_retriever.run_study` with a profile's sizes (the
chapter module's ``SIZES``): the cross-encoder teacher, the BM25- and dense-mined negatives, every
variant with every seed, and the start model, all evaluated on the held-out dev-subset queries
(MRR@10, nDCG@10, recall@100, and each per query for the chapter's paired bootstrap).

Example (a GPU; ``--json auto`` writes
``sbert_tutor/book/results/retriever_study_<profile>_<device>.json``)::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/retriever_study.py \\
        --profile t4 --device cuda --json auto
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def gpu_slug(name: str) -> str:
    """A GPU's name as a file-name part: ``"NVIDIA H200"`` -> ``"h200"``."""
    known = re.search(r"\b(h200|h100|a100|a10g|l40s|l4|t4|v100|b200)\b", name.lower())
    return known.group(1) if known else re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def record_study(benchmark: str, study, sizes_by_profile, argv: list[str] | None, doc: str) -> None:
    """Parse ``--profile/--device/--json``, run ``study(sizes, device=, log=)`` with the
    profile's sizes and write its record, named ``<benchmark>_<profile>_<device>.json`` for
    ``--json auto``, with the run's seconds and provenance (the study's ``files`` hashed)."""
    p = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--profile", choices=("quick", "t4", "paper"), default="t4")
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: CUDA when available)")
    p.add_argument(
        "--json", default=None, help="results file ('auto': named by profile and device)"
    )
    args = p.parse_args(argv)

    import torch

    from sbert_tutor.commands.common import write_json
    from sbert_tutor.provenance import provenance

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    start = time.perf_counter()
    result = study(
        sizes_by_profile[args.profile],
        device=device,
        log=lambda m: print(m, file=sys.stderr, flush=True),
    )
    seconds = time.perf_counter() - start
    gpu = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None
    files = [str(f) for f in result.pop("files", ())]
    report = {
        "benchmark": benchmark,
        "profile": args.profile,
        "device": device,
        "gpu": gpu,
        "seconds": seconds,
        **result,
        "provenance": provenance(
            profile=args.profile, data_files=files, extra={"command": sys.argv}
        ),
    }
    if args.json:
        if args.json == "auto":
            slug = gpu_slug(gpu) if gpu else f"cpu_{torch.get_num_threads()}threads"
            path = REPO / "sbert_tutor/book/results" / f"{benchmark}_{args.profile}_{slug}.json"
        else:
            path = Path(args.json)
        print(f"wrote {write_json(path, report)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    from sbert_tutor.book.chapters.training_a_retriever import SIZES, run_study

    record_study("retriever_study", run_study, SIZES, argv, __doc__)


if __name__ == "__main__":
    main()
