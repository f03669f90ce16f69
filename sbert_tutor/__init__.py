"""sbert_tutor: Sentence-BERT from first principles.

The library behind the *sbert-tutor* book. Every chapter imports it; it is also usable on its own.
The main entry points are importable from here (lazily: ``import sbert_tutor`` loads neither torch
nor transformers until one of them is used):

=============================  ======================================================================
name                           what it does
=============================  ======================================================================
``SentenceEncoder``            load any sentence-transformers folder or hub model; ``encode``, ``similarity``, ``save``
``CrossEncoder``               score text pairs read together; ``predict``, ``rank``, ``save``
``evaluate_sts``               Spearman/Pearson x100 of cosine similarity on STS12-16, STSb, SICK-R
``evaluate_transfer``          SentEval's seven transfer tasks: a linear probe on frozen embeddings
``evaluate_retrieval``         encode queries + corpus, search, score with trec_eval's conventions
``semantic_search``            exact top-k search of query embeddings in a corpus, memory-bounded
``evaluate_run``               MRR, nDCG, recall, MAP, ... of a run against qrels (as trec_eval)
``run_from_topk``              top-k arrays from ``semantic_search`` -> a run for ``evaluate_run``
``fit``, ``TrainingConfig``    fine-tune an encoder (or cross-encoder) on your data or a named set
``load_sts``                   STS pairs with gold scores (data folder or hub)
``load_nli``                   NLI premise/hypothesis pairs with labels
``load_msmarco``               MS MARCO / TREC DL queries, qrels and a passage corpus
``load_transfer``              a SentEval transfer task (MR, CR, SUBJ, MPQA, SST2, TREC, MRPC)
``quantize_embeddings``        int8 / uint8 / binary embeddings
=============================  ======================================================================

>>> from sbert_tutor import SentenceEncoder
>>> enc = SentenceEncoder.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
>>> enc.encode(["A man is playing a guitar."]).shape  # doctest: +SKIP
(1, 384)

Settings (environment variables) are documented in :mod:`sbert_tutor.settings`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it (imported on first use).
_EXPORTS: dict[str, str] = {
    "SentenceEncoder": "sbert_tutor.encoders.sentence_encoder",
    "CrossEncoder": "sbert_tutor.encoders.cross_encoder",
    "evaluate_sts": "sbert_tutor.evaluation.sts",
    "evaluate_transfer": "sbert_tutor.evaluation.transfer",
    "evaluate_retrieval": "sbert_tutor.evaluation.retrieval",
    "semantic_search": "sbert_tutor.search.exact",
    "evaluate_run": "sbert_tutor.metrics",
    "run_from_topk": "sbert_tutor.metrics",
    "fit": "sbert_tutor.training.recipe",
    "TrainingConfig": "sbert_tutor.training.config",
    "load_sts": "sbert_tutor.data.sts",
    "load_nli": "sbert_tutor.data.nli",
    "load_msmarco": "sbert_tutor.data.msmarco",
    "load_transfer": "sbert_tutor.data.senteval",
    "quantize_embeddings": "sbert_tutor.search.quantize",
}
__all__ = [
    "CrossEncoder",
    "SentenceEncoder",
    "TrainingConfig",
    "__version__",
    "evaluate_retrieval",
    "evaluate_run",
    "evaluate_sts",
    "evaluate_transfer",
    "fit",
    "load_msmarco",
    "load_nli",
    "load_sts",
    "load_transfer",
    "quantize_embeddings",
    "run_from_topk",
    "semantic_search",
]

if TYPE_CHECKING:  # pragma: no cover
    from sbert_tutor.data.msmarco import load_msmarco
    from sbert_tutor.data.nli import load_nli
    from sbert_tutor.data.senteval import load_transfer
    from sbert_tutor.data.sts import load_sts
    from sbert_tutor.encoders.cross_encoder import CrossEncoder
    from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
    from sbert_tutor.evaluation.retrieval import evaluate_retrieval
    from sbert_tutor.evaluation.sts import evaluate_sts
    from sbert_tutor.evaluation.transfer import evaluate_transfer
    from sbert_tutor.metrics import evaluate_run, run_from_topk
    from sbert_tutor.search.exact import semantic_search
    from sbert_tutor.search.quantize import quantize_embeddings
    from sbert_tutor.training.config import TrainingConfig
    from sbert_tutor.training.recipe import fit


def __getattr__(name: str) -> Any:
    # Lazy import keeps `import sbert_tutor` (and the CLI's --help) fast: torch and transformers
    # load only when an entry point that needs them is first used.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sbert_tutor' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
