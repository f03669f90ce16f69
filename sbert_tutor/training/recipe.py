"""One call from (model, loss, data) to a trained encoder with its log: the CLI and the chapters share it.

:func:`fit` loads the encoder (unless given one), builds the objective, prepares the examples,
trains with :class:`~sbert_tutor.training.trainer.Trainer` and returns a :class:`TrainRun` whose
``log`` holds the settings, the loss curve, timing and provenance.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sbert_tutor.training.config import TrainingConfig
from sbert_tutor.training.record import TrainingRecord


@dataclass
class TrainRun:
    """A finished training run."""

    encoder: Any
    objective: Any
    record: TrainingRecord
    seconds: float
    log: dict[str, Any] = field(default_factory=dict)

    def save(self, folder: str) -> Any:
        """Write the encoder (sentence-transformers format) and ``training_log.json`` into ``folder``."""
        from sbert_tutor.commands.common import write_json

        out = self.encoder.save(folder)
        write_json(out / "training_log.json", {**self.log, "output": str(out)})
        return out


def fit(
    model: str | Any,
    loss: str,
    train: str | Any,
    config: TrainingConfig | None = None,
    *,
    objective_options: dict[str, Any] | None = None,
    max_examples: int | None = None,
    eval_task: str | None = None,
    hard_negatives: bool = False,
    num_positives: int = 2,
    num_negatives: int = 2,
    score_range: tuple[float, float] | None = None,
    resume_from: str | None = None,
    device: str | None = None,
    **provenance_extra: Any,
) -> TrainRun:
    """Train ``model`` with ``loss`` on ``train``.

    Args:
        model: a hub name / folder, or a :class:`~sbert_tutor.encoder.SentenceEncoder` (trained in place).
        loss: ``cosine``, ``softmax``, ``triplet``, ``mnrl``, ``supmpn``, ``ce`` or ``contrastive``.
        train: a named set (``stsb``, ``sick``, ``nli``, ...), a file path, or your own data
            (list of tuples/dicts, DataFrame, ``datasets.Dataset``, STS/NLI records).
        config: optimisation settings (AdamW, warm-up, clipping, seed, ...).
        objective_options: extra arguments of the objective (``features=``, ``scale=``, ``margin=``...).
        max_examples: train on a seeded random subset of this size (the quick profile's knob).
        eval_task: an STS task whose dev split is evaluated during training (``None``: no evaluation).
        hard_negatives, num_positives, num_negatives: shaping of named NLI sets.
        score_range: the score scale of user data for the cosine loss (named sets know theirs).
    """
    from sbert_tutor.encoder import SentenceEncoder
    from sbert_tutor.provenance import provenance
    from sbert_tutor.training import STSEvaluator, Trainer, make_objective, set_seed
    from sbert_tutor.training.sources import load_training_data

    config = config or TrainingConfig()
    if isinstance(train, str):
        data, known_range = load_training_data(
            train,
            loss,
            hard_negatives=hard_negatives,
            num_positives=num_positives,
            num_negatives=num_negatives,
            seed=config.seed,
        )
    else:
        data, known_range = train, getattr(train, "score_range", None)
    score_range = score_range or known_range
    options = dict(objective_options or {})
    if loss == "cosine":
        if score_range is None:
            raise ValueError(
                "say which scale the scores are on: score_range=(0, 5) for STS, (0, 1) ..."
            )
        options.setdefault("score_range", score_range)
    if loss == "supmpn":
        options.setdefault("num_positives", num_positives)
        options.setdefault("num_negatives", num_negatives)
    encoder = (
        model
        if isinstance(model, SentenceEncoder)
        else SentenceEncoder.from_pretrained(model, device=device)
    )
    base_model = encoder.describe()
    set_seed(config.seed)  # before the objective: the softmax head's initial weights
    objective = make_objective(loss, encoder.embedding_dim, **options)
    examples = objective.prepare(data)
    if max_examples is not None and max_examples < len(examples):
        rng = np.random.default_rng(config.seed)
        examples = examples.subset(np.sort(rng.choice(len(examples), max_examples, replace=False)))
    evaluator = STSEvaluator(eval_task, "dev") if eval_task else None
    trainer = Trainer(encoder, objective, examples, config, evaluator)
    start = time.perf_counter()
    record = trainer.train(resume_from=resume_from)
    seconds = time.perf_counter() - start
    files = [*examples.files, *(evaluator.files if evaluator else ())]
    log = {
        "base_model": base_model,
        "loss": objective.settings(),
        "train_data": {
            "source": examples.source,
            "examples": len(examples),
            "columns": list(examples.columns),
        },
        "config": config.to_dict(),
        "precision": {"amp": trainer.amp or "fp32", "bucket": trainer.bucket},
        "total_steps": trainer.total_steps,
        "warmup_steps": trainer.warmup_steps,
        "steps_done": trainer.step,
        "train_seconds": seconds,
        "evaluator": None if evaluator is None else evaluator.primary_metric,
        "loss_curve": record.to_dict(),
        "provenance": provenance(
            data_files=files, model=encoder.describe(), seed=config.seed, **provenance_extra
        ),
    }
    return TrainRun(encoder=encoder, objective=objective, record=record, seconds=seconds, log=log)
