"""Chapter 15's measurement: the variants' bytes, the table's numbers against direct
computations (exact search, hand-computed Hamming, trec_eval-style MRR), and which compact forms
keep 95% of MRR@10."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sbert_tutor.book.chapters.compressed_embeddings import (
    Variant,
    compact_forms,
    compression_table,
    pair_scores,
    variants,
)


def _collection(n: int = 300, n_q: int = 30, dim: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    corpus = rng.standard_normal((n, dim)).astype(np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = corpus[:n_q] + 0.3 * rng.standard_normal((n_q, dim)).astype(np.float32)
    qids = [f"q{i}" for i in range(n_q)]
    pids = [f"p{i}" for i in range(n)]
    qrels = {f"q{i}": {f"p{i}": 1} for i in range(n_q)}
    return queries, corpus, qids, pids, qrels


def test_variants_and_their_bytes():
    queries, corpus, qids, pids, qrels = _collection(n=40, n_q=5, dim=384)
    table = compression_table(queries, corpus, qids, pids, qrels, repeats=1)
    assert list(table.index) == [v.name for v in variants(384)]
    memory, disk = table["bytes a vector (memory)"], table["bytes a vector (disk, rescoring)"]
    assert memory["float32"] == 1536 and memory["int8"] == 384
    assert memory["binary"] == 48
    assert disk["binary + rescore x4 (int8)"] == 384 and memory["binary + rescore x4 (int8)"] == 48
    assert disk["binary + rescore x4 (binary)"] == 0 and disk["float32"] == 0
    assert memory["truncate 32"] == 128
    assert "truncate 384" not in table.index  # only truncations below the model's dimension


def test_table_against_direct_computations():
    queries, corpus, qids, pids, qrels = _collection()
    table = compression_table(queries, corpus, qids, pids, qrels, repeats=1)
    # float32: the reciprocal rank of each query's own passage under exact cosine
    cos = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ corpus.T
    ranks = (cos > cos[np.arange(len(qids)), np.arange(len(qids))][:, None]).sum(axis=1) + 1
    mrr = np.where(ranks <= 10, 1.0 / ranks, 0.0).mean()
    assert np.isclose(table.loc["float32", "MRR@10"], mrr)
    assert table.loc["binary", "memory ratio to float32"] == 32
    # rescoring every passage against int8 codes is (nearly) the float ranking again
    everything = Variant("all", "ubinary", 64, len(pids), "int8")
    full = compression_table(queries, corpus, qids, pids, qrels, rows=[everything], repeats=1)
    assert abs(full.loc["all", "MRR@10"] - mrr) < 0.02


def test_binary_pair_scores_are_negative_hamming():
    a = np.array([[1.0, -1.0, 1.0, 1.0], [-1.0, -1.0, 1.0, -1.0]], dtype=np.float32)
    b = np.array([[1.0, 1.0, -1.0, 1.0], [-1.0, -1.0, 1.0, -1.0]], dtype=np.float32)
    scores = pair_scores(Variant("binary", "ubinary", 4), a, b, None)
    assert scores.tolist() == [-2.0, 0.0]
    assert pair_scores(Variant("r", "ubinary", 4, 2, "binary"), a, b, None) is None


def test_compact_forms_keep_95_percent_of_mrr():
    table = pd.DataFrame(
        {
            "memory ratio to float32": [1.0, 32.0, 32.0, 12.0],
            "MRR@10 / float32": [1.0, 0.94, 0.96, 0.99],
        },
        index=["float32", "binary", "binary + rescore", "truncate 32"],
    )
    compact = compact_forms(table)
    assert list(compact.index) == ["binary", "binary + rescore"]
    assert compact["keeps >= 95% of MRR@10"].tolist() == [False, True]
