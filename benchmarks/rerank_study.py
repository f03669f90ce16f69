"""The re-ranking chapter's study, recorded: two first stages, two re-rankers.

Not a test: a run too long for the book's quick profile (31 minutes on two AVX2 CPU cores),
recorded once with its provenance and shown beside the chapter's live quick run. It is the
chapter's grid of first stages by re-rankers
(:func:`sbert_tutor.book.chapters.reranking.rerank_grid`, which the chapter's page runs live) with
a profile's sizes (the chapter module's ``SIZES``): BM25's and
all-MiniLM-L6-v2's top 20 of the held-out dev-subset queries, each re-ranked by the quick
profile's 30-step cross-encoder and by the profile's trained one (both trained on the same
training queries), MRR@10 with paired bootstrap intervals and each query's RR@10
(:func:`rerank_study`).

Example (``--json auto`` writes ``sbert_tutor/book/results/rerank_study_<profile>_<device>.json``)::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/rerank_study.py \\
        --profile t4 --device cpu --json auto
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from retriever_study import record_study

from sbert_tutor.book.chapters.reranking import (
    BM25_DEPTH,
    SIZES,
    RerankingSizes,
    bm25_first_stage,
    load_rerank_data,
    msmarco_reranker,
    rerank_grid,
)
from sbert_tutor.book.configs import training_config
from sbert_tutor.book.weak_start import MINILM, load_start
from sbert_tutor.evaluation.retrieval import encode_corpus, retrieve

#: The re-ranker names of :func:`rerank_study`.
WEAK, TRAINED = "weak (quick profile's run)", "trained (this profile's run)"


def rerank_study(
    sizes: RerankingSizes, device: str | None = None, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Chapter 14's recorded study: two first stages (BM25's top 20, all-MiniLM-L6-v2's top 20)
    and two re-rankers (the quick profile's 30-step cross-encoder and ``sizes``' trained one,
    both trained on the same training queries of ``sizes``' split), on ``sizes``' held-out
    test queries (``rerank_grid``). Returns a JSON-ready record (rows, per-query RR@10,
    how each re-ranker was made, the data notes and files)."""
    weak_sizes = SIZES["quick"]
    data = load_rerank_data(sizes.test_queries, sizes.other_passages, sizes.negatives_per_query)
    weak_rows = load_rerank_data(
        sizes.test_queries, sizes.other_passages, weak_sizes.negatives_per_query
    ).train
    made, rerankers, seconds = {}, {}, {}
    for name, run_sizes, rows in (
        (WEAK, weak_sizes, weak_rows),
        (TRAINED, sizes, data.train),
    ):
        log(f"training the {name} re-ranker on {len(rows):,} rows")
        start = time.perf_counter()
        config = training_config(run_sizes.msmarco_run, eval_before=False, show_progress_bar=True)
        rerankers[name], made[name] = msmarco_reranker(run_sizes, rows, config, device=device)
        seconds[f"train {name}"] = time.perf_counter() - start
    log("retrieving with all-MiniLM-L6-v2")
    start = time.perf_counter()
    encoder = load_start(MINILM)
    corpus = encode_corpus(encoder, data.test.corpus)
    dense = retrieve(encoder, data.test.queries, corpus, top_k=BM25_DEPTH, show_progress_bar=False)
    seconds["dense retrieval"] = time.perf_counter() - start
    stages = {"BM25 (Anserini)": bm25_first_stage(data.test), "all-MiniLM-L6-v2": dense}
    log("re-ranking")
    start = time.perf_counter()
    table, per_query = rerank_grid(stages, rerankers, data.test, BM25_DEPTH)
    seconds["re-ranking"] = time.perf_counter() - start
    return {
        "k": BM25_DEPTH,
        "rerankers": made,
        "rows": table.reset_index().to_dict(orient="records"),
        "per_query_rr@10": per_query,
        "notes": list(data.notes),
        "seconds_by_part": seconds,
        "files": [str(f) for f in data.files],
    }


def main(argv: list[str] | None = None) -> None:
    record_study("rerank_study", rerank_study, SIZES, argv, __doc__)


if __name__ == "__main__":
    main()
