"""Encoding throughput: ``SentenceEncoder.encode`` vs ``SentenceTransformer.encode``, same model and data.

Not a test: a measurement (book chapter on computational efficiency; SBERT paper Table 7).

``--preset compare`` (the default, the CPU figure of chapter 13): both libraries run in this one
process, on the same sentences, with the same thread count; runs are interleaved
(:func:`sbert_tutor.book.chapters.computational_efficiency.encode_throughput`), medians are reported with the ratio ours /
sentence-transformers, and outputs must agree to 1e-4. Sentences: STS benchmark test sentences
plus MS MARCO passages (``msmarco/corpus_mini.tsv``), shuffled with a fixed seed.

``--preset gpu`` (issue 15: mixed precision, bucketing, the pipelined encode): for each sentence
set, batch size and compute dtype it records

* the *first* pass in a fresh process (a child process per measurement, so that kernel choices,
  cuDNN plans and allocator caches are cold), ours and sentence-transformers';
* the warm median of ``--repeats`` passes, ours and sentence-transformers' at the same dtype
  (their model cast to it, as their documentation does for fp16/bf16), and the ratio;
* the forward-only bound: the very batches ``encode`` makes (same plan, same widths), already on
  the device, only transformer + pooling, and end-to-end / forward-only;
* the largest difference of the embeddings from ours in fp32 and from sentence-transformers';
* with ``--diagnose``, the first bf16 pass at the smallest batch size with bucketing off / 8 / 32
  and cuDNN attention allowed or not (what decides the per-shape cost).

Sets (``SBERT_TUTOR_DATA``): ``stsb``, distinct STSb train+dev+test sentences; ``mixed``, three
quarters of them and one quarter MS MARCO passages; ``--n`` of each (default 10,000), shuffled
with seed 0. ``--json auto`` writes ``sbert_tutor/book/results/encode_gpu_<gpu>.json`` (the checks of
issue 15 are in its ``criteria``). See ``benchmarks/gpu_encode.sh`` for the one command to run.

Examples::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/encode.py --json out.json
    python benchmarks/encode.py --preset gpu --device cuda --json auto
    python benchmarks/encode.py --preset gpu --device cpu --n 200 --batch-sizes 32 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "sbert_tutor" / "book" / "results"  # where the book reads them
#: Issue 15's bar for an H100-class GPU.
BAR = {
    "first_pass_half_vs_fp32": 1.0,
    "warm_bf16_vs_fp32": 1.4,
    "max_abs_diff_vs_fp32": 3e-3,
    "end_to_end_vs_forward_only": 0.6,
    "warm_vs_sentence_transformers": 2.0,
}


# ----------------------------------------------------------------------------- sentence sets
def sentence_set(name: str, n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``stsb``: ``n`` distinct STSb sentences (train+dev+test); ``mixed``: 3/4 of them and 1/4
    MS MARCO passages. Shuffled with ``seed``. Returns the sentences and the files read."""
    from sbert_tutor.data import load_sts

    texts: list[str] = []
    files: list[str] = []
    for split in ("train", "dev", "test"):
        part = load_sts("stsb", split)
        texts += part.sentences1 + part.sentences2
        files += [str(f) for f in part.files]
    distinct = list(dict.fromkeys(t.strip() for t in texts if t.strip()))
    random.Random(seed).shuffle(distinct)
    if name == "stsb":
        chosen = distinct[:n]
    elif name == "mixed":
        passages, corpus = msmarco_passages(n // 4)
        files.append(corpus)
        chosen = distinct[: n - len(passages)] + passages
        random.Random(seed).shuffle(chosen)
    else:
        raise SystemExit(f"unknown sentence set {name!r}; use stsb or mixed")
    return chosen, sorted(set(files))


def msmarco_passages(n: int, skip: int = 0) -> tuple[list[str], str]:
    """Passages ``skip`` to ``skip + n`` of the data folder's ``msmarco/corpus_mini.tsv``, in file
    order, and that file's path."""
    from sbert_tutor.data.files import local_file, local_root, read_tsv

    root = local_root()
    if root is None:
        raise SystemExit("MS MARCO passages need SBERT_TUTOR_DATA (the data folder)")
    corpus = local_file(root, "msmarco/corpus_mini.tsv")
    rows = zip(range(skip + n), read_tsv(corpus), strict=False)
    return [row["passage"] for _, row in rows][skip:], str(corpus)


# ----------------------------------------------------------------------------- helpers
def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _dtype(name: str):
    from sbert_tutor.runtime.precision import resolve_compute_dtype

    return resolve_compute_dtype(name, "cpu")


def _model_path() -> str:
    from sbert_tutor.encoders.resolve import resolve_model

    return str(resolve_model(MODEL).path)


def load_ours(device: str, cudnn_attention: bool | None = None):
    from sbert_tutor import SentenceEncoder

    encoder = SentenceEncoder.from_pretrained(MODEL, device=device)
    encoder.cudnn_attention = cudnn_attention
    return encoder


def load_reference(device: str, dtype: str):
    """sentence-transformers' model, cast to ``dtype`` as its efficiency docs do."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(_model_path(), device=device)
    return model.to(_dtype(dtype)) if dtype != "fp32" else model


def encode_ours(encoder, sentences, batch_size: int, dtype: str, bucket) -> Any:
    return encoder.encode(
        sentences,
        batch_size=batch_size,
        compute_dtype=dtype,
        bucket=bucket,
        show_progress_bar=False,
    )


def encode_reference(model, sentences, batch_size: int):
    return model.encode(
        sentences, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
    )


def timed(fn, device: str) -> tuple[float, Any]:
    _sync(device)
    start = time.perf_counter()
    out = fn()
    _sync(device)
    return time.perf_counter() - start, out


# ----------------------------------------------------------------------------- first pass (child)
def child_first_pass(spec: dict[str, Any]) -> dict[str, Any]:
    """One first pass in this fresh process: load, then time the first encode of the whole set."""
    import torch

    sentences, _ = sentence_set(spec["set"], spec["n"])
    device = spec["device"]
    if spec["library"] == "ours":
        cudnn = {"default": None, "on": True, "off": False}[spec.get("cudnn", "default")]
        encoder = load_ours(device, cudnn)
        bucket = spec["bucket"]
        seconds, _ = timed(
            lambda: encode_ours(encoder, sentences, spec["batch_size"], spec["dtype"], bucket),
            device,
        )
    else:
        model = load_reference(device, spec["dtype"])
        seconds, _ = timed(lambda: encode_reference(model, sentences, spec["batch_size"]), device)
    return {
        **spec,
        "seconds": seconds,
        "sentences_per_s": len(sentences) / seconds,
        "torch_threads": torch.get_num_threads(),
    }


def first_pass(spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Run :func:`child_first_pass` in a new process and read its one JSON line."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"first pass {spec} failed:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


# ----------------------------------------------------------------------------- warm (this process)
def forward_only(encoder, sentences, batch_size: int, dtype: str, bucket, repeats: int, cast=False):
    """Seconds (median) of transformer + pooling alone on the batches ``encode`` makes, already
    on the device. ``cast``: the weights cast to ``dtype`` instead of autocast (information for
    the choice between the two)."""
    import copy

    import numpy as np
    import torch

    from sbert_tutor.runtime.batching import CHUNK_BATCHES, resolve_bucket
    from sbert_tutor.runtime.precision import (
        autocast_dtype,
        compute_context,
        inference_context,
        resolve_compute_dtype,
    )

    device = encoder.device
    weights = torch.float32
    cast_to = autocast_dtype(resolve_compute_dtype(dtype, device), weights)
    buckets = resolve_bucket(bucket, device, cast_to or weights, "right")
    pipelined = device.type == "cuda"
    batches = list(
        encoder._batches(
            encoder._texts(sentences),
            batch_size,
            True,
            batch_size * CHUNK_BATCHES if pipelined else None,
            buckets,
            pin=False,
            truncated=[0],
        )
    )
    inputs = [{k: v.to(device) for k, v in b.tensors.items()} for b in batches]
    model = encoder.model
    if cast and cast_to is not None:
        model = copy.deepcopy(encoder.model).to(cast_to)
        weights, cast_to = cast_to, None
    cudnn = encoder.cudnn_attention

    def run():
        out = []
        with inference_context(cast_to), compute_context(device, cast_to, weights, cudnn):
            for batch in inputs:
                hidden = model(**batch).last_hidden_state
                out.append(
                    encoder._finish(
                        hidden,
                        batch["attention_mask"],
                        normalize=encoder.normalize,
                        autocast_device=device if cast_to is not None else None,
                    )
                )
        return out

    run()  # warm
    times = [timed(run, str(device))[0] for _ in range(repeats)]
    return (
        statistics.median(times),
        int(sum(b.tensors["input_ids"].numel() for b in batches)),
        int(np.sum([b.lengths.sum() for b in batches])),
    )


def warm(encoder, reference, sentences, batch_size, dtype, bucket, repeats, device):
    """Warm medians, ours and the reference interleaved, with their outputs."""
    encode_ours(encoder, sentences, batch_size, dtype, bucket)  # warm-up
    if reference is not None:
        encode_reference(reference, sentences, batch_size)
    ours, theirs, out_ours, out_theirs = [], [], None, None
    for _ in range(repeats):
        seconds, out_ours = timed(
            lambda: encode_ours(encoder, sentences, batch_size, dtype, bucket), device
        )
        ours.append(seconds)
        if reference is not None:
            seconds, out_theirs = timed(
                lambda: encode_reference(reference, sentences, batch_size), device
            )
            theirs.append(seconds)
    return (
        statistics.median(ours),
        statistics.median(theirs) if theirs else None,
        out_ours,
        out_theirs,
    )


def gpu_slug(device: str) -> str:
    import torch

    if not device.startswith("cuda"):
        return device.split(":")[0]
    name = torch.cuda.get_device_name(torch.device(device)).lower()
    known = re.search(r"\b(h200|h100|a100|a10g|l40s|l4|t4|v100|a6000|4090|b200)\b", name)
    return known.group(1) if known else re.sub(r"[^a-z0-9]+", "_", name).strip("_")


def run_gpu_preset(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from sbert_tutor.commands.common import write_json
    from sbert_tutor.provenance import provenance

    device = args.device
    env = dict(os.environ)
    dtypes = [d.strip() for d in args.dtype.split(",")]
    batch_sizes = [int(b) for b in (args.batch_sizes or "64,256").split(",")]
    sets = [s.strip() for s in args.sets.split(",")]
    bucket: Any = args.bucket
    if bucket not in ("auto", "off"):
        bucket = int(bucket)
    bucket = None if bucket == "off" else bucket
    out_path = None
    if args.json:
        out_path = (
            RESULTS / f"encode_gpu_{gpu_slug(device)}.json"
            if args.json == "auto"
            else Path(args.json)
        )
    record: dict[str, Any] = {}
    if out_path is not None and args.merge and out_path.is_file():
        record = json.loads(out_path.read_text())
    record.setdefault("benchmark", "encode_gpu")
    record.update(
        model=MODEL,
        device=device,
        gpu=torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None,
        tokenizer_parallelism=os.environ.get("TOKENIZERS_PARALLELISM", "unset"),
        repeats=args.repeats,
        bucket=args.bucket,
        bar=BAR,
    )
    rows = [r for r in record.get("results", []) if r["set"] not in sets]
    firsts = [r for r in record.get("first_pass", []) if r["set"] not in sets]
    diagnosis = [r for r in record.get("diagnosis", []) if r["set"] not in sets]
    files: set[str] = set(record.get("data_files", []))
    encoder = load_ours(device)
    references = {}

    def save():
        if out_path is None:
            return
        record.update(
            results=rows,
            first_pass=firsts,
            diagnosis=diagnosis,
            criteria=criteria(rows, firsts),
            data_files=sorted(files),
            provenance=provenance(
                data_files=sorted(files), model=encoder.describe(), extra={"command": sys.argv}
            ),
        )
        write_json(out_path, record)

    for set_name in sets:
        sentences, used = sentence_set(set_name, args.n)
        files.update(used)
        print(f"{set_name}: {len(sentences)} sentences", file=sys.stderr)
        spec0 = {"set": set_name, "n": args.n, "device": device}
        if args.diagnose and set_name == sets[0]:
            for cudnn in ("on", "off"):
                for b in (None, 8, 32):
                    spec = {**spec0, "library": "ours", "batch_size": batch_sizes[0]}
                    spec.update(dtype="bf16", bucket=b, cudnn=cudnn)
                    result = first_pass(spec, env)
                    diagnosis.append(result)
                    print(f"  diagnose {result}", file=sys.stderr)
        fp32_out: dict[int, np.ndarray] = {}
        for batch_size in batch_sizes:
            for dtype in dtypes:
                spec = {**spec0, "batch_size": batch_size, "dtype": dtype, "bucket": bucket}
                first = first_pass({**spec, "library": "ours"}, env)
                first_ref = None if args.no_st else first_pass({**spec, "library": "st"}, env)
                firsts.append(
                    {**spec, "ours_sps": first["sentences_per_s"]}
                    | ({"st_sps": first_ref["sentences_per_s"]} if first_ref else {})
                )
                if not args.no_st and dtype not in references:
                    references[dtype] = load_reference(device, dtype)
                reference = None if args.no_st else references[dtype]
                t_ours, t_ref, out, out_ref = warm(
                    encoder, reference, sentences, batch_size, dtype, bucket, args.repeats, device
                )
                t_fwd, padded, real = forward_only(
                    encoder, sentences, batch_size, dtype, bucket, args.repeats
                )
                row = {
                    **spec,
                    "warm_sps": len(sentences) / t_ours,
                    "forward_only_sps": len(sentences) / t_fwd,
                    "end_to_end_vs_forward_only": t_fwd / t_ours,
                    "padded_tokens": padded,
                    "real_tokens": real,
                }
                if dtype != "fp32" and device.startswith("cuda"):
                    t_cast, _, _ = forward_only(
                        encoder, sentences, batch_size, dtype, bucket, args.repeats, cast=True
                    )
                    row["forward_only_cast_weights_sps"] = len(sentences) / t_cast
                if t_ref is not None:
                    row["st_warm_sps"] = len(sentences) / t_ref
                    row["warm_vs_sentence_transformers"] = t_ref / t_ours
                    row["max_abs_diff_vs_st"] = float(np.abs(out - out_ref).max())
                if dtype == "fp32":
                    fp32_out[batch_size] = out
                elif batch_size in fp32_out:
                    row["max_abs_diff_vs_fp32"] = float(np.abs(out - fp32_out[batch_size]).max())
                rows.append(row)
                print(f"  {row}", file=sys.stderr)
                save()
        references.clear()
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    save()
    table = criteria(rows, firsts)
    for check in table:
        print(json.dumps(check))
    if out_path is not None:
        print(f"wrote {out_path}", file=sys.stderr)
    return 0


def criteria(rows: list[dict[str, Any]], firsts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue 15's checks, one row per (set, batch size, check), with the value and pass/fail."""
    out = []

    def add(set_name, batch_size, name, value, bar, at_most=False):
        if value is None:
            return
        ok = value <= bar if at_most else value >= bar
        out.append(
            {
                "set": set_name,
                "batch_size": batch_size,
                "check": name,
                "value": value,
                "bar": bar,
                "pass": bool(ok),
            }
        )

    def pick(table, set_name, batch_size, dtype, key):
        for r in table:
            if (r["set"], r["batch_size"], r["dtype"]) == (set_name, batch_size, dtype):
                return r.get(key)
        return None

    keys = sorted({(r["set"], r["batch_size"]) for r in rows})
    for set_name, b in keys:
        f32 = pick(firsts, set_name, b, "fp32", "ours_sps")
        for half in ("bf16", "fp16"):
            fh = pick(firsts, set_name, b, half, "ours_sps")
            if f32 and fh:
                add(
                    set_name,
                    b,
                    f"first pass {half} / fp32",
                    fh / f32,
                    BAR["first_pass_half_vs_fp32"],
                )
        w32, wbf = (
            pick(rows, set_name, b, "fp32", "warm_sps"),
            pick(rows, set_name, b, "bf16", "warm_sps"),
        )
        if w32 and wbf:
            add(set_name, b, "warm bf16 / fp32", wbf / w32, BAR["warm_bf16_vs_fp32"])
        add(
            set_name,
            b,
            "max |bf16 - fp32|",
            pick(rows, set_name, b, "bf16", "max_abs_diff_vs_fp32"),
            BAR["max_abs_diff_vs_fp32"],
            at_most=True,
        )
        for dtype in ("fp32", "fp16", "bf16"):
            add(
                set_name,
                b,
                f"end-to-end / forward-only ({dtype})",
                pick(rows, set_name, b, dtype, "end_to_end_vs_forward_only"),
                BAR["end_to_end_vs_forward_only"],
            )
            add(
                set_name,
                b,
                f"warm ours / sentence-transformers ({dtype})",
                pick(rows, set_name, b, dtype, "warm_vs_sentence_transformers"),
                BAR["warm_vs_sentence_transformers"],
            )
    return out


# ----------------------------------------------------------------------------- CPU comparison
def run_compare_preset(args: argparse.Namespace) -> int:
    import torch

    from sbert_tutor import SentenceEncoder
    from sbert_tutor.book.chapters.computational_efficiency import (
        encode_throughput,
        mixed_length_sentences,
        sentence_transformers_reference,
        throughput_ratios,
    )
    from sbert_tutor.commands.common import write_json
    from sbert_tutor.encoders.resolve import resolve_model
    from sbert_tutor.provenance import provenance

    sentences, files = mixed_length_sentences(args.sts, args.passages)
    ours = SentenceEncoder.from_pretrained(MODEL, device=args.device)
    reference = sentence_transformers_reference(str(resolve_model(MODEL).path), device=args.device)
    print(f"{len(sentences)} sentences; torch threads {torch.get_num_threads()}", file=sys.stderr)
    batch_sizes = [int(b) for b in (args.batch_sizes or "32,64,128").split(",")]
    table = encode_throughput(ours, sentences, batch_sizes, args.repeats, reference)
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
            "provenance": provenance(
                data_files=files, model=ours.describe(), extra={"command": sys.argv}
            ),
        }
        print(f"wrote {write_json(args.json, payload)}", file=sys.stderr)
    if worst > 1e-4:
        print(f"outputs differ by {worst:.2e} > 1e-4", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=("compare", "gpu"), default="compare")
    parser.add_argument(
        "--batch-sizes", default=None, help="default 32,64,128 (compare) or 64,256 (gpu)"
    )
    parser.add_argument("--sts", type=int, default=1500, help="compare: STSb test sentences")
    parser.add_argument("--passages", type=int, default=500, help="compare: MS MARCO passages")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="fp32,fp16,bf16", help="gpu: compute dtypes")
    parser.add_argument("--sets", default="stsb,mixed", help="gpu: sentence sets")
    parser.add_argument("--n", type=int, default=10_000, help="gpu: sentences per set")
    parser.add_argument("--bucket", default="auto", help="gpu: auto, off or a multiple")
    parser.add_argument(
        "--tokenizer-parallelism",
        choices=("on", "off", "env"),
        default="env",
        help="set TOKENIZERS_PARALLELISM for both libraries (env: leave it as it is)",
    )
    parser.add_argument("--diagnose", action="store_true", help="gpu: bucketing x cuDNN sweep")
    parser.add_argument("--no-st", action="store_true", help="gpu: skip sentence-transformers")
    parser.add_argument("--merge", action="store_true", help="gpu: keep other sets in --json")
    parser.add_argument("--json", default=None, help="results file; gpu: 'auto' names it")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.tokenizer_parallelism != "env":
        os.environ["TOKENIZERS_PARALLELISM"] = (
            "true" if args.tokenizer_parallelism == "on" else "false"
        )
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(child_first_pass(json.loads(args.child))))
        return 0
    if args.preset == "gpu":
        return run_gpu_preset(args)
    return run_compare_preset(args)


if __name__ == "__main__":
    sys.exit(main())
