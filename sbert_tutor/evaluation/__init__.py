"""Evaluators: encoder + data + metrics -> tidy tables with provenance."""

from sbert_tutor.evaluation.sts import (
    AGGREGATIONS,
    evaluate_sts,
    evaluate_sts_details,
    results_table,
)

__all__ = ["AGGREGATIONS", "evaluate_sts", "evaluate_sts_details", "results_table"]
from sbert_tutor.evaluation.retrieval import evaluate_msmarco, evaluate_retrieval  # noqa: E402

__all__ += ["evaluate_msmarco", "evaluate_retrieval"]
from sbert_tutor.evaluation.transfer import TransferResult, evaluate_transfer  # noqa: E402

__all__ += ["TransferResult", "evaluate_transfer"]
