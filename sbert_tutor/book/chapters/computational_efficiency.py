r"""Measuring speed honestly (chapter 13, computational efficiency).

Throughput is sentences per second, :math:`n / t`, with :math:`t` the *median* wall time over
``repeats`` runs. When a reference library is compared, both run in the same process on the same
sentences with the same thread count, interleaved run by run so that machine noise hits both
alike (:func:`interleaved_times`), and their outputs are checked to agree
(:func:`encode_throughput`: smart batching of Reimers and Gurevych, 2019, section 7, on and off,
beside sentence-transformers; ``benchmarks/encode.py`` runs the same code for the recorded run).

The GPU figures come from recorded runs of ``bash benchmarks/gpu_run.sh`` (``encode_gpu_*.json``,
``train_step_gpu_*.json``), each with its machine's provenance: :func:`gpu_run_report` reads them,
or says that the GPU figures are unmeasured and gives the command that measures them.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sbert_tutor.book.cost import median_seconds
from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.recorded import how_recorded, recorded_matching
from sbert_tutor.book.sizes import ChapterSizes, register_sizes
from sbert_tutor.data import load_sts
from sbert_tutor.data.msmarco import mini_corpus_passages
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

__all__ = [
    "CPU_BACKENDS_COMMAND",
    "CPU_BACKENDS_RECORD",
    "CPU_PATHS_COMMAND",
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


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, EfficiencySizes] = register_sizes(
    "13_computational_efficiency",
    {
        "quick": EfficiencySizes(sts_sentences=500, passages=100, repeats=2, search_corpus=100_000),
        "t4": EfficiencySizes(
            sts_sentences=5000, passages=2000, repeats=3, search_corpus=1_000_000
        ),
        "paper": EfficiencySizes(
            sts_sentences=5000, passages=2000, repeats=5, search_corpus=1_000_000
        ),
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
    firsts = {(r["set"], r["batch_size"], r["dtype"]): r for r in record.get("first_pass", [])}
    rows = []
    for r in record.get("results", []):
        first = firsts.get((r["set"], r["batch_size"], r["dtype"]), {})
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
                "padding share": 1.0 - r["real_tokens"] / r["padded_tokens"]
                if r.get("padded_tokens")
                else None,
                "max |x - fp32|": r.get("max_abs_diff_vs_fp32"),
            }
        )
    return pd.DataFrame(rows).set_index(["set", "batch size", "dtype"])


@dataclass
class GPURunReport:
    """The recorded GPU runs chapter 13 shows, by results file name (or none), and a note on how
    each was made."""

    runs: dict[str, dict[str, Any]]
    note: str

    @property
    def measured(self) -> bool:
        return bool(self.runs)

    def plot(self):
        """Warm and first-pass sentences/s per dtype, and end-to-end vs forward-only, for each
        recorded encode run; ``None`` when none is recorded."""
        encodes = {k: v for k, v in self.runs.items() if k.startswith("encode_gpu")}
        if not encodes:
            return None
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(len(encodes), 2, figsize=(11, 3.6 * len(encodes)), squeeze=False)
        for row, record in enumerate(encodes.values()):
            table = encode_table(record).reset_index()
            table["config"] = (
                table["set"] + ", b" + table["batch size"].astype(str) + ", " + table["dtype"]
            )
            table.plot.barh(x="config", y=["first pass", "warm", "forward only"], ax=axes[row][0])
            axes[row][0].set_xlabel("sentences/s")
            axes[row][0].set_title(f"{record.get('gpu')}: first pass, warm, forward-only")
            table.plot.barh(x="config", y="end-to-end / forward-only", ax=axes[row][1])
            axes[row][1].axvline(0.6, color="grey", linestyle="--")
            axes[row][1].set_title("end-to-end / forward-only (dashed: 0.6)")
            stamp = how_recorded(record)
            fig.text(
                0.01,
                1 - (row + 1) / len(encodes) + 0.005,
                f"recorded: {stamp['git commit']}, {stamp['timestamp']}",
                fontsize=7,
            )
        fig.tight_layout()
        return fig


def gpu_run_report(folder: str | Path | None = None) -> GPURunReport:
    """The recorded GPU runs and a provenance note, or a note saying they are unmeasured and how
    to measure them."""
    runs = recorded_matching(GPU_RESULTS, folder)
    if not runs:
        return GPURunReport(
            runs={},
            note=(
                "No GPU run is recorded: every GPU figure of this section is unmeasured. On a "
                f"machine with an NVIDIA GPU, `{GPU_RUN_COMMAND}` in the project root measures "
                "them (encode: first pass, warm median, forward-only bound and "
                "sentence-transformers in fp32/fp16/bf16; one STSb epoch per training "
                "precision) and writes sbert_tutor/book/results/encode_gpu_<gpu>.json and "
                "train_step_gpu_cosine_<gpu>.json, which this section then shows."
            ),
        )
    notes = []
    for name, record in runs.items():
        how = how_recorded(record)
        notes.append(
            f"{name}: {how['hardware']}, commit {how['git commit']}, {how['timestamp']}; "
            f"{how['packages']}; command: {how['command']}"
        )
    return GPURunReport(runs=runs, note="Recorded GPU runs:\n" + "\n".join(notes))


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
    """``SentenceTransformer(model_folder).encode`` as an :data:`EncodeFn`; ``None`` if not installed.

    sentence-transformers is not a dependency of this library: it is the reference we compare with.
    """
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    model = SentenceTransformer(model_folder, device=device)

    def encode(sentences: Sequence[str], batch_size: int) -> np.ndarray:
        return model.encode(list(sentences), batch_size=batch_size, convert_to_numpy=True)

    return encode


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
    """Sentences/s of ``encoder.encode`` with smart batching on and off, and of ``reference``.

    Returns one row per (batch size, variant) with ``sentences_per_s``; rows of the reference also
    carry ``max_abs_diff``, the largest difference between its embeddings and ours.
    """
    encoder.encode(list(sentences[:64]), batch_size=32)  # warm-up
    if reference is not None:
        reference(list(sentences[:64]), 32)
    rows = []
    for batch_size in batch_sizes:
        variants: dict[str, Callable[[], np.ndarray]] = {
            "sbert_tutor (smart batching)": lambda b=batch_size: encoder.encode(
                sentences, batch_size=b
            ),
            "sbert_tutor (input order)": lambda b=batch_size: encoder.encode(
                sentences, batch_size=b, sort_by_length=False
            ),
        }
        if reference is not None:
            variants[reference_name] = lambda b=batch_size: reference(sentences, b)
        seconds, outputs = interleaved_times(variants, repeats)
        ours = outputs["sbert_tutor (smart batching)"]
        for name, median in seconds.items():
            row = {
                "batch_size": batch_size,
                "variant": name,
                "sentences_per_s": len(sentences) / median,
            }
            if name == reference_name:
                row["max_abs_diff"] = float(np.abs(outputs[name] - ours).max())
            rows.append(row)
    return pd.DataFrame(rows)


def throughput_ratios(
    table: pd.DataFrame, reference_name: str = "sentence-transformers"
) -> pd.DataFrame:
    """Per batch size: smart-batching speed-up and our throughput relative to the reference."""
    wide = table.pivot(index="batch_size", columns="variant", values="sentences_per_s")
    out = pd.DataFrame(index=wide.index)
    out["smart_batching_speedup"] = (
        wide["sbert_tutor (smart batching)"] / wide["sbert_tutor (input order)"]
    )
    if reference_name in wide:
        out[f"ours_vs_{reference_name}"] = (
            wide["sbert_tutor (smart batching)"] / wide[reference_name]
        )
    return out


def mixed_length_sentences(
    n_sts: int = 1500, n_passages: int = 500, seed: int = 0
) -> tuple[list[str], list[str]]:
    """Up to ``n_sts`` distinct STSb test sentences and ``n_passages`` MS MARCO passages, shuffled.

    Passages are the first ``n_passages`` of ``msmarco/corpus_mini.tsv``: from ``SBERT_TUTOR_DATA``
    when set, else rebuilt from the hub (:func:`~sbert_tutor.data.msmarco_hub.mini_corpus_head`).
    Returns the sentences and the data files (or hub source) read.
    """
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
CPU_PATHS_COMMAND = (
    "SBERT_TUTOR_DATA=<data> HF_HUB_OFFLINE=1 python benchmarks/cpu_encode.py --json auto"
)
#: The recorded run of ``benchmarks/cpu_encode.py`` made with sentence-transformers' ONNX and
#: OpenVINO backends installed (in an environment of their own, see the script), so that its int8
#: models are timed beside this library's: the chapter's like-with-like comparison.
CPU_BACKENDS_RECORD = "cpu_encode_2threads_no_bf16"
CPU_BACKENDS_COMMAND = (
    'pip install "sentence-transformers[onnx,openvino]" datasets -e ".[openvino,offline]" && '
    + CPU_PATHS_COMMAND
)
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
    ax.barh(ordered.index, ordered["sentences_per_s"], color=colours)
    for y, (rate, points) in enumerate(
        zip(ordered["sentences_per_s"], ordered["stsb_points_vs_fp32"], strict=True)
    ):
        ax.text(rate, y, f"  STSb {points:+.2f}", va="center", fontsize=8)
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
        left = 0.0
        for colour, kind in enumerate(kinds):
            width = float(table.loc[kind, f"{name} s"])
            ax.barh(row, width, left=left, color=f"C{colour}", label=kind if row == 0 else None)
            speedup = table.loc[kind, f"{name} speedup"] if name != baseline else None
            if speedup is not None and width > 0.06 * table.loc["whole encode", f"{name} s"]:
                ax.text(
                    left + width / 2,
                    row,
                    f"{speedup:.1f}x",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white",
                )
            left += width
        total = f"{table.loc['whole encode', f'{name} s']:.2f} s"
        if name != baseline:
            total += f", {table.loc['whole encode', f'{name} speedup']:.2f}x"
        ax.text(left, row, f"  {total}", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names)
    ax.set_xlim(0, table.loc["whole encode", [f"{n} s" for n in names]].max() * 1.35)
    ax.set_xlabel("seconds of one encode (operators' self time)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    ax.set_title(f"Where the time goes; inside a bar: speedup over {baseline}")
    return ax
