r"""Measuring speed honestly (chapter 13): sentences per second, :math:`n / t`, :math:`t` the
*median* wall time over ``repeats`` runs, interleaved with the variants compared (smart batching
of Reimers and Gurevych, 2019, section 7, on and off; sentence-transformers) on the same
sentences and threads, outputs checked to agree (:func:`encode_throughput`, also run by
``benchmarks/encode.py``). GPU figures: recorded runs of :data:`GPU_RUN_COMMAND`.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book.cost import median_seconds
from sbert_tutor.book.figures import new_axes, new_panels
from sbert_tutor.book.recorded import how_recorded, recorded_matching
from sbert_tutor.book.sizes import ChapterSizes, register_sizes
from sbert_tutor.data import load_sts
from sbert_tutor.data.msmarco import mini_corpus_passages
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

__all__ = [
    "CPU_BACKENDS_RECORD",
    "CPU_PATHS_RECORD",
    "LIKE_WITH_LIKE",
    "EfficiencySizes",
    "EncodeFn",
    "GPURunReport",
    "GPU_RESULTS",
    "GPU_RUN_COMMAND",
    "SIZES",
    "encode_table",
    "encode_throughput",
    "gpu_run_report",
    "interleaved_times",
    "mixed_length_sentences",
    "plot_cpu_paths",
    "plot_operation_times",
    "plot_throughput",
    "plot_throughput_by_length",
    "sentence_transformers_reference",
    "throughput_ratios",
]


@dataclass(frozen=True, kw_only=True)
class EfficiencySizes(ChapterSizes):
    """Chapter 13 (computational efficiency): STSb sentences and MS MARCO passages timed, timing
    repeats, and the corpus size of the search benchmark."""

    sts_sentences: int
    passages: int
    repeats: int
    search_corpus: int


_FULL = {"sts_sentences": 5000, "passages": 2000, "search_corpus": 1_000_000}
#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, EfficiencySizes] = register_sizes(
    "13_computational_efficiency",
    {
        "quick": EfficiencySizes(sts_sentences=500, passages=100, repeats=2, search_corpus=100_000),
        "t4": EfficiencySizes(repeats=3, **_FULL),
        "paper": EfficiencySizes(repeats=5, **_FULL),
    },
)

#: What records the GPU figures, run in the project root on a machine with an NVIDIA GPU.
GPU_RUN_COMMAND = "bash benchmarks/gpu_run.sh"
#: The results files a GPU run writes.
GPU_RESULTS = ("encode_gpu_*.json", "train_step_gpu_*.json")


def encode_table(record: Mapping[str, Any]) -> pd.DataFrame:
    """One row per (set, batch size, dtype): first pass and warm sentences/s (ours and
    sentence-transformers'), the forward-only bound, end-to-end / forward-only, padding share
    and the largest difference from fp32."""
    key = itemgetter("set", "batch_size", "dtype")
    firsts = {key(r): r for r in record.get("first_pass", [])}
    rows = []
    for r in record.get("results", []):
        first, padded = firsts.get(key(r), {}), r.get("padded_tokens")
        rows.append(
            {
                "set": r["set"],
                "batch size": r["batch_size"],
                "dtype": r["dtype"],
                "first pass": first.get("ours_sps"),
                "first pass, sentence-transformers": first.get("st_sps"),
                "warm": r.get("warm_sps"),
                "warm, sentence-transformers": r.get("st_warm_sps"),
                "forward only": r.get("forward_only_sps"),
                "end-to-end / forward-only": r.get("end_to_end_vs_forward_only"),
                "padding share": 1.0 - r["real_tokens"] / padded if padded else None,
                "max |x - fp32|": r.get("max_abs_diff_vs_fp32"),
            }
        )
    return pd.DataFrame(rows).set_index(["set", "batch size", "dtype"])


@dataclass
class GPURunReport:
    """The recorded GPU runs chapter 13 shows, by results file name (empty when none), and a
    note on how each was made, or on how to measure them."""

    runs: dict[str, dict[str, Any]]

    @property
    def note(self) -> str:
        if not self.runs:
            return (
                "No GPU run is recorded: every GPU figure of this section is unmeasured. On a "
                f"machine with an NVIDIA GPU, `{GPU_RUN_COMMAND}` in the project root measures "
                "them (encode: first pass, warm median, forward-only bound and "
                "sentence-transformers in fp32/fp16/bf16; one STSb epoch per training "
                "precision) and writes sbert_tutor/book/results/encode_gpu_<gpu>.json and "
                "train_step_gpu_cosine_<gpu>.json, which this section then shows."
            )
        hows = {name: how_recorded(record) for name, record in self.runs.items()}
        return "Recorded GPU runs:\n" + "\n".join(
            f"{name}: {how['hardware']}, commit {how['git commit']}, {how['timestamp']}; "
            f"{how['packages']}; command: {how['command']}"
            for name, how in hows.items()
        )

    def plot(self):
        """Warm and first-pass sentences/s per dtype, and end-to-end vs forward-only, for each
        recorded encode run; ``None`` when none is recorded."""
        encodes = {k: v for k, v in self.runs.items() if k.startswith("encode_gpu")}
        if not encodes:
            return None
        axes = new_panels(None, 2, (11, 3.6 * len(encodes)), rows=len(encodes))
        for row, record in enumerate(encodes.values()):
            table = encode_table(record)
            table.index = pd.Index([f"{s}, b{b}, {d}" for s, b, d in table.index], name="config")
            speeds, ratio = axes[2 * row], axes[2 * row + 1]
            table.plot.barh(y=["first pass", "warm", "forward only"], ax=speeds)
            speeds.set_xlabel("sentences/s")
            speeds.set_title(f"{record.get('gpu')}: first pass, warm, forward-only")
            table.plot.barh(y="end-to-end / forward-only", ax=ratio)
            ratio.axvline(0.6, color="grey", linestyle="--")
            ratio.set_title("end-to-end / forward-only (dashed: 0.6)")
            how = how_recorded(record)
            stamp = f"recorded: {how['git commit']}, {how['timestamp']}"
            speeds.figure.text(0.01, 1 - (row + 1) / len(encodes) + 0.005, stamp, fontsize=7)
        axes[0].figure.tight_layout()
        return axes[0].figure


def gpu_run_report(folder: str | Path | None = None) -> GPURunReport:
    """The GPU runs recorded in ``folder`` (default: the package's recorded results)."""
    return GPURunReport(recorded_matching(GPU_RESULTS, folder))


def plot_throughput(table: pd.DataFrame, ax=None):
    """Sentences/s vs batch size, one line per variant (chapter 13)."""
    ax = new_axes(ax, figsize=(6, 4))
    for variant, rows in table.groupby("variant", sort=False):
        ax.plot(rows["batch_size"], rows["sentences_per_s"], "o-", label=variant)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("sentences / second")
    ax.legend(fontsize=8)
    return ax


def plot_throughput_by_length(table: pd.DataFrame, ax=None):
    """Sentences/s per input-length group."""
    ax = new_axes(ax, figsize=(6, 3.5))
    ax.bar(table["tokens"], table["sentences_per_s"])
    ax.set_xlabel("tokens per input")
    ax.set_ylabel("sentences / second")
    return ax


#: An encoder as the speed comparison calls it: ``(sentences, batch_size) -> [n, d] array``.
EncodeFn = Callable[[Sequence[str], int], np.ndarray]


def sentence_transformers_reference(model_folder: str, device: str = "cpu") -> EncodeFn | None:
    """``SentenceTransformer(model_folder).encode`` as an :data:`EncodeFn`: the reference compared
    with, not a dependency of this library (``None`` when it is not installed)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    model = SentenceTransformer(model_folder, device=device)
    return lambda sentences, batch_size: model.encode(
        list(sentences), batch_size=batch_size, convert_to_numpy=True
    )


def interleaved_times(
    variants: Mapping[str, Callable[[], Any]], repeats: int
) -> tuple[dict[str, float], dict[str, Any]]:
    """Median seconds of each variant over ``repeats`` rounds, and each variant's last output.

    Every round runs every variant once, in turn, so that machine noise (another process, a
    frequency change) falls on all of them alike instead of on whichever happened to run then.
    """
    times: dict[str, list[float]] = {name: [] for name in variants}
    outputs: dict[str, Any] = {}
    for _ in range(repeats):
        for name, fn in variants.items():
            seconds, outputs[name] = median_seconds(fn, 1)  # one timed call
            times[name].append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}, outputs


def encode_throughput(
    encoder: SentenceEncoder,
    sentences: Sequence[str],
    batch_sizes: Sequence[int] = (32, 64, 128),
    repeats: int = 3,
    reference: EncodeFn | None = None,
    reference_name: str = "sentence-transformers",
) -> pd.DataFrame:
    """Sentences/s of ``encoder.encode`` with smart batching on and off, and of ``reference``:
    one row per (batch size, variant); the reference's rows also carry ``max_abs_diff``, the
    largest difference between its embeddings and ours."""
    encoder.encode(list(sentences[:64]), batch_size=32)  # warm-up
    if reference is not None:
        reference(list(sentences[:64]), 32)
    rows = []
    for size in batch_sizes:
        variants = {
            "sbert_tutor (smart batching)": lambda b=size: encoder.encode(sentences, batch_size=b),
            "sbert_tutor (input order)": lambda b=size: encoder.encode(
                sentences, batch_size=b, sort_by_length=False
            ),
        }
        if reference is not None:
            variants[reference_name] = lambda b=size: reference(sentences, b)
        seconds, outputs = interleaved_times(variants, repeats)
        for name, median in seconds.items():
            row = {"batch_size": size, "variant": name, "sentences_per_s": len(sentences) / median}
            if name == reference_name:
                ours = outputs["sbert_tutor (smart batching)"]
                row["max_abs_diff"] = float(np.abs(outputs[name] - ours).max())
            rows.append(row)
    return pd.DataFrame(rows)


def throughput_ratios(
    table: pd.DataFrame, reference_name: str = "sentence-transformers"
) -> pd.DataFrame:
    """Per batch size: smart-batching speed-up and our throughput relative to the reference."""
    wide = table.pivot(index="batch_size", columns="variant", values="sentences_per_s")
    ours = wide["sbert_tutor (smart batching)"]
    out = pd.DataFrame({"smart_batching_speedup": ours / wide["sbert_tutor (input order)"]})
    if reference_name in wide:
        out[f"ours_vs_{reference_name}"] = ours / wide[reference_name]
    return out


def mixed_length_sentences(
    n_sts: int = 1500, n_passages: int = 500, seed: int = 0
) -> tuple[list[str], list[str]]:
    """Up to ``n_sts`` distinct STSb test sentences and the first ``n_passages`` passages of
    ``msmarco/corpus_mini.tsv`` (:func:`~sbert_tutor.data.msmarco.mini_corpus_passages`: from
    ``SBERT_TUTOR_DATA`` or the hub), shuffled; and the data files (or hub source) read."""
    stsb = load_sts("stsb", "test")
    sentences = list(dict.fromkeys(stsb.sentences1 + stsb.sentences2))[:n_sts]
    files = [str(f) for f in stsb.files] or [stsb.source]
    if n_passages:
        passages, source = mini_corpus_passages(n_passages)
        files.append(source)
        sentences += passages
    random.Random(seed).shuffle(sentences)
    return sentences, files


#: The recorded run of ``benchmarks/cpu_encode.py`` (every CPU path beside
#: sentence-transformers' backends, with STSb) the chapter shows.
CPU_PATHS_RECORD = "cpu_encode_2threads"
#: The same, with sentence-transformers' ONNX and OpenVINO backends installed (in an environment
#: of their own, see the script), so that its int8 models are timed beside this library's.
CPU_BACKENDS_RECORD = "cpu_encode_2threads_no_bf16"
#: The paths timed in both libraries with the same runtime and precision: (what, this library's
#: path, sentence-transformers' path). OpenVINO "auto" and sentence-transformers' OpenVINO backend
#: both run the CPU's default inference precision (bf16 where the CPU has it natively, else fp32).
LIKE_WITH_LIKE = (
    ("OpenVINO int8", "sbert_tutor OpenVINO int8", "sentence-transformers openvino int8"),
    ("OpenVINO, default precision", "sbert_tutor OpenVINO auto", "sentence-transformers openvino"),
    ("PyTorch fp32", "sbert_tutor fp32", "sentence-transformers torch fp32"),
)


def plot_cpu_paths(table: pd.DataFrame, ax=None):
    """Sentences/s of each CPU path (bars, this library's and sentence-transformers' in two
    colours), each labelled with its STSb Spearman change from fp32."""
    ax = new_axes(ax, figsize=(7, 0.45 * len(table) + 1))
    ordered = table.sort_values("sentences_per_s")
    colours = ["C0" if lib == "sbert_tutor" else "C1" for lib in ordered["library"]]
    bars = ax.barh(ordered.index, ordered["sentences_per_s"], color=colours)
    ax.bar_label(bars, [f"  STSb {p:+.2f}" for p in ordered["stsb_points_vs_fp32"]], fontsize=8)
    ax.set_xlabel("sentences / s (median of the timed rounds)")
    ax.set_xlim(0, ordered["sentences_per_s"].max() * 1.3)
    ax.set_title("CPU encode paths: this library (blue), sentence-transformers (orange)")
    return ax


def plot_operation_times(table: pd.DataFrame, baseline: str = "fp32", ax=None):
    """One stacked bar a precision of an ``operation_speedups`` table (the chapter's page): the
    seconds of each kind of operation, each segment labelled with its speedup over
    ``baseline`` (Amdahl's law in a picture: the segments that do not shrink set the total)."""
    ax = new_axes(ax, figsize=(7, 2.6))
    kinds = [k for k in table.index if k != "whole encode"]
    names = [c[: -len(" s")] for c in table.columns if c.endswith(" s")]
    for row, name in enumerate(names):
        left, whole = 0.0, table.loc["whole encode", f"{name} s"]
        for colour, kind in enumerate(kinds):
            width = float(table.loc[kind, f"{name} s"])
            bar = ax.barh(row, width, left=left, color=f"C{colour}", label=None if row else kind)
            if name != baseline and width > 0.06 * whole:  # wide enough to hold its label
                speedup = f"{table.loc[kind, f'{name} speedup']:.1f}x"
                ax.bar_label(bar, [speedup], label_type="center", fontsize=8, color="white")
            left += width
        total = f"{whole:.2f} s"
        if name != baseline:
            total += f", {table.loc['whole encode', f'{name} speedup']:.2f}x"
        ax.text(left, row, f"  {total}", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names)
    ax.set_xlim(0, table.loc["whole encode", [f"{n} s" for n in names]].max() * 1.35)
    ax.set_xlabel("seconds of one encode (operators' self time)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    ax.set_title(f"Where the time goes; inside a bar: speedup over {baseline}")
    return ax
