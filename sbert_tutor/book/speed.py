r"""Measuring speed honestly (chapter 13, computational efficiency).

Throughput is sentences per second, :math:`n / t`, with :math:`t` the *median* wall time over
``repeats`` runs. When a reference library is compared, both run in the same process on the same
sentences with the same thread count, interleaved run by run so that machine noise hits both
alike, and their outputs are checked to agree.

*Smart batching* (SBERT paper, section 7): sorting inputs by length before batching means each
batch pads only to its own longest input. For a batch :math:`B` the transformer processes
:math:`|B| \cdot \max_{i \in B} \ell_i` token positions; sorting makes :math:`\max_{i \in B} \ell_i`
close to every :math:`\ell_i` of the batch.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from sbert_tutor.data import load_sts
from sbert_tutor.data.msmarco import mini_corpus_passages
from sbert_tutor.encoder import SentenceEncoder
from sbert_tutor.search import semantic_search

EncodeFn = Callable[[Sequence[str], int], np.ndarray]


def median_seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of ``repeats`` calls of ``fn`` and the last result."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


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
        times: dict[str, list[float]] = {name: [] for name in variants}
        outputs: dict[str, np.ndarray] = {}
        for _ in range(repeats):  # interleaved: noise hits every variant alike
            for name, fn in variants.items():
                seconds, outputs[name] = median_seconds(fn, 1)
                times[name].append(seconds)
        ours = outputs["sbert_tutor (smart batching)"]
        for name, values in times.items():
            row = {
                "batch_size": batch_size,
                "variant": name,
                "sentences_per_s": len(sentences) / statistics.median(values),
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


def throughput_by_length(
    encoder: SentenceEncoder,
    sentences: Sequence[str],
    bins: Sequence[int] = (0, 16, 32, 64, 128, 512),
    batch_size: int = 64,
    repeats: int = 3,
) -> pd.DataFrame:
    """Sentences/s for inputs grouped by token count (``bins`` are edges, right-open)."""
    ids, _ = encoder.token_ids(list(sentences))
    lengths = np.array([len(x) for x in ids])
    rows = []
    for low, high in zip(bins[:-1], bins[1:], strict=True):
        group = [s for s, n in zip(sentences, lengths, strict=True) if low <= n < high]
        if len(group) < batch_size:
            continue
        seconds, _ = median_seconds(
            lambda g=group: encoder.encode(g, batch_size=batch_size), repeats
        )
        rows.append(
            {
                "tokens": f"{low}-{high - 1}",
                "n": len(group),
                "sentences_per_s": len(group) / seconds,
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


#: Where benchmark scripts' JSON results are recorded in the repository.
RESULTS_FOLDER = "benchmarks/results"


def recorded_results(name: str, folder: str | None = None) -> dict[str, Any] | None:
    """A results JSON recorded earlier by a benchmark script, or ``None`` if there is none.

    Reads ``<folder>/<name>.json`` (default: the repository's ``benchmarks/results``). Such files
    carry their own provenance (git sha, hardware, packages, data hashes, command), shown with
    them: e.g. ``encode_cpu_2threads`` (``benchmarks/encode.py --json``) or ``encode_gpu``.
    """
    base = Path(folder) if folder else Path(__file__).resolve().parents[2] / RESULTS_FOLDER
    path = base / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


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
    prov = record.get("provenance", {})
    git, hw = prov.get("git", {}), prov.get("hardware", {})
    how = pd.Series(
        {
            "git commit": str(git.get("sha", ""))[:12] + (" (dirty)" if git.get("dirty") else ""),
            "hardware": f"{hw.get('device')}, {hw.get('cpu_count')} cores, "
            f"{hw.get('torch_threads')} torch threads",
            "sentences": record.get("n_sentences"),
            "repeats": record.get("repeats"),
            "max |ours - reference|": f"{results.get('max_abs_diff', pd.Series([np.nan])).max():.1e}",
            "timestamp": prov.get("timestamp"),
            "command": " ".join(prov.get("command", [])),
        },
        name=record.get("model"),
    )
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


def padding_work(lengths: Sequence[int], batch_size: int, sort: bool) -> dict[str, int]:
    r"""The work a padded transformer does on inputs of token ``lengths``, batched in order.

    Consecutive batches :math:`B` of ``batch_size`` inputs (after sorting by length when
    ``sort``) are each padded to their longest input :math:`\max_{i \in B} \ell_i`, so the model
    processes :math:`\sum_B |B| \max_{i \in B} \ell_i` token positions; self-attention, quadratic in
    the padded length, costs about :math:`\sum_B |B| (\max_{i \in B} \ell_i)^2`.

    Returns ``{"tokens", "positions", "attention"}`` (real tokens, padded positions, and the
    attention proxy).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    values = sorted(lengths) if sort else list(lengths)
    positions = attention = 0
    for start in range(0, len(values), batch_size):
        batch = values[start : start + batch_size]
        longest = max(batch)
        positions += len(batch) * longest
        attention += len(batch) * longest * longest
    return {"tokens": int(sum(values)), "positions": positions, "attention": attention}


def padding_savings(
    encoder: SentenceEncoder,
    groups: Mapping[str, Sequence[str]],
    batch_size: int = 32,
) -> pd.DataFrame:
    """How much sorting by length saves, in token positions and attention, for each group of
    sentences (:func:`padding_work` in input order divided by the same sorted).

    Only tokenises (no model run), so it is cheap and machine-independent: it explains why the
    measured smart-batching speed-up depends on how *mixed* the lengths are.
    """
    rows = []
    for name, sentences in groups.items():
        ids, _ = encoder.token_ids(list(sentences))
        lengths = [len(x) for x in ids]
        plain = padding_work(lengths, batch_size, sort=False)
        smart = padding_work(lengths, batch_size, sort=True)
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
