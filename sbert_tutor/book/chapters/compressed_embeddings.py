r"""Compressed embeddings (chapter 15): bytes a vector against retrieval and STS quality.

:func:`compression_table` measures every compressed form made from the same float32 embeddings
(:func:`variants`: int8 codes, sign bits with and without rescoring, truncation), each searched
(:func:`search_variant`) and scored on STS pairs (:func:`pair_scores`) in one loop: the chapter
runs it on its live sample, ``benchmarks/compressed_embeddings.py`` on the whole dev subset. Also
here: the sizes, which rows keep 95% of float32's MRR@10 (:func:`compact_forms`), the recorded
run (:func:`recorded_table`) and the plots (:func:`plot_bytes_vs_quality`,
:func:`plot_truncation`). The Matryoshka study's loop is on the chapter's page.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbert_tutor.book.figures import new_axes
from sbert_tutor.book.recorded import recorded_results
from sbert_tutor.book.sizes import (
    QUICK_RUN,
    T4_RUN,
    T4_SEEDS,
    ChapterSizes,
    register_sizes,
)
from sbert_tutor.book.weak_start import Start, WeakStart
from sbert_tutor.evaluation.sts import correlations
from sbert_tutor.metrics import Qrels, evaluate_run, run_from_topk
from sbert_tutor.search.exact import semantic_search
from sbert_tutor.search.quantize import bytes_per_vector, quantization_ranges, quantize_embeddings
from sbert_tutor.search.quantized import quantized_search

__all__ = [
    "COLUMNS",
    "CompressionSizes",
    "MULTIPLIERS",
    "RECORD",
    "SIZES",
    "Stored",
    "TRUNCATIONS",
    "Variant",
    "compact_forms",
    "compression_table",
    "pair_scores",
    "plot_bytes_vs_quality",
    "plot_truncation",
    "recorded_table",
    "search_variant",
    "variants",
]


@dataclass(frozen=True, kw_only=True)
class CompressionSizes(ChapterSizes):
    """Chapter 15 (compressed embeddings): MS MARCO dev-subset queries searched (``None``: all),
    random passages beyond their judged and BM25 candidates (``None``: the whole mini corpus),
    STSb test pairs (``None``: all) and search-timing repeats; then the Matryoshka study, the
    plain MNRL objective and its Matryoshka-wrapped twin trained alike on NLI entailment
    pairs: ``steps`` (or ``epochs``), ``batch_size``, ``examples``, ``start``, ``lr``,
    ``warmup_ratio``, ``seeds`` (as :class:`~sbert_tutor.book.sizes.RunSizes`) and the prefix
    lengths ``matryoshka_dims`` (the Matryoshka loss's and the truncations evaluated). Not a
    :class:`~sbert_tutor.book.sizes.RunSizes`: no paper's setup is followed (Kusupati et al. 2022
    train vision classifiers, ALIGN's contrastive image and text encoders and BERT by masked
    language modelling; sentence-transformers' example is an illustration). The t4 profile trains
    one seed for 100 steps, which keeps the whole book within a Colab session; the paper profile
    trains chapter 9's t4 run (200 steps of 64, three seeds) for each objective."""

    queries: int | None
    other_passages: int | None
    sts_pairs: int | None
    repeats: int
    steps: int | None
    epochs: int = 1
    batch_size: int
    examples: int | None = None
    start: str | Start | WeakStart
    lr: float
    warmup_ratio: float = 0.1
    seeds: tuple[int, ...]
    matryoshka_dims: tuple[int, ...] = (384, 256, 128, 64, 32)


#: Per profile (:func:`~sbert_tutor.book.sizes.sizes_for` reads them).
SIZES: dict[str, CompressionSizes] = register_sizes(
    "15_compressed_embeddings",
    {
        "quick": CompressionSizes(
            queries=60,
            other_passages=200,
            sts_pairs=None,
            repeats=2,
            steps=40,
            batch_size=32,
            examples=1280,
            **QUICK_RUN,
        ),
        "t4": CompressionSizes(
            queries=None,
            other_passages=None,
            sts_pairs=None,
            repeats=3,
            steps=100,
            batch_size=64,
            examples=None,
            **{**T4_RUN, "seeds": T4_SEEDS[:1]},
        ),
        "paper": CompressionSizes(
            queries=None,
            other_passages=None,
            sts_pairs=None,
            repeats=3,
            steps=200,
            batch_size=64,
            examples=None,
            **T4_RUN,
        ),
    },
)


#: The columns of the compression table the chapter shows.
COLUMNS = [
    "bytes a vector (memory)",
    "memory ratio to float32",
    "MRR@10",
    "MRR@10 / float32",
    "nDCG@10",
    "STSb Spearman",
    "queries/s",
]
#: The rescore multipliers :math:`m` the chapter and the benchmark measure (binary search).
MULTIPLIERS = (1, 2, 4, 10)
#: The truncations ``truncate D`` they measure (those below the model's dimension).
TRUNCATIONS = (256, 128, 64, 32)


@dataclass(frozen=True)
class Variant:
    """One compressed form of the embeddings.

    Attributes:
        name: the row label.
        precision: what the searched index stores (``float32``, ``int8``, ``ubinary``).
        dim: the dimensions kept (truncation), else the model's.
        multiplier: the rescoring multiplier :math:`M`, ``None`` without rescoring.
        rescore_against: ``"int8"``, ``"binary"`` or ``None``.
    """

    name: str
    precision: str
    dim: int
    multiplier: int | None = None
    rescore_against: str | None = None

    def index_bytes(self) -> int:
        """Bytes a vector of the searched index (held in memory)."""
        return bytes_per_vector(self.dim, self.precision)

    def rescore_bytes(self) -> int:
        """Bytes a vector of extra rescoring vectors (read for candidates only, so counted as disk
        bytes; :func:`compression_table` times them in memory)."""
        return bytes_per_vector(self.dim, "int8") if self.rescore_against == "int8" else 0


def variants(
    dim: int,
    multipliers: Sequence[int] = MULTIPLIERS,
    truncations: Sequence[int] = TRUNCATIONS,
    int8_multiplier: int = 4,
) -> list[Variant]:
    """The rows of the chapter's table for a ``dim``-dimensional model (module docstring)."""
    rows = [
        Variant("float32", "float32", dim),
        Variant("int8", "int8", dim),
        Variant(f"int8 + rescore x{int8_multiplier}", "int8", dim, int8_multiplier, "int8"),
        Variant("binary", "ubinary", dim),
    ]
    for against in ("int8", "binary"):
        rows += [
            Variant(f"binary + rescore x{m} ({against})", "ubinary", dim, m, against)
            for m in multipliers
        ]
    rows += [Variant(f"truncate {t}", "float32", t) for t in truncations if t < dim]
    return rows


@dataclass(frozen=True)
class Stored:
    """The corpus in every form the variants search: float32, int8 codes, packed bits."""

    float32: np.ndarray
    int8: np.ndarray
    ubinary: np.ndarray
    ranges: np.ndarray

    @classmethod
    def from_embeddings(cls, corpus: np.ndarray) -> Stored:
        """Quantise ``corpus`` once; the int8 ranges are the passages' own."""
        ranges = quantization_ranges(corpus)
        return cls(
            float32=np.asarray(corpus, dtype=np.float32),
            int8=quantize_embeddings(corpus, "int8", ranges=ranges),
            ubinary=quantize_embeddings(corpus, "ubinary"),
            ranges=ranges,
        )


def search_variant(
    variant: Variant, queries: np.ndarray, stored: Stored, top_k: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, indices)`` of the queries' top ``top_k`` under ``variant``."""
    if variant.precision == "float32":
        d = variant.dim
        return semantic_search(
            queries[:, :d], stored.float32[:, :d], top_k=top_k, score="cosine", device="cpu"
        )
    rescoring = variant.multiplier is not None
    if variant.precision == "int8":
        return quantized_search(
            queries,
            stored.int8,
            "int8",
            top_k,
            ranges=stored.ranges,
            rescoring=rescoring,
            rescore_multiplier=variant.multiplier or 1,
        )
    if variant.rescore_against == "int8":
        return quantized_search(
            queries,
            stored.ubinary,
            "ubinary",
            top_k,
            rescore_multiplier=variant.multiplier,
            rescore_embeddings=stored.int8,
            rescore_precision="int8",
            ranges=stored.ranges,
        )
    return quantized_search(
        queries,
        stored.ubinary,
        "ubinary",
        top_k,
        rescoring=rescoring,
        rescore_multiplier=variant.multiplier or 1,
    )


def pair_scores(
    variant: Variant, first: np.ndarray, second: np.ndarray, ranges: np.ndarray
) -> np.ndarray | None:
    """Similarity of each STS pair under ``variant``; ``None`` for rescored rows."""
    if variant.multiplier is not None:
        return None
    if variant.precision == "ubinary":
        a, b = quantize_embeddings(first, "ubinary"), quantize_embeddings(second, "ubinary")
        xor = np.unpackbits(a ^ b, axis=1)[:, : variant.dim]
        return -xor.sum(axis=1).astype(float)
    if variant.precision == "int8":
        first = quantize_embeddings(first, "int8", ranges=ranges).astype(np.float64)
        second = quantize_embeddings(second, "int8", ranges=ranges).astype(np.float64)
    a = np.asarray(first, dtype=np.float64)[:, : variant.dim]
    b = np.asarray(second, dtype=np.float64)[:, : variant.dim]
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return (a * b).sum(axis=1) / np.maximum(norms, 1e-12)


def compression_table(
    query_embeddings: np.ndarray,
    corpus_embeddings: np.ndarray,
    qids: Sequence[str],
    pids: Sequence[str],
    qrels: Qrels,
    sts_pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    rows: Sequence[Variant] | None = None,
    top_k: int = 10,
    repeats: int = 3,
    relevance_threshold: int = 1,
) -> pd.DataFrame:
    """One row a variant: bytes, memory ratio, MRR@10, nDCG@10, STS Spearman, queries/s.

    Args:
        query_embeddings, corpus_embeddings: float32 ``[n_q, d]`` and ``[n, d]``.
        qids, pids: the ids of their rows; ``qrels`` judges them.
        sts_pairs: ``(first, second, gold)`` embeddings and scores of an STS set, or ``None``.
        rows: the variants (default :func:`variants`).
        repeats: searches timed per variant (the median gives queries/s).
    """
    dim = corpus_embeddings.shape[1]
    stored = Stored.from_embeddings(corpus_embeddings)
    full = bytes_per_vector(dim, "float32")
    out = []
    for v in rows or variants(dim):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            scores, indices = search_variant(v, query_embeddings, stored, top_k)
            times.append(time.perf_counter() - start)
        measures = evaluate_run(
            run_from_topk(qids, pids, scores, indices), qrels, [top_k], relevance_threshold
        )
        spearman = np.nan
        if sts_pairs is not None:
            predicted = pair_scores(v, sts_pairs[0], sts_pairs[1], stored.ranges)
            if predicted is not None:
                spearman = correlations(predicted, sts_pairs[2])[0]
        out.append(
            {
                "variant": v.name,
                "index": v.precision if v.precision != "ubinary" else "binary",
                "dims": v.dim,
                "rescore multiplier": v.multiplier,
                "rescored against": v.rescore_against,
                "bytes a vector (memory)": v.index_bytes(),
                "bytes a vector (disk, rescoring)": v.rescore_bytes(),
                "memory ratio to float32": full / v.index_bytes(),
                f"MRR@{top_k}": measures[f"mrr@{top_k}"],
                f"nDCG@{top_k}": measures[f"ndcg@{top_k}"],
                "STSb Spearman": spearman,
                "queries/s": len(query_embeddings) / float(np.median(times)),
            }
        )
    table = pd.DataFrame(out).set_index("variant")
    if "float32" in table.index:  # the share of the float MRR each row keeps
        table[f"MRR@{top_k} / float32"] = (
            table[f"MRR@{top_k}"] / table.loc["float32", f"MRR@{top_k}"]
        )
    return table


def compact_forms(table: pd.DataFrame, keep: float = 0.95, ratio: float = 16.0) -> pd.DataFrame:
    """The rows with at least ``ratio`` x less memory than float32, and for each whether it keeps
    at least ``keep`` of float32's MRR@10: a column ``"keeps >= 95% of MRR@10"`` (for the
    defaults)."""
    mrr = [c for c in table.columns if c.startswith("MRR@") and c.endswith("/ float32")][0]
    small = table[table["memory ratio to float32"] >= ratio]
    label = f"keeps >= {keep:.0%} of {mrr.removesuffix(' / float32')}"
    return small.assign(**{label: small[mrr] >= keep})


#: The recorded full-corpus run (``benchmarks/compressed_embeddings.py``).
RECORD = "compressed_embeddings_cpu"


def recorded_table(record: Mapping | None = None) -> pd.DataFrame | None:
    """The recorded run's rows as a table indexed by variant (``None`` if never recorded)."""
    record = recorded_results(RECORD) if record is None else record
    return None if record is None else pd.DataFrame(record["results"]).set_index("variant")


def plot_bytes_vs_quality(
    table: pd.DataFrame,
    metric: str = "MRR@10",
    axes=None,
    title: str | None = None,
    multiplier: int = 4,
):
    """Two panels. Left: ``metric`` against bytes a vector held in memory (log x), one marker a
    variant (binary rescoring at ``multiplier``). Right: binary rescoring's ``metric`` against the
    rescore multiplier, against int8 codes and against the bits, with float32 and unrescored
    binary as lines. A dashed line marks 95% of float32 in both."""
    from sbert_tutor.book.figures import new_panels

    left, right = new_panels(axes, 2, figsize=(10, 4))
    full = table.loc["float32", metric]
    shown = {
        "float32": table.index == "float32",
        "truncation": table.index.str.startswith("truncate"),
        "int8": table.index == "int8",
        "binary, no rescoring": table.index == "binary",
        f"binary + rescore x{multiplier} (int8)": table.index
        == f"binary + rescore x{multiplier} (int8)",
        f"binary + rescore x{multiplier} (bits)": table.index
        == f"binary + rescore x{multiplier} (binary)",
    }
    for (label, mask), marker, color in zip(
        shown.items(), "o^sDvP", [f"C{i}" for i in range(6)], strict=True
    ):
        if mask.any():
            left.scatter(
                table.loc[mask, "bytes a vector (memory)"],
                table.loc[mask, metric],
                label=label,
                marker=marker,
                color=color,
            )
    for _, row in table[shown["truncation"]].iterrows():
        left.annotate(
            f"{int(row['dims'])} dims",
            (row["bytes a vector (memory)"], row[metric]),
            textcoords="offset points",
            xytext=(5, -4),
            fontsize=7,
        )
    left.set_xscale("log", base=2)
    left.set_xlabel("bytes a vector held in memory (log scale)")
    left.set_ylabel(metric)
    left.legend(fontsize=7, loc="lower right")
    for (suffix, label), color in zip(
        (("(int8)", "rescored against int8"), ("(binary)", "rescored against the bits")),
        ("C4", "C5"),
        strict=True,
    ):
        rows = table[
            table.index.str.startswith("binary + rescore") & table.index.str.endswith(suffix)
        ]
        rows = rows.sort_values("rescore multiplier")
        right.plot(rows["rescore multiplier"], rows[metric], marker="o", color=color, label=label)
    right.axhline(full, color="C0", lw=1, label="float32")
    right.axhline(table.loc["binary", metric], color="C3", lw=1, label="binary, no rescoring")
    right.set_xscale("log")
    right.set_xticks(sorted(table["rescore multiplier"].dropna().unique()))
    right.set_xticklabels([f"{m:g}" for m in sorted(table["rescore multiplier"].dropna().unique())])
    right.set_xlabel("rescore multiplier m (candidates: 10 m)")
    right.set_ylabel(metric)
    right.legend(fontsize=7, loc="lower right")
    for ax in (left, right):
        ax.axhline(0.95 * full, color="#999999", lw=0.8, ls="--")
    left.text(
        table["bytes a vector (memory)"].min(),
        0.95 * full,
        "95% of float32 ",
        ha="left",
        va="top",
        fontsize=7,
        color="#666666",
    )
    if title:
        left.figure.suptitle(title, fontsize=10)
    return left, right


def plot_truncation(study: pd.DataFrame, ax=None):
    """STSb Spearman against the dimensions kept (log x): the mean over seeds, each seed faint."""
    ax = new_axes(ax, figsize=(7, 4))
    styles = {"start": ("C7", ":"), "MNRL": ("C0", "-"), "Matryoshka MNRL": ("C3", "-")}
    for name, group in study.groupby("variant", sort=False):
        color, line = styles.get(name, ("C2", "-"))
        mean = group.groupby("dims")["spearman"].mean()
        ax.plot(mean.index, mean.values, marker="o", color=color, ls=line, label=name)
        for _, seed_rows in group.dropna(subset=["seed"]).groupby("seed"):
            ax.plot(seed_rows["dims"], seed_rows["spearman"], color=color, alpha=0.25, lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(study["dims"].unique()))
    ax.set_xticklabels([str(d) for d in sorted(study["dims"].unique())])
    ax.set_xlabel("dimensions kept (the first D)")
    ax.set_ylabel("STSb test Spearman x 100")
    ax.legend(fontsize=8)
    return ax
