"""Encoding throughput: ``SentenceEncoder.encode`` vs ``SentenceTransformer.encode``, same model and data.

Not a test: a measurement (book chapter on computational efficiency; SBERT paper Table 7). Both
libraries run in this one process, on the same sentences, with the same thread count. Each
configuration is timed ``--repeats`` times, interleaved (ours, theirs, ours, ...) so that machine
noise hits both alike; we report medians and the ratio ours/theirs. Outputs must agree to 1e-4.

Sentences: real text with mixed lengths from ``SBERT_TUTOR_DATA``: STS benchmark test sentences
plus MS MARCO passages (``msmarco/corpus_mini.tsv``), shuffled with a fixed seed.

Example::

    SBERT_TUTOR_DATA=../shared/data HF_HUB_OFFLINE=1 python benchmarks/encode.py --json out.json
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def load_sentences(n_sts: int, n_passages: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Mixed-length real sentences and the data files they came from."""
    from sbert_tutor.data import load_sts
    from sbert_tutor.data._files import local_file, local_root, read_tsv

    stsb = load_sts("stsb", "test")
    sentences = list(dict.fromkeys(stsb.sentences1 + stsb.sentences2))[:n_sts]
    files = [str(f) for f in stsb.files]
    root = local_root()
    if root is not None and n_passages:
        corpus = local_file(root, "msmarco/corpus_mini.tsv")
        files.append(str(corpus))
        for i, row in enumerate(read_tsv(corpus)):
            if i >= n_passages:
                break
            sentences.append(row["passage"])
    random.Random(seed).shuffle(sentences)
    return sentences, files


def timed(fn, *args, **kwargs) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default="32,64,128")
    parser.add_argument("--sts", type=int, default=1500, help="STSb test sentences")
    parser.add_argument("--passages", type=int, default=500, help="MS MARCO passages")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    from sentence_transformers import SentenceTransformer

    from sbert_tutor import SentenceEncoder
    from sbert_tutor.commands.common import write_json
    from sbert_tutor.provenance import provenance
    from sbert_tutor.resolve import resolve_model

    if args.threads:
        torch.set_num_threads(args.threads)
    sentences, files = load_sentences(args.sts, args.passages)
    ours = SentenceEncoder.from_pretrained(MODEL, device=args.device)
    theirs = SentenceTransformer(
        str(resolve_model(MODEL).path), device=args.device
    )  # the same files
    print(
        f"{len(sentences)} sentences; ours from {ours.source}; torch threads {torch.get_num_threads()}",
        file=sys.stderr,
    )
    # Warm-up both (first calls allocate and tune kernels).
    ours.encode(sentences[:64], batch_size=32)
    theirs.encode(sentences[:64], batch_size=32)

    rows = []
    for batch_size in [int(b) for b in args.batch_sizes.split(",")]:
        times: dict[str, list[float]] = {
            "ours_sorted": [],
            "ours_unsorted": [],
            "sentence_transformers": [],
        }
        outputs: dict[str, np.ndarray] = {}
        for _ in range(args.repeats):
            t, outputs["ours_sorted"] = timed(ours.encode, sentences, batch_size=batch_size)
            times["ours_sorted"].append(t)
            t, outputs["sentence_transformers"] = timed(
                theirs.encode, sentences, batch_size=batch_size, convert_to_numpy=True
            )
            times["sentence_transformers"].append(t)
            t, outputs["ours_unsorted"] = timed(
                ours.encode, sentences, batch_size=batch_size, sort_by_length=False
            )
            times["ours_unsorted"].append(t)
        max_diff = float(np.abs(outputs["ours_sorted"] - outputs["sentence_transformers"]).max())
        row = {"batch_size": batch_size, "max_abs_diff_vs_st": max_diff}
        for name, values in times.items():
            row[f"{name}_sentences_per_s"] = len(sentences) / statistics.median(values)
        row["ratio_ours_vs_st"] = (
            row["ours_sorted_sentences_per_s"] / row["sentence_transformers_sentences_per_s"]
        )
        row["smart_batching_speedup"] = (
            row["ours_sorted_sentences_per_s"] / row["ours_unsorted_sentences_per_s"]
        )
        rows.append(row)
        print(
            f"batch {batch_size:4d}: ours {row['ours_sorted_sentences_per_s']:8.1f}/s  "
            f"unsorted {row['ours_unsorted_sentences_per_s']:8.1f}/s  "
            f"sentence-transformers {row['sentence_transformers_sentences_per_s']:8.1f}/s  "
            f"ratio {row['ratio_ours_vs_st']:.3f}  max|diff| {max_diff:.2e}"
        )
        if max_diff > 1e-4:
            print(f"outputs differ by {max_diff:.2e} > 1e-4", file=sys.stderr)
            return 1
    if args.json:
        payload = {
            "benchmark": "encode",
            "model": MODEL,
            "n_sentences": len(sentences),
            "repeats": args.repeats,
            "results": rows,
            "provenance": provenance(data_files=files, model=ours.describe(), command=sys.argv),
        }
        print(f"wrote {write_json(Path(args.json), payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
