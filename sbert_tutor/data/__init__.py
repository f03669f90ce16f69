"""Data loaders: plain typed records from a local folder (``SBERT_TUTOR_DATA``) or the hub.

Rule of the folder: a loader reads files or the hub and returns records; it imports only the root
modules (settings, validation, stats, results), never a model.
"""

from sbert_tutor.data.files import DataNotFoundError
from sbert_tutor.data.nli import (
    NLI_LABELS,
    NLI_TASKS,
    NLIData,
    as_nli,
    entailment_pairs,
    labelled_pairs,
    load_nli,
    load_nli_train,
    nli_triplets,
    supmpn_groups,
)
from sbert_tutor.data.sts import (
    HUB_DATASETS,
    STS_TASKS,
    STSData,
    check_task,
    load_sts,
    sample_sts,
)

__all__ = ["DataNotFoundError", "HUB_DATASETS", "STS_TASKS", "STSData", "check_task", "load_sts"]
__all__ += ["sample_sts"]
__all__ += ["NLI_LABELS", "NLI_TASKS", "NLIData", "as_nli", "entailment_pairs", "labelled_pairs"]
__all__ += ["load_nli", "load_nli_train", "nli_triplets", "supmpn_groups"]
from sbert_tutor.data.msmarco import DATASETS as MSMARCO_DATASETS  # noqa: E402
from sbert_tutor.data.msmarco import (  # noqa: E402
    MSMarcoData,
    QuerySplit,
    StreamedCorpus,
    candidate_pairs,
    check_msmarco_dataset,
    load_bm25_candidates,
    load_msmarco,
    load_msmarco_queries,
    sample_msmarco,
    split_queries,
)

__all__ += ["MSMARCO_DATASETS", "MSMarcoData", "StreamedCorpus", "check_msmarco_dataset"]
__all__ += ["load_bm25_candidates", "load_msmarco", "load_msmarco_queries", "sample_msmarco"]
__all__ += ["QuerySplit", "candidate_pairs", "split_queries"]
from sbert_tutor.data.senteval import TRANSFER_TASKS, TransferTask, load_transfer  # noqa: E402

__all__ += ["TRANSFER_TASKS", "TransferTask", "load_transfer"]
from sbert_tutor.data.pool import POOL_PARTS, TextPool, load_text_pool  # noqa: E402

__all__ += ["POOL_PARTS", "TextPool", "load_text_pool"]
