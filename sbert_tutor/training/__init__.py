"""Training encoders and cross-encoders: one trainer, pluggable objectives, reproducible runs.

Rule of the folder: the top of the library below the commands: it may use every other part
(data, encoders, losses, evaluation for the dev scores, search for mining) and nothing imports it
but the commands, the entry points and the book.

* :mod:`.objectives` -- how a batch of examples becomes a loss (cosine, softmax, triplet, mnrl,
  cached_mnrl, supmpn, ce_score,
  contrastive, margin_mse; ce_bce and ce_mse for a cross-encoder), each calling a pure
  function of :mod:`sbert_tutor.losses`;
  :data:`~.objectives.OBJECTIVES` is the registry of loss names (add one with
  :func:`~.objectives.register_objective`);
* :mod:`.recipe` -- :func:`~.recipe.fit`: (model, loss, data) -> trained encoder and its log;
* :mod:`.examples` -- the user's data (lists, DataFrames, ``datasets.Dataset``, STS/NLI records)
  checked and turned into rows of texts + labels;
* :mod:`.samplers` -- smart batching (length buckets) and no-duplicates batches;
* :mod:`.schedules` -- linear warm-up + linear decay;
* :mod:`.trainer` -- the loop: AdamW, clipping, AMP on CUDA, evaluation, loss-curve record;
* :mod:`.checkpoint` -- seeds, RNG states, save / resume;
* :mod:`.evaluator` -- STS Spearman during training.
* :mod:`.hard_negatives` -- mining hard negatives for (query, positive) pairs (dense or BM25),
  with sentence-transformers' filters;
* :mod:`.mining` -- mining positive pairs from a pool by semantic search (chapter 11's data);
* :mod:`.distributed` -- several processes: gathering embeddings with their gradients.
"""

from sbert_tutor.training.checkpoint import (
    list_checkpoints,
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
    set_seed,
)
from sbert_tutor.training.config import TrainingConfig
from sbert_tutor.training.evaluator import STSEvaluator
from sbert_tutor.training.examples import Examples, to_examples
from sbert_tutor.training.objectives import (
    OBJECTIVES,
    CachedMNRLObjective,
    CEScoreObjective,
    ContrastiveObjective,
    CosineObjective,
    CrossEncoderBCEObjective,
    CrossEncoderMSEObjective,
    MarginMSEObjective,
    MNRLObjective,
    Objective,
    SoftmaxObjective,
    SupMPNObjective,
    TripletObjective,
    embed_rows,
    embed_texts,
    make_objective,
    objective_class,
    pair_lengths,
    register_objective,
    score_rows,
    token_lengths,
)
from sbert_tutor.training.record import TrainingRecord
from sbert_tutor.training.samplers import (
    LengthBucketBatchSampler,
    NoDuplicatesBatchSampler,
    length_bucketed_batches,
)
from sbert_tutor.training.schedules import lr_multiplier, make_scheduler, warmup_steps_for
from sbert_tutor.training.trainer import Trainer, clip_gradients, gradient_norm

__all__ = [
    "OBJECTIVES",
    "CEScoreObjective",
    "CachedMNRLObjective",
    "ContrastiveObjective",
    "CosineObjective",
    "CrossEncoderBCEObjective",
    "CrossEncoderMSEObjective",
    "Examples",
    "LengthBucketBatchSampler",
    "MNRLObjective",
    "MarginMSEObjective",
    "NoDuplicatesBatchSampler",
    "Objective",
    "STSEvaluator",
    "SoftmaxObjective",
    "SupMPNObjective",
    "Trainer",
    "TrainingConfig",
    "TrainingRecord",
    "TripletObjective",
    "clip_gradients",
    "embed_rows",
    "embed_texts",
    "gradient_norm",
    "length_bucketed_batches",
    "list_checkpoints",
    "load_checkpoint",
    "lr_multiplier",
    "make_objective",
    "objective_class",
    "register_objective",
    "make_scheduler",
    "pair_lengths",
    "rng_state",
    "save_checkpoint",
    "score_rows",
    "set_rng_state",
    "set_seed",
    "to_examples",
    "token_lengths",
    "warmup_steps_for",
]
