"""Encoding throughput: ``SentenceEncoder.encode`` vs ``SentenceTransformer.encode``, same model and data.

Not a test: a measurement (book chapter on computational efficiency; SBERT paper Table 7). Both
libraries run in this one process, on the same sentences, with the same thread count; runs are
interleaved (:func:`sbert_tutor.book.speed.encode_throughput`), medians are reported with the ratio
ours / sentence-transformers, and outputs must agree to 1e-4.

Sentences: real text with mixed lengths from ``SBERT_TUTOR_DATA``: STS benchmark test sentences
plus MS MARCO passages (``msmarco/corpus_mini.tsv``), shuffled with a fixed seed.

Example::

    SBERT_TUTOR_DATA=../shared/data HF_HUB_OFFLINE=1 python benchmarks/encode.py --json out.json
"""

from __future__ import annotations

import argparse
import sys

import torch

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


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

    from sbert_tutor import SentenceEncoder
    from sbert_tutor.book.speed import (
        encode_throughput,
        mixed_length_sentences,
        sentence_transformers_reference,
        throughput_ratios,
    )
    from sbert_tutor.commands.common import write_json
    from sbert_tutor.provenance import provenance
    from sbert_tutor.resolve import resolve_model

    if args.threads:
        torch.set_num_threads(args.threads)
    sentences, files = mixed_length_sentences(args.sts, args.passages)
    ours = SentenceEncoder.from_pretrained(MODEL, device=args.device)
    reference = sentence_transformers_reference(str(resolve_model(MODEL).path), device=args.device)
    print(f"{len(sentences)} sentences; torch threads {torch.get_num_threads()}", file=sys.stderr)
    table = encode_throughput(
        ours, sentences, [int(b) for b in args.batch_sizes.split(",")], args.repeats, reference
    )
    ratios = throughput_ratios(table)
    print(table.to_string(index=False))
    print(ratios.to_string())
    worst = float(table["max_abs_diff"].max()) if "max_abs_diff" in table else 0.0
    if args.json:
        payload = {
            "benchmark": "encode",
            "model": MODEL,
            "n_sentences": len(sentences),
            "repeats": args.repeats,
            "results": table.to_dict(orient="records"),
            "ratios": ratios.reset_index().to_dict(orient="records"),
            "provenance": provenance(data_files=files, model=ours.describe(), command=sys.argv),
        }
        print(f"wrote {write_json(args.json, payload)}", file=sys.stderr)
    if worst > 1e-4:
        print(f"outputs differ by {worst:.2e} > 1e-4", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
