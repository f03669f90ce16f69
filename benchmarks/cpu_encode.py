"""The fastest CPU encode: every path of this library beside sentence-transformers' backends.

Not a test: a measurement (book chapter on computational efficiency; issue 24, fast CPU
inference). One process, one model (all-MiniLM-L6-v2), the same sentences and the same thread
count for every path; passes are interleaved path by path (``--repeats`` rounds), so a slow
minute of the machine slows every path alike, and the median of each path is reported with its
ratio to this library's fp32 encode and to sentence-transformers' fastest backend. Beside the
speed, the STS benchmark test set (1,379 pairs) is scored with each path: Spearman x100 of cosine.

Paths:

* ``sbert_tutor fp32``: ``encode()`` as it is by default (the weights' own fp32);
* ``sbert_tutor auto``: ``encode(compute_dtype="auto")``: bf16 autocast where the CPU has native
  bf16 instructions (:func:`sbert_tutor.runtime.precision.cpu_has_native_bf16`), else fp32;
* ``sbert_tutor OpenVINO fp32`` / ``auto`` / ``int8``: :func:`sbert_tutor.encoders.openvino.to_openvino`;
  int8 is calibrated on 300 training sentences shaped like the timed set (3/4 distinct STSb
  *train* sentences, 1/4 MS MARCO passages that are not among the timed ones; never STSb test);
* ``sentence-transformers torch fp32`` / ``torch bf16`` (the model cast with ``.bfloat16()``, as
  its efficiency documentation does; on a CPU without native bf16 it is not timed, and the record
  says why: PyTorch would emulate it) and its ``onnx``, ``onnx int8``, ``openvino`` and
  ``openvino int8`` backends when they can be loaded (they need ``optimum``; a backend that cannot
  is recorded as unavailable with the reason). Its int8 paths are made as its efficiency
  documentation makes them, in a copy of the model folder: ``export_dynamic_quantized_onnx_model``
  for the CPU's instruction set (``avx512_vnni``, ``avx512`` or ``avx2``), and
  ``export_static_quantized_openvino_model`` (NNCF post-training quantisation through
  optimum-intel) calibrated on the same 300 sentences as this library's int8, so that int8 is
  timed beside int8 in the same runtime. ``optimum`` pins an older ``transformers`` than this
  library's default environment, so a run with these backends is made in an environment of its
  own: ``pip install "sentence-transformers[onnx,openvino]" datasets -e ".[openvino,offline]"``
  (the record lists the versions of both libraries' packages).

Sentences: ``--n`` (default 2,000) of the ``mixed`` set of ``benchmarks/encode.py``: three
quarters distinct STSb sentences, one quarter MS MARCO passages, shuffled with seed 0.

Example::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/cpu_encode.py --json auto

``--json auto`` names the record by thread count and by whether the CPU has native bf16
(``cpu_encode_2threads.json``, ``cpu_encode_2threads_no_bf16.json``): the two kinds of CPU run
different ``"auto"`` paths, and a run on one does not replace the other's record.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from encode import MODEL, RESULTS, msmarco_passages, sentence_set

#: Issue 24's bars (2 CPU cores): auto vs this library's fp32, the fastest path vs
#: sentence-transformers' fastest backend, and the STSb Spearman points any path may lose.
BAR = {"auto_vs_fp32": 2.0, "fastest_vs_sentence_transformers": 1.5, "sts_points": 0.5}
OURS_FP32 = "sbert_tutor fp32"
#: The packages the backends run on, recorded beside the provenance's default ones.
BACKEND_PACKAGES = ("optimum", "optimum-intel", "optimum-onnx", "onnxruntime", "openvino", "nncf")


def calibration_set(skip_passages: int, n: int = 300, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` sentences for int8 calibration, mixed as the timed set is: 3/4 distinct STSb train
    sentences, 1/4 MS MARCO passages after the first ``skip_passages`` (those are timed).
    Returns the sentences and the files read."""
    from sbert_tutor.data import load_sts

    train = load_sts("stsb", "train")
    distinct = list(dict.fromkeys(t.strip() for t in train.sentences1 + train.sentences2))
    random.Random(seed).shuffle(distinct)
    passages, corpus = msmarco_passages(n // 4, skip=skip_passages)
    chosen = distinct[: n - len(passages)] + passages
    random.Random(seed).shuffle(chosen)
    return chosen, sorted({str(f) for f in train.files} | {corpus})


def ours_paths(
    batch_size: int, threads: int, calibration: list[str]
) -> tuple[dict[str, Callable], dict[str, Any]]:
    """This library's paths, each ``sentences -> [n, d] float32``, and the encoder's settings."""
    from sbert_tutor import SentenceEncoder
    from sbert_tutor.encoders.openvino import to_openvino
    from sbert_tutor.runtime.precision import cpu_has_native_bf16

    encoder = SentenceEncoder.from_pretrained(MODEL, device="cpu")
    paths: dict[str, Callable] = {
        OURS_FP32: lambda s: encoder.encode(s, batch_size=batch_size, show_progress_bar=False),
        "sbert_tutor auto": lambda s: encoder.encode(
            s, batch_size=batch_size, compute_dtype="auto", show_progress_bar=False
        ),
    }
    for precision in ("fp32", "auto", "int8"):
        fast = to_openvino(
            encoder,
            precision,
            threads=threads,
            calibration=calibration if precision == "int8" else None,
        )
        paths[f"sbert_tutor OpenVINO {precision}"] = lambda s, fast=fast: fast.encode(
            s, batch_size=batch_size, show_progress_bar=False
        )
    return paths, {"model": encoder.describe(), "native_bf16": cpu_has_native_bf16()}


#: ``export_dynamic_quantized_onnx_model``'s configurations, best first, with the CPU flag each
#: needs (``/proc/cpuinfo``).
ONNX_INT8_CONFIGS = (("avx512_vnni", "avx512_vnni"), ("avx512", "avx512f"), ("avx2", "avx2"))


def onnx_int8_config() -> str:
    """The best of sentence-transformers' dynamic ONNX int8 configurations the CPU runs."""
    from sbert_tutor.runtime.precision import cpu_flags

    flags = cpu_flags()
    for config, flag in ONNX_INT8_CONFIGS:
        if flag in flags:
            return config
    raise SystemExit(
        "cpu_encode.py: the CPU has none of "
        f"{', '.join(flag for _, flag in ONNX_INT8_CONFIGS)} (read from /proc/cpuinfo): "
        "sentence-transformers' ONNX int8 has no configuration for it; run on an x86-64 CPU"
    )


def st_int8_models(path: str, workdir: Path, calibration: list[str]) -> dict[str, str]:
    """sentence-transformers' int8 models of the model at ``path``, made in a copy of it under
    ``workdir`` as its efficiency documentation makes them: the ONNX model dynamically quantised
    for the CPU, and the OpenVINO model statically quantised (NNCF through optimum-intel)
    calibrated on ``calibration`` (written as a local JSON-lines dataset, since its calibration
    loader takes a dataset name). Returns backend -> model file, relative to the copy."""
    import json
    import shutil

    from sentence_transformers import (
        SentenceTransformer,
        export_dynamic_quantized_onnx_model,
        export_static_quantized_openvino_model,
    )

    copy = workdir / "model"
    shutil.copytree(path, copy)
    files: dict[str, str] = {}
    onnx = SentenceTransformer(str(copy), backend="onnx")
    config = onnx_int8_config()
    before = set((copy / "onnx").glob("*.onnx"))
    export_dynamic_quantized_onnx_model(onnx, config, str(copy))
    (made,) = set((copy / "onnx").glob("*.onnx")) - before
    files["onnx"] = str(made.relative_to(copy))

    from optimum.intel import OVQuantizationConfig

    data = workdir / "calibration"
    data.mkdir()
    with open(data / "train.jsonl", "w", encoding="utf-8") as f:
        for sentence in calibration:
            f.write(json.dumps({"text": sentence}) + "\n")
    openvino = SentenceTransformer(str(copy), backend="openvino")
    export_static_quantized_openvino_model(
        openvino,
        OVQuantizationConfig(num_samples=len(calibration)),
        str(copy),
        dataset_name=str(data),
        dataset_config_name="default",
        dataset_split="train",
        column_name="text",
    )
    files["openvino"] = "openvino/openvino_model_qint8_quantized.xml"
    return files


def reference_paths(
    batch_size: int, calibration: list[str], workdir: Path
) -> tuple[dict[str, Callable], dict[str, str]]:
    """sentence-transformers' backends that load here, and why the others did not. Its int8
    models are made under ``workdir`` (:func:`st_int8_models`) when its backends load."""
    import torch
    from sentence_transformers import SentenceTransformer

    from sbert_tutor.encoders.resolve import resolve_model
    from sbert_tutor.runtime.precision import cpu_has_native_bf16

    path = str(resolve_model(MODEL).path)
    int8: dict[str, str] = {}
    int8_error: str | None = None
    try:
        int8 = st_int8_models(path, workdir, calibration)
    except Exception as exc:  # noqa: BLE001 - any failure is recorded as the reason
        int8_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"

    def quantized(backend: str) -> Callable[[], Any]:
        def load() -> Any:
            if int8_error is not None:
                raise RuntimeError(int8_error)
            return SentenceTransformer(
                str(workdir / "model"),
                backend=backend,
                model_kwargs={"file_name": int8[backend]},
            )

        return load

    loaders: dict[str, Callable[[], Any]] = {
        "sentence-transformers torch fp32": lambda: SentenceTransformer(path, device="cpu"),
        "sentence-transformers torch bf16": lambda: SentenceTransformer(path, device="cpu").to(
            torch.bfloat16
        ),
        "sentence-transformers onnx": lambda: SentenceTransformer(path, backend="onnx"),
        "sentence-transformers onnx int8": quantized("onnx"),
        "sentence-transformers openvino": lambda: SentenceTransformer(path, backend="openvino"),
        "sentence-transformers openvino int8": quantized("openvino"),
    }
    paths: dict[str, Callable] = {}
    unavailable: dict[str, str] = {}
    if not cpu_has_native_bf16():
        del loaders["sentence-transformers torch bf16"]
        unavailable["sentence-transformers torch bf16"] = (
            "not timed: the CPU of the run has no native bf16 (none of avx512_bf16, amx_bf16, Arm bf16), "
            "so PyTorch emulates bf16 through fp32, several times slower than fp32 itself"
        )
    for name, load in loaders.items():
        try:
            model = load()
        except Exception as exc:  # noqa: BLE001 - any failure to load is recorded as the reason
            unavailable[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
            continue
        paths[name] = lambda s, model=model: np.asarray(
            model.encode(s, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False),
            dtype=np.float32,
        )
    return paths, unavailable


def sts_spearman(encode: Callable, pairs: Any) -> float:
    """Spearman x100 of cosine on STS pairs (scipy's, independent of the library's metrics)."""
    from scipy.stats import spearmanr

    a = encode(pairs.sentences1)
    b = encode(pairs.sentences2)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(spearmanr(cos, pairs.scores).statistic * 100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="sentences of the mixed set")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timed rounds")
    parser.add_argument("--json", default=None, help="results file; 'auto' names it")
    args = parser.parse_args(argv)

    import torch
    from tqdm.auto import tqdm

    from sbert_tutor.commands.common import write_json
    from sbert_tutor.data import load_sts
    from sbert_tutor.provenance import provenance

    torch.set_num_threads(args.threads)
    sentences, files = sentence_set("mixed", args.n)
    calibration, calibration_files = calibration_set(skip_passages=args.n // 4)
    files = sorted(set(files) | set(calibration_files))
    ours, settings = ours_paths(args.batch_size, args.threads, calibration)
    workdir = Path(tempfile.mkdtemp(prefix="cpu_encode_"))
    theirs, unavailable = reference_paths(args.batch_size, calibration, workdir)
    paths = {**ours, **theirs}
    for name, reason in unavailable.items():
        print(f"unavailable: {name}: {reason}", file=sys.stderr)

    first: dict[str, float] = {}
    outputs: dict[str, np.ndarray] = {}
    for name, encode in tqdm(paths.items(), desc="first pass", unit="path"):
        start = time.perf_counter()
        outputs[name] = encode(sentences)
        first[name] = time.perf_counter() - start
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in tqdm(range(args.repeats), desc="timed rounds", unit="round"):
        for name, encode in paths.items():
            start = time.perf_counter()
            encode(sentences)
            times[name].append(time.perf_counter() - start)
    sts = load_sts("stsb", "test")
    files = sorted(set(files) | {str(f) for f in sts.files})
    spearman = {
        name: sts_spearman(encode, sts) for name, encode in tqdm(paths.items(), desc="STSb test")
    }

    base = outputs[OURS_FP32]
    median = {name: statistics.median(t) for name, t in times.items()}
    rate = {name: len(sentences) / m for name, m in median.items()}
    reference_fastest = max(theirs, key=rate.get) if theirs else None
    rows = []
    for name in paths:
        rows.append(
            {
                "path": name,
                "library": "sentence-transformers" if name in theirs else "sbert_tutor",
                "sentences_per_s": rate[name],
                "median_s": median[name],
                "first_pass_s": first[name],
                "times_s": times[name],
                "vs_sbert_tutor_fp32": rate[name] / rate[OURS_FP32],
                "vs_sentence_transformers_fastest": (
                    rate[name] / rate[reference_fastest] if reference_fastest else None
                ),
                "stsb_test_spearman": spearman[name],
                "stsb_points_vs_fp32": spearman[name] - spearman[OURS_FP32],
                "max_abs_diff_vs_sbert_tutor_fp32": float(np.abs(outputs[name] - base).max()),
            }
        )
    ours_fastest = max(ours, key=rate.get)
    criteria = [
        {
            "criterion": "auto vs sbert_tutor fp32",
            "value": rate["sbert_tutor auto"] / rate[OURS_FP32],
            "bar": BAR["auto_vs_fp32"],
        },
        {
            "criterion": f"fastest path ({ours_fastest}) vs sentence-transformers' fastest "
            f"({reference_fastest})",
            "value": rate[ours_fastest] / rate[reference_fastest] if reference_fastest else None,
            "bar": BAR["fastest_vs_sentence_transformers"],
        },
        {
            "criterion": f"STSb points lost by the fastest path ({ours_fastest})",
            "value": spearman[OURS_FP32] - spearman[ours_fastest],
            "bar": BAR["sts_points"],
            "at_most": True,
        },
    ]
    for c in criteria:
        value = c["value"]
        c["met"] = value is not None and (
            value <= c["bar"] if c.get("at_most") else value >= c["bar"]
        )
        print(
            f"{c['criterion']}: {value:.3f} (bar {c['bar']}) -> {'met' if c['met'] else 'NOT met'}"
        )
    for row in rows:
        print(
            f"{row['path']:40s} {row['sentences_per_s']:8.1f} sent/s  "
            f"x{row['vs_sbert_tutor_fp32']:.2f} vs fp32  STSb {row['stsb_test_spearman']:.2f}"
        )
    if args.json:
        import openvino

        kind = "" if settings["native_bf16"] else "_no_bf16"
        out = (
            RESULTS / f"cpu_encode_{args.threads}threads{kind}.json"
            if args.json == "auto"
            else Path(args.json)
        )
        write_json(
            out,
            {
                "benchmark": "cpu_encode",
                "model": MODEL,
                "n_sentences": len(sentences),
                "sentence_set": "mixed: 3/4 distinct STSb sentences, 1/4 MS MARCO passages, seed 0",
                "int8_calibration": f"{len(calibration)} sentences: 3/4 distinct STSb train "
                "sentences, 1/4 MS MARCO passages after the timed ones, seed 0",
                "batch_size": args.batch_size,
                "threads": args.threads,
                "repeats": args.repeats,
                "results": rows,
                "criteria": criteria,
                "unavailable": unavailable,
                "provenance": provenance(
                    data_files=files,
                    model=settings["model"],
                    packages=BACKEND_PACKAGES,
                    extra={
                        "command": sys.argv,
                        "native_bf16": settings["native_bf16"],
                        "openvino": openvino.__version__.split("-")[0],
                    },
                ),
            },
        )
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
