r"""Measuring speed honestly (chapter 13, computational efficiency).

Throughput is sentences per second, :math:`n / t`, with :math:`t` the *median* wall time over
``repeats`` runs. When a reference library is compared, both run in the same process on the same
sentences with the same thread count, interleaved run by run so that machine noise hits both
alike, and their outputs are checked to agree.

*Smart batching* (SBERT paper, section 7): sorting inputs by length before batching means each
batch pads only to its own longest input. For a batch :math:`B` of inputs with :math:`T_i` tokens
each the transformer processes :math:`|B| \cdot \max_{i \in B} T_i` token positions; sorting makes
:math:`\max_{i \in B} T_i` close to every :math:`T_i` of the batch.

The GPU figures of chapter 13 come from recorded runs, each with the provenance of the machine
that made it.

A GPU run of ``bash benchmarks/gpu_run.sh`` writes ``sbert_tutor/book/results/encode_gpu_<gpu>.json``
(``benchmarks/encode.py --preset gpu``) and ``train_step_gpu_<loss>_<gpu>.json``
(``benchmarks/train_step.py --device cuda``), each with its provenance (git commit, GPU,
packages, data hashes, command). :func:`gpu_run_report` turns whatever is recorded into tables,
figures and a note on how they were made; when nothing is recorded it says that the GPU figures
are unmeasured and gives the command that measures them.

What the chapter shows from a run, in the chapter's notation (a batch :math:`B` of inputs with
:math:`T_i` tokens, padded to width :math:`W_B`):

* **padding waste**, :math:`1 - \sum_i T_i / \sum_B |B|\, W_B` over all batches, with and without
  width bucketing (:func:`padding_waste` computes it from token counts alone, without a GPU, with
  :func:`padded_work`);
* **the per-shape cost**: the *first* pass in a fresh process against the warm median, per
  compute dtype, with bucketing and cuDNN attention on and off;
* **mixed precision**: warm sentences/s in fp32, fp16 and bf16 and the largest embedding
  difference from fp32;
* **host-bound vs forward-only**: end-to-end sentences/s over the forward-only bound (the same
  batches already on the GPU).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from sbert_tutor.book.cost import median_seconds
from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.recorded import how_recorded, recorded_matching
from sbert_tutor.book.sizes import ChapterSizes, register_sizes
from sbert_tutor.data import load_sts
from sbert_tutor.data.msmarco import mini_corpus_passages
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.runtime.batching import bucket_width
from sbert_tutor.search.exact import semantic_search

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
    "bucketing_table",
    "cpu_paths_summary",
    "encode_table",
    "encode_throughput",
    "gpu_run_report",
    "interleaved_times",
    "length_cost_summary",
    "like_with_like",
    "mixed_length_sentences",
    "padded_work",
    "padding_savings",
    "padding_waste",
    "plot_cpu_paths",
    "plot_operation_times",
    "plot_throughput",
    "plot_throughput_by_length",
    "recorded_checks_table",
    "recorded_encode_summary",
    "search_throughput",
    "sentence_transformers_reference",
    "speedup_against_padding",
    "throughput_by_length",
    "throughput_ratios",
    "throughput_summary",
    "token_counts",
    "train_table",
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


def token_counts(encoder: Any, sentences: Sequence[str]) -> np.ndarray:
    """Token count of each sentence as ``encoder`` tokenises it (special tokens included, cut to
    its ``max_seq_length``)."""
    ids, _ = encoder.token_ids(list(sentences))
    return np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))


def padded_work(
    lengths: Sequence[int] | np.ndarray, batch_size: int, bucket: int | None = None
) -> dict[str, int]:
    r"""The work a padded transformer does on inputs of token ``lengths``, batched in the order given.

    Consecutive batches :math:`B` of ``batch_size`` inputs are each padded to a width
    :math:`W_B`: their longest input :math:`\max_{i \in B} T_i`, rounded up to a multiple of
    ``bucket`` when one is given. The model then processes :math:`\sum_B |B|\,W_B` token
    positions; self-attention, quadratic in the padded width, costs about
    :math:`\sum_B |B|\,W_B^2`.

    Returns ``{"tokens", "positions", "attention", "widths"}``: real tokens, padded positions,
    the attention proxy and the number of distinct batch widths (shapes the model sees).
    """
    values = [int(x) for x in lengths]
    if not values or batch_size < 1:
        raise ValueError(
            f"padded_work needs token lengths and a batch size >= 1, got {len(values)} lengths "
            f"and batch_size={batch_size}"
        )
    positions = attention = 0
    widths = set()
    for start in range(0, len(values), batch_size):
        batch = values[start : start + batch_size]
        width = bucket_width(max(batch), bucket)
        widths.add(width)
        positions += len(batch) * width
        attention += len(batch) * width * width
    return {
        "tokens": sum(values),
        "positions": positions,
        "attention": attention,
        "widths": len(widths),
    }


def padding_waste(
    token_lengths: Sequence[int] | np.ndarray,
    batch_size: int,
    buckets: Sequence[int | None] = (None, 32),
    sort: bool = True,
) -> pd.DataFrame:
    r"""Share of padded token positions, :math:`1 - \sum_i T_i / \sum_B |B|\,W_B`, per
    bucketing (``None``: pad to the longest row; ``32``: round widths up to a multiple of 32),
    for batches cut in input order and, with ``sort``, after sorting by length (smart batching).

    Columns: ``order``, ``bucket``, ``real tokens``, ``padded positions``, ``padding share``,
    ``distinct widths`` (how many batch shapes the model sees).
    """
    lengths = np.asarray(token_lengths, dtype=np.int64)
    orders = {"input order": lengths}
    if sort:
        orders["sorted by length"] = np.sort(lengths, kind="stable")[::-1]
    rows = []
    for order, seq in orders.items():
        for bucket in buckets:
            work = padded_work(seq, batch_size, bucket)
            rows.append(
                {
                    "order": order,
                    "bucket": "longest row" if bucket is None else f"multiple of {bucket}",
                    "real tokens": work["tokens"],
                    "padded positions": work["positions"],
                    "padding share": 1.0 - work["tokens"] / work["positions"],
                    "distinct widths": work["widths"],
                }
            )
    return pd.DataFrame(rows)


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


def bucketing_table(record: Mapping[str, Any]) -> pd.DataFrame | None:
    """First bf16 pass (sentences/s) by bucketing and cuDNN attention, or ``None`` if the run
    did not diagnose."""
    diagnosis = record.get("diagnosis") or []
    if not diagnosis:
        return None
    table = pd.DataFrame(diagnosis)
    diagnosis_buckets = [r.get("bucket") for r in diagnosis]
    table["bucket"] = [
        "off" if b is None or pd.isna(b) else f"multiple of {int(b)}" for b in diagnosis_buckets
    ]
    return table.pivot_table(
        index=["set", "batch_size", "bucket"], columns="cudnn", values="sentences_per_s"
    )


def train_table(record: Mapping[str, Any]) -> pd.DataFrame:
    """One row per (model, batch size, amp): seconds, steps/s, the precision used, STSb."""
    rows = []
    for r in record.get("runs", []):
        ours = r["ours"]
        precision = ours.get("precision") or {}
        rows.append(
            {
                "model": r["model"],
                "batch size": r["batch_size"],
                "amp": r["amp"],
                "ran in": precision.get("amp"),
                "seconds": ours["seconds"],
                "steps/s": ours["steps_per_s"],
                "STSb test Spearman": ours.get("stsb_test_spearman"),
            }
        )
    return pd.DataFrame(rows).set_index(["model", "batch size", "amp"])


def recorded_checks_table(records: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The checks every recorded run made of itself, one row each: what it compares (e.g. warm
    bf16 against fp32 sentences/s), the measured value, the threshold it was held to and whether
    the value reached it."""
    rows = [
        {"run": name, **check}
        for name, record in records.items()
        for check in record.get("criteria", [])
    ]
    return pd.DataFrame(rows).rename(columns={"bar": "threshold"})


@dataclass
class GPURunReport:
    """What chapter 13 shows of the recorded GPU runs (or that there are none)."""

    runs: dict[str, dict[str, Any]]
    note: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return bool(self.runs)

    def show(self) -> None:
        """Print the note and display every table (in a notebook)."""
        from IPython.display import display

        print(self.note)
        for name, table in self.tables.items():
            print(f"\n{name}:")
            display(table.round(4))

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
    """Tables and a provenance note from the recorded GPU runs, or a note saying they are
    unmeasured and how to measure them."""
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
    tables: dict[str, pd.DataFrame] = {}
    notes = []
    for name, record in runs.items():
        how = how_recorded(record)
        notes.append(
            f"{name}: {how['hardware']}, commit {how['git commit']}, {how['timestamp']}; "
            f"{how['packages']}; command: {how['command']}"
        )
        if name.startswith("encode_gpu"):
            tables[f"{name}: sentences/s"] = encode_table(record)
            bucketing = bucketing_table(record)
            if bucketing is not None:
                tables[f"{name}: first bf16 pass by bucketing and cuDNN attention"] = bucketing
        else:
            tables[f"{name}: one epoch per precision"] = train_table(record)
    checks = recorded_checks_table(runs)
    if not checks.empty:
        tables["checks: measured value against threshold"] = checks
    return GPURunReport(runs=runs, note="Recorded GPU runs:\n" + "\n".join(notes), tables=tables)


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


def throughput_summary(table: pd.DataFrame, reference_name: str = "sentence-transformers") -> str:
    """What an :func:`encode_throughput` table says, as a sentence the chapter can quote: the
    smart-batching speed-up, our speed relative to the reference and how far apart their
    embeddings are (or that no reference was run)."""
    ratios = throughput_ratios(table, reference_name)
    speedup = ratios["smart_batching_speedup"]
    sizes = ", ".join(str(b) for b in ratios.index)
    text = (
        f"sorting by length speeds encoding up {speedup.min():.2f}x to {speedup.max():.2f}x "
        f"(batch sizes {sizes})"
    )
    column = f"ours_vs_{reference_name}"
    if column not in ratios:
        return f"{text}; {reference_name} was not run, so there is no reference to compare with"
    diff = table.loc[table["variant"] == reference_name, "max_abs_diff"].max()
    return (
        f"{text}; our sorted encode runs at {ratios[column].min():.2f} to "
        f"{ratios[column].max():.2f} times the speed of {reference_name}, and the two "
        f"embeddings differ by at most {diff:.1e}"
    )


def length_cost_summary(table: pd.DataFrame) -> tuple[str, str]:
    """A sentence comparing the shortest and the longest length group of a
    :func:`throughput_by_length` table, and ``"cheaper"`` or ``"dearer"``: what a token of the
    longest group costs against a token of the shortest."""
    if len(table) < 2:
        raise ValueError("length_cost_summary needs at least two length groups")
    short, long = table.iloc[0], table.iloc[-1]
    verdict = "cheaper" if long["tokens_per_s"] > short["tokens_per_s"] else "dearer"
    sentence = (
        f"from the {short['tokens']}-token group (mean {short['mean tokens']:.0f} tokens) to the "
        f"{long['tokens']}-token group (mean {long['mean tokens']:.0f}), sentences/s go from "
        f"{short['sentences_per_s']:,.0f} to {long['sentences_per_s']:,.0f} and tokens/s from "
        f"{short['tokens_per_s']:,.0f} to {long['tokens_per_s']:,.0f}"
    )
    return sentence, verdict


def throughput_by_length(
    encoder: SentenceEncoder,
    sentences: Sequence[str],
    bins: Sequence[int] = (0, 16, 32, 64, 128, 512),
    batch_size: int = 64,
    repeats: int = 3,
) -> pd.DataFrame:
    """Sentences/s for inputs grouped by token count (``bins`` are edges, right-open).

    Columns: ``tokens`` (the group), ``n``, ``mean tokens``, ``sentences_per_s`` and
    ``tokens_per_s`` (sentences/s times the group's mean token count: the cost per token).
    Groups with fewer than ``batch_size`` inputs are left out.
    """
    ids, _ = encoder.token_ids(list(sentences))
    lengths = np.array([len(x) for x in ids])
    rows = []
    for low, high in zip(bins[:-1], bins[1:], strict=True):
        inside = (lengths >= low) & (lengths < high)
        group = [s for s, keep in zip(sentences, inside, strict=True) if keep]
        if len(group) < batch_size:
            continue
        seconds, _ = median_seconds(
            lambda g=group: encoder.encode(g, batch_size=batch_size), repeats
        )
        mean_tokens = float(lengths[inside].mean())
        rows.append(
            {
                "tokens": f"{low}-{high - 1}",
                "n": len(group),
                "mean tokens": mean_tokens,
                "sentences_per_s": len(group) / seconds,
                "tokens_per_s": len(group) * mean_tokens / seconds,
            }
        )
    return pd.DataFrame(rows)


def search_throughput(
    n: int,
    dim: int = 384,
    queries: int = 256,
    top_k: int = 10,
    chunk_size: int = 50_000,
    repeats: int = 3,
    seed: int = 0,
) -> pd.DataFrame:
    """Seconds to search ``queries`` random unit vectors in ``n``: chunked ``semantic_search`` vs a
    dense matmul + ``topk`` (which materialises the ``[queries, n]`` score matrix). Same data, same
    top-1 is checked.
    """
    rng = np.random.default_rng(seed)
    corpus = rng.standard_normal((n, dim), dtype=np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    q = rng.standard_normal((queries, dim), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    t_ours, (_, ours) = median_seconds(
        lambda: semantic_search(
            q, corpus, top_k=top_k, score="dot", chunk_size=chunk_size, device="cpu"
        ),
        repeats,
    )
    t_dense, dense = median_seconds(
        lambda: (
            (torch.from_numpy(q) @ torch.from_numpy(corpus).T)
            .topk(top_k, dim=1)
            .indices.cpu()
            .numpy()
        ),
        repeats,
    )
    return pd.DataFrame(
        [
            {
                "method": "semantic_search (chunked)",
                "seconds": t_ours,
                "score_matrix_MiB": queries * chunk_size * 4 / 2**20,
            },
            {
                "method": "dense matmul + topk",
                "seconds": t_dense,
                "score_matrix_MiB": queries * n * 4 / 2**20,
            },
        ]
    ).assign(n=n, queries=queries, same_top1=float(np.mean(ours[:, 0] == dense[:, 0])))


def speedup_against_padding(
    savings: pd.DataFrame,
    ratios: pd.DataFrame,
    record: Mapping[str, Any] | None = None,
    batch_size: int = 32,
    this_run: str = "mixed (this chapter)",
    recorded_row: str = "recorded run",
) -> str:
    """The measured smart-batching speed-up at ``batch_size`` beside the position and attention
    ratios of the same sentences (:func:`padding_savings`, computed at that batch size): for this
    run (``ratios``: :func:`throughput_ratios`) and, when ``record`` (a recorded
    ``benchmarks/encode.py`` result) is given and ``savings`` has its row, for the recorded run."""

    def compare(speedup: float, row: pd.Series) -> str:
        return (
            f"{speedup:.2f}x against a position ratio of {row['positions saved (x)']:.2f} and an "
            f"attention ratio of {row['attention saved (x)']:.2f}"
        )

    speedup = ratios.loc[batch_size, "smart_batching_speedup"]
    text = f"this run measured {compare(speedup, savings.loc[this_run])}"
    if record is None or recorded_row not in savings.index:
        return text + " (no recorded run to set beside it)"
    recorded = {r["batch_size"]: r["smart_batching_speedup"] for r in record.get("ratios", [])}
    if batch_size not in recorded:
        return text + f" (the recorded run has no batch size {batch_size})"
    return f"{text}; the recorded run {compare(recorded[batch_size], savings.loc[recorded_row])}"


def recorded_encode_summary(record: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.Series]:
    """A recorded ``benchmarks/encode.py`` result as a wide table and a provenance summary.

    Returns ``(table, how)``: one row per batch size, one column per variant (sentences/s), plus
    the ratios the script computed; ``how`` gives the git commit, hardware, torch threads,
    sentences, repeats, timestamp and command.
    """
    results = pd.DataFrame(record["results"])
    table = results.pivot(index="batch_size", columns="variant", values="sentences_per_s")
    ratios = pd.DataFrame(record.get("ratios", [])).set_index("batch_size")
    table = table.join(ratios)
    how = how_recorded(record)
    extra = {
        "sentences": record.get("n_sentences"),
        "repeats": record.get("repeats"),
        "max |ours - reference|": f"{results.get('max_abs_diff', pd.Series([np.nan])).max():.1e}",
    }
    keep = ["git commit", "hardware", "timestamp", "command"]
    how = pd.concat([how[keep[:2]], pd.Series(extra), how[keep[2:]]]).rename(how.name)
    return table, how


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


def padding_savings(
    encoder: SentenceEncoder,
    groups: Mapping[str, Sequence[str]],
    batch_size: int = 32,
) -> pd.DataFrame:
    """How much sorting by length saves, in token positions and attention, for each group of
    sentences (:func:`padded_work` in input order divided by the same sorted, shortest first).

    Only tokenises (no model run), so it is cheap and machine-independent: it explains why the
    measured smart-batching speed-up depends on how *mixed* the lengths are.
    """
    rows = []
    for name, sentences in groups.items():
        ids, _ = encoder.token_ids(list(sentences))
        lengths = [len(x) for x in ids]
        plain = padded_work(lengths, batch_size)
        smart = padded_work(sorted(lengths), batch_size)
        rows.append(
            {
                "sentences": name,
                "n": len(lengths),
                "mean tokens": float(np.mean(lengths)),
                "max tokens": int(max(lengths)),
                "padding share, input order %": 100 * (1 - plain["tokens"] / plain["positions"]),
                "padding share, sorted %": 100 * (1 - smart["tokens"] / smart["positions"]),
                "positions saved (x)": plain["positions"] / smart["positions"],
                "attention saved (x)": plain["attention"] / smart["attention"],
            }
        )
    return pd.DataFrame(rows).set_index("sentences")


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


def like_with_like(record: Mapping[str, Any]) -> pd.DataFrame:
    """A recorded ``benchmarks/cpu_encode.py`` run read pair by pair (:data:`LIKE_WITH_LIKE`):
    each library's sentences/s in the same runtime and precision, their ratio (this library's
    over sentence-transformers'), and each one's STSb Spearman x100 change from this library's
    fp32 encode.

    Raises:
        ValueError: a path of a pair is not in the record (its reason, when the record says why it
            did not load, is in the message).
    """
    rows = {r["path"]: r for r in record["results"]}
    missing = [path for _, *pair in LIKE_WITH_LIKE for path in pair if path not in rows]
    if missing:
        reasons = record.get("unavailable", {})
        raise ValueError(
            "like_with_like: the record lacks "
            + "; ".join(f"{p} ({reasons.get(p, 'not timed')})" for p in missing)
            + ": record a run with sentence-transformers' backends installed: "
            + CPU_BACKENDS_COMMAND
        )
    table = pd.DataFrame(
        [
            {
                "runtime and precision": what,
                "sbert_tutor sentences/s": rows[ours]["sentences_per_s"],
                "sentence-transformers sentences/s": rows[theirs]["sentences_per_s"],
                "ours / theirs": rows[ours]["sentences_per_s"] / rows[theirs]["sentences_per_s"],
                "sbert_tutor STSb change": rows[ours]["stsb_points_vs_fp32"],
                "sentence-transformers STSb change": rows[theirs]["stsb_points_vs_fp32"],
            }
            for what, ours, theirs in LIKE_WITH_LIKE
        ]
    )
    return table.set_index("runtime and precision")


def cpu_paths_summary(record: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.Series]:
    """A recorded ``benchmarks/cpu_encode.py`` result: one row per path (sentences/s, the ratios
    to this library's fp32 encode and to sentence-transformers' fastest backend, STSb test
    Spearman x100 and its change from fp32, the largest embedding difference), fastest first,
    and how it was made (git commit, hardware, native bf16, sentences, repeats, timestamp,
    command; the backends that could not be loaded, with the reason)."""
    table = pd.DataFrame(record["results"]).set_index("path")
    table = table[
        [
            "library",
            "sentences_per_s",
            "vs_sbert_tutor_fp32",
            "vs_sentence_transformers_fastest",
            "stsb_test_spearman",
            "stsb_points_vs_fp32",
            "max_abs_diff_vs_sbert_tutor_fp32",
        ]
    ].sort_values("sentences_per_s", ascending=False)
    how = how_recorded(record)
    extra = {
        "native bf16": record["provenance"].get("native_bf16"),
        "OpenVINO": record["provenance"].get("openvino"),
        "sentences": record.get("n_sentences"),
        "threads": record.get("threads"),
        "batch size": record.get("batch_size"),
        "timed rounds": record.get("repeats"),
        **{f"not loaded: {k}": v for k, v in record.get("unavailable", {}).items()},
    }
    keep = ["git commit", "hardware", "timestamp", "command"]
    how = pd.concat([how[keep[:2]], pd.Series(extra), how[keep[2:]]]).rename(how.name)
    return table, how


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
    """One stacked bar a precision of :func:`sbert_tutor.book.op_time.operation_speedups`'s table:
    the seconds of each kind of operation, each segment labelled with its speedup over
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
