r"""Compressed embeddings (chapter 15): bytes a vector against retrieval and STS quality.

:func:`compression_table` measures every compressed form (:func:`variants`) of the same float32
embeddings, on the chapter's live sample and in ``benchmarks/compressed_embeddings.py`` on the
whole dev subset; the Matryoshka study's loop is on the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbert_tutor.book.cost import median_seconds
from sbert_tutor.book.figures import new_axes, new_panels
from sbert_tutor.book.recorded import recorded_results
from sbert_tutor.book.sizes import QUICK_RUN, T4_RUN, T4_SEEDS, ChapterSizes, register_sizes
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
    """Chapter 15: MS MARCO dev-subset queries searched, random passages beyond their judged and
    BM25 candidates (``None``: the whole mini corpus), STSb test pairs and search-timing repeats;
    then the Matryoshka study (plain MNRL and its Matryoshka twin trained alike on NLI entailment
    pairs, the run's fields as in :class:`~sbert_tutor.book.sizes.RunSizes`) at the prefix lengths
    ``matryoshka_dims``. Not a ``RunSizes``: no paper's setup is followed (Kusupati et al. 2022
    train vision classifiers, ALIGN's contrastive image and text encoders and BERT by masked
    language modelling; sentence-transformers' example is an illustration). The t4 profile trains
    one seed for 100 steps (the whole book within a Colab session); paper, chapter 9's t4 run
    (200 steps of 64, three seeds) for each objective."""

    queries: int | None = None
    other_passages: int | None = None
    sts_pairs: int | None = None
    repeats: int = 3
    steps: int | None
    epochs: int = 1
    batch_size: int = 64
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
            repeats=2,
            steps=40,
            batch_size=32,
            examples=1280,
            **QUICK_RUN,
        ),
        "t4": CompressionSizes(steps=100, **{**T4_RUN, "seeds": T4_SEEDS[:1]}),
        "paper": CompressionSizes(steps=200, **T4_RUN),
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
    """One compressed form of the embeddings: its row label ``name``, what the searched index
    stores (``precision``: ``float32``, ``int8``, ``ubinary``), the dimensions kept (``dim``:
    truncation, else the model's), the rescoring multiplier :math:`M` (``None`` without
    rescoring) and what it rescores against (``"int8"``, ``"binary"`` or ``None``)."""

    name: str
    precision: str
    dim: int
    multiplier: int | None = None
    rescore_against: str | None = None


def variants(
    dim: int,
    multipliers: Sequence[int] = MULTIPLIERS,
    truncations: Sequence[int] = TRUNCATIONS,
    int8_multiplier: int = 4,
) -> list[Variant]:
    """The rows of the chapter's table for a ``dim``-dimensional model (module docstring)."""
    return [
        Variant("float32", "float32", dim),
        Variant("int8", "int8", dim),
        Variant(f"int8 + rescore x{int8_multiplier}", "int8", dim, int8_multiplier, "int8"),
        Variant("binary", "ubinary", dim),
        *(
            Variant(f"binary + rescore x{m} ({against})", "ubinary", dim, m, against)
            for against in ("int8", "binary")
            for m in multipliers
        ),
        *(Variant(f"truncate {t}", "float32", t) for t in truncations if t < dim),
    ]


def search_variant(
    variant: Variant, queries: np.ndarray, stored: Mapping[str, np.ndarray], top_k: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, indices)`` of the queries' top ``top_k`` under ``variant``; ``stored``: the corpus
    as ``"float32"``, ``"int8"`` codes and packed ``"ubinary"`` bits, and the int8 ``"ranges"``."""
    if variant.precision == "float32":
        d = variant.dim
        return semantic_search(
            queries[:, :d], stored["float32"][:, :d], top_k=top_k, score="cosine", device="cpu"
        )
    bits_then_int8 = variant.precision == "ubinary" and variant.rescore_against == "int8"
    return quantized_search(
        queries,
        stored[variant.precision],
        variant.precision,
        top_k,
        ranges=stored["ranges"],
        rescoring=variant.multiplier is not None,
        rescore_multiplier=variant.multiplier or 1,
        rescore_embeddings=stored["int8"] if bits_then_int8 else None,  # else the searched index
        rescore_precision="int8" if bits_then_int8 else None,
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
        first, second = (quantize_embeddings(x, "int8", ranges=ranges) for x in (first, second))
    a, b = (np.asarray(x, dtype=np.float64)[:, : variant.dim] for x in (first, second))
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
    """One row a variant: bytes, memory ratio, MRR@10, nDCG@10, STS Spearman, queries/s, of
    float32 ``query_embeddings`` ``[n_q, d]`` and ``corpus_embeddings`` ``[n, d]`` (rows ``qids``
    and ``pids``, judged by ``qrels``); ``sts_pairs``: ``(first, second, gold)`` embeddings and
    scores of an STS set, or ``None``; ``rows``: the variants (default :func:`variants`), each
    search timed ``repeats`` times (the median gives queries/s)."""
    dim = corpus_embeddings.shape[1]
    ranges = quantization_ranges(corpus_embeddings)  # the int8 ranges: the passages' own
    stored = {
        "float32": np.asarray(corpus_embeddings, dtype=np.float32),
        "int8": quantize_embeddings(corpus_embeddings, "int8", ranges=ranges),
        "ubinary": quantize_embeddings(corpus_embeddings, "ubinary"),
        "ranges": ranges,
    }
    out, mrr = [], f"MRR@{top_k}"
    for v in rows or variants(dim):
        seconds, (scores, indices) = median_seconds(  # the last search's top_k
            lambda v=v: search_variant(v, query_embeddings, stored, top_k), repeats
        )
        measures = evaluate_run(
            run_from_topk(qids, pids, scores, indices), qrels, [top_k], relevance_threshold
        )
        predicted = None if sts_pairs is None else pair_scores(v, *sts_pairs[:2], ranges)
        spearman = np.nan if predicted is None else correlations(predicted, sts_pairs[2])[0]
        memory = bytes_per_vector(v.dim, v.precision)  # the searched index
        # int8 vectors to rescore against: read for the candidates only, so counted as disk bytes
        disk = bytes_per_vector(v.dim, "int8") if v.rescore_against == "int8" else 0
        out.append(
            {
                "variant": v.name,
                "index": v.precision if v.precision != "ubinary" else "binary",
                "dims": v.dim,
                "rescore multiplier": v.multiplier,
                "rescored against": v.rescore_against,
                "bytes a vector (memory)": memory,
                "bytes a vector (disk, rescoring)": disk,
                "memory ratio to float32": bytes_per_vector(dim, "float32") / memory,
                mrr: measures[f"mrr@{top_k}"],
                f"nDCG@{top_k}": measures[f"ndcg@{top_k}"],
                "STSb Spearman": spearman,
                "queries/s": len(query_embeddings) / seconds,
            }
        )
    table = pd.DataFrame(out).set_index("variant")
    if "float32" in table.index:  # the share of the float MRR each row keeps
        table[f"{mrr} / float32"] = table[mrr] / table.loc["float32", mrr]
    return table


def compact_forms(table: pd.DataFrame, keep: float = 0.95, ratio: float = 16.0) -> pd.DataFrame:
    """The rows with at least ``ratio`` x less memory than float32, and whether each keeps at
    least ``keep`` of float32's MRR@10 (a column ``"keeps >= 95% of MRR@10"`` for the defaults)."""
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
    left, right = new_panels(axes, 2, figsize=(10, 4))
    full, x = table.loc["float32", metric], "bytes a vector (memory)"
    rescored = f"binary + rescore x{multiplier}"
    shown = {  # legend label: the rows it marks
        "float32": table.index == "float32",
        "truncation": table.index.str.startswith("truncate"),
        "int8": table.index == "int8",
        "binary, no rescoring": table.index == "binary",
        f"{rescored} (int8)": table.index == f"{rescored} (int8)",
        f"{rescored} (bits)": table.index == f"{rescored} (binary)",
    }
    for i, ((label, mask), marker) in enumerate(zip(shown.items(), "o^sDvP", strict=True)):
        if mask.any():
            rows = table[mask]
            left.scatter(rows[x], rows[metric], label=label, marker=marker, color=f"C{i}")
    for _, r in table[shown["truncation"]].iterrows():
        left.annotate(
            f"{int(r['dims'])} dims", (r[x], r[metric]), (5, -4), textcoords="offset points", size=7
        )
    left.set_xscale("log", base=2)
    left.set_xlabel("bytes a vector held in memory (log scale)")
    left.text(table[x].min(), 0.95 * full, "95% of float32 ", va="top", fontsize=7, color="#666666")
    rescoring = table[table.index.str.startswith("binary + rescore")]
    for against, what, color in (("int8", "int8", "C4"), ("binary", "the bits", "C5")):
        rows = rescoring[rescoring["rescored against"] == against].sort_values("rescore multiplier")
        label = f"rescored against {what}"
        right.plot(rows["rescore multiplier"], rows[metric], marker="o", color=color, label=label)
    right.axhline(full, color="C0", lw=1, label="float32")
    right.axhline(table.loc["binary", metric], color="C3", lw=1, label="binary, no rescoring")
    ms = sorted(table["rescore multiplier"].dropna().unique())
    right.set(xscale="log", xlabel="rescore multiplier m (candidates: 10 m)")
    right.set_xticks(ms, [f"{m:g}" for m in ms])
    for ax in (left, right):
        ax.axhline(0.95 * full, color="#999999", lw=0.8, ls="--")
        ax.set_ylabel(metric)
        ax.legend(fontsize=7, loc="lower right")
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
    dims = sorted(study["dims"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(dims, [str(d) for d in dims])
    ax.set(xlabel="dimensions kept (the first D)", ylabel="STSb test Spearman x 100")
    ax.legend(fontsize=8)
    return ax
