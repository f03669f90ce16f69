"""The re-ranking chapter's study, recorded: two first stages, two re-rankers.

Not a test: a run too long for the book's quick profile (31 minutes on two AVX2 CPU cores),
recorded once with its provenance and shown beside the chapter's live quick run. It calls
:func:`sbert_tutor.book.chapters.reranking.rerank_study` with a profile's sizes (the chapter
module's ``SIZES``): BM25's and all-MiniLM-L6-v2's top 20 of the held-out dev-subset queries,
each re-ranked by the quick profile's 30-step cross-encoder and by the profile's trained one
(both trained on the same training queries), MRR@10 with paired bootstrap intervals and each
query's RR@10.

Example (``--json auto`` writes ``sbert_tutor/book/results/rerank_study_<profile>_<device>.json``)::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/rerank_study.py \\
        --profile t4 --device cpu --json auto
"""

from __future__ import annotations

from retriever_study import record_study


def main(argv: list[str] | None = None) -> None:
    from sbert_tutor.book.chapters.reranking import SIZES, rerank_study

    record_study("rerank_study", rerank_study, SIZES, argv, __doc__)


if __name__ == "__main__":
    main()
