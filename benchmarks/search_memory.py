"""Wall time and peak memory of chunked semantic search versus a full-matrix brute force.

Not a test: a measurement for the book's "searching 8.8M passages" section. For every dtype it
runs two variants, each in a fresh Python process so that their peak RSS do not mix:

* ``streaming``: :func:`sbert_tutor.search.exact.semantic_search` over an *iterator* that generates the
  corpus chunk by chunk (standing in for an encoder), never holding the corpus or the score
  matrix;
* ``brute``: the textbook version: materialise the whole corpus, the whole
  ``[n_queries, n]`` float32 score matrix, then ``torch.topk``.

The corpus is random (normal, seeded per generation chunk, so both variants see identical data);
the queries too. Peak RSS is ``VmHWM`` from ``/proc/self/status`` of the worker process (falling
back to ``getrusage``), wall times are ``time.perf_counter``.

Example::

    python benchmarks/search_memory.py --n 1000000 --dim 384 --dtype fp32 --json out.json
    python benchmarks/search_memory.py --n 1000000 --dim 384 --dtype fp16 fp32 --queries 500
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peak_memory import current_rss, peak_rss

REPO = Path(__file__).resolve().parents[1]
DTYPES = {"fp16": "float16", "fp32": "float32"}


# ------------------------------------------------------------------------------------------
# worker side (one variant, fresh process)
# ------------------------------------------------------------------------------------------


def _corpus_chunks(args: argparse.Namespace):
    """The corpus, generated ``--gen-chunk`` rows at a time; each piece has its own seed."""
    import numpy as np

    dtype = np.dtype(DTYPES[args.dtype])
    for n_chunk, start in enumerate(range(0, args.n, args.gen_chunk)):
        rows = min(args.gen_chunk, args.n - start)
        rng = np.random.default_rng([args.seed, 0, n_chunk])
        yield rng.standard_normal((rows, args.dim), dtype=np.float32).astype(dtype, copy=False)


def run_worker(args: argparse.Namespace) -> None:
    import numpy as np
    import torch

    from sbert_tutor.search.exact import semantic_search

    queries = np.random.default_rng([args.seed, 1]).standard_normal(
        (args.queries, args.dim), dtype=np.float32
    )
    # warm-up: thread pools and kernels are allocated outside the measured part
    semantic_search(queries[:2], np.ones((16, args.dim), np.float32), top_k=2, device="cpu")
    baseline = current_rss()
    result: dict[str, object] = {"variant": args.worker, "baseline_rss_bytes": baseline}

    if args.worker == "streaming":
        gen_s = 0.0

        def timed_chunks():
            nonlocal gen_s
            it = _corpus_chunks(args)
            while True:
                t = time.perf_counter()
                chunk = next(it, None)
                gen_s += time.perf_counter() - t
                if chunk is None:
                    return
                yield chunk

        t0 = time.perf_counter()
        scores, indices = semantic_search(
            queries,
            timed_chunks(),
            top_k=args.top_k,
            score=args.score,
            chunk_size=args.chunk_size,
            device="cpu",
            show_progress_bar=False,
        )
        total = time.perf_counter() - t0
        result.update(generate_s=gen_s, search_s=total - gen_s, wall_s=total)
    else:
        t0 = time.perf_counter()
        corpus = np.concatenate(list(_corpus_chunks(args)))  # the whole corpus, in --dtype
        t1 = time.perf_counter()
        c = torch.from_numpy(corpus).float()  # a float32 copy for fp16 (no copy for fp32)
        q = torch.from_numpy(queries)
        if args.score == "cosine":  # in place: no second copy of the corpus
            c.div_(c.norm(dim=1, keepdim=True).clamp_min_(1e-12))
            q = q / q.norm(dim=1, keepdim=True).clamp_min_(1e-12)
        # the full [n_queries, n] score matrix
        full = torch.cdist(q, c).neg_() if args.score == "euclidean" else q @ c.T
        top = torch.topk(full, args.top_k, dim=1)
        scores, indices = top.values.numpy(), top.indices.numpy()
        t2 = time.perf_counter()
        result.update(generate_s=t1 - t0, search_s=t2 - t1, wall_s=t2 - t0)

    peak = peak_rss()
    result.update(peak_rss_bytes=peak, peak_minus_baseline_bytes=peak - baseline)
    np.save(args.out_prefix + "_scores.npy", scores)
    np.save(args.out_prefix + "_indices.npy", indices)
    print(json.dumps(result))


# ------------------------------------------------------------------------------------------
# driver side
# ------------------------------------------------------------------------------------------


def _git_sha() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _provenance(args: argparse.Namespace) -> dict[str, object]:
    import numpy as np
    import torch

    return {
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_sha": _git_sha(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "argv": sys.argv,
        "args": {k: v for k, v in vars(args).items() if k not in ("worker", "out_prefix", "json")},
    }


def _worker_argv(args: argparse.Namespace, dtype: str, variant: str, prefix: str) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", variant]
    argv += ["--out-prefix", prefix, "--n", str(args.n), "--dim", str(args.dim)]
    argv += ["--dtype", dtype, "--queries", str(args.queries), "--top-k", str(args.top_k)]
    argv += ["--score", args.score, "--chunk-size", str(args.chunk_size)]
    argv += ["--gen-chunk", str(args.gen_chunk), "--seed", str(args.seed)]
    return argv


def run_driver(args: argparse.Namespace) -> dict[str, object]:
    import numpy as np

    report: dict[str, object] = {"provenance": _provenance(args), "results": {}}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in args.dtype:
            itemsize = np.dtype(DTYPES[dtype]).itemsize
            entry: dict[str, object] = {
                "corpus_bytes": args.n * args.dim * itemsize,
                "score_matrix_bytes": args.queries * args.n * 4,
            }
            outputs = {}
            for variant in args.variants:
                prefix = os.path.join(tmp, f"{dtype}_{variant}")
                print(f"[{dtype}] {variant} ...", file=sys.stderr, flush=True)
                proc = subprocess.run(
                    _worker_argv(args, dtype, variant, prefix),
                    env=env,
                    capture_output=True,
                    text=True,
                )
                if proc.returncode != 0:
                    entry[variant] = {"error": proc.stderr[-2000:], "returncode": proc.returncode}
                    print(proc.stderr[-2000:], file=sys.stderr)
                    continue
                res = json.loads(proc.stdout.strip().splitlines()[-1])
                # max RSS over the worker processes waited for so far (a cross-check of VmHWM)
                ru = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                res["rusage_children_max_rss_bytes_so_far"] = (
                    ru if sys.platform == "darwin" else ru * 1024
                )
                entry[variant] = res
                outputs[variant] = (
                    np.load(prefix + "_scores.npy"),
                    np.load(prefix + "_indices.npy"),
                )
                print(
                    f"[{dtype}] {variant}: wall {res['wall_s']:.1f} s "
                    f"(search {res['search_s']:.1f} s), peak RSS {res['peak_rss_bytes'] / 2**20:.0f} MiB "
                    f"(+{res['peak_minus_baseline_bytes'] / 2**20:.0f} MiB over baseline)",
                    file=sys.stderr,
                    flush=True,
                )
            if "streaming" in outputs and "brute" in outputs:
                (s1, i1), (s2, i2) = outputs["streaming"], outputs["brute"]
                entry["agreement"] = {
                    "same_index_fraction": float((i1 == i2).mean()),
                    "same_top_k_set_fraction": float(
                        np.mean(
                            [len(set(a) & set(b)) / len(a) for a, b in zip(i1, i2, strict=True)]
                        )
                    ),
                    "max_abs_score_diff": float(np.abs(s1 - s2).max()),
                }
            report["results"][dtype] = entry
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--n", type=int, default=1_000_000, help="corpus size")
    p.add_argument("--dim", type=int, default=384, help="embedding dimension")
    p.add_argument(
        "--dtype", nargs="+", choices=sorted(DTYPES), default=["fp32"], help="corpus dtype(s)"
    )
    p.add_argument("--queries", type=int, default=1000, help="number of queries")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--score", choices=("cosine", "dot", "euclidean"), default="cosine")
    p.add_argument("--chunk-size", type=int, default=50_000, help="semantic_search chunk_size")
    p.add_argument("--gen-chunk", type=int, default=50_000, help="rows generated at a time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--variants", nargs="+", choices=("streaming", "brute"), default=["streaming", "brute"]
    )
    p.add_argument("--json", type=Path, help="write the report here")
    p.add_argument("--worker", choices=("streaming", "brute"), help=argparse.SUPPRESS)
    p.add_argument("--out-prefix", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.dtype = args.dtype[0]
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.worker:
        run_worker(args)
        return
    report = run_driver(args)
    text = json.dumps(report, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    print(text)


if __name__ == "__main__":
    main()
