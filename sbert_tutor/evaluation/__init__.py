"""Evaluators: encoder + data + metrics -> typed results (a tidy table with provenance).

Rule of the folder: an evaluator takes any :class:`~sbert_tutor.encoders.protocol.Encoder` (ours or
sentence-transformers') and data, and uses data, encoders, search and the root modules; it never
trains.
"""

from sbert_tutor.evaluation.retrieval import (
    MSMarcoResult,
    RetrievalResult,
    evaluate_msmarco,
    evaluate_retrieval,
)
from sbert_tutor.evaluation.sts import (
    AGGREGATIONS,
    STSResult,
    evaluate_sts,
    evaluate_sts_details,
    sts_results_table,
)
from sbert_tutor.evaluation.transfer import TransferResult, evaluate_transfer

__all__ = [
    "AGGREGATIONS",
    "MSMarcoResult",
    "RetrievalResult",
    "STSResult",
    "TransferResult",
    "evaluate_msmarco",
    "evaluate_retrieval",
    "evaluate_sts",
    "evaluate_sts_details",
    "evaluate_transfer",
    "sts_results_table",
]
