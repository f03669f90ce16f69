"""One call from (model, loss, data) to a trained encoder with its log: the CLI and the chapters share it.

:func:`fit` loads the encoder (unless given one), builds the objective from the registry
(:data:`~sbert_tutor.training.objectives.OBJECTIVES`), prepares the examples, trains with
:class:`~sbert_tutor.training.trainer.Trainer` and returns a :class:`TrainRun` whose ``log``
holds the settings, the loss curve, timing and provenance. Nothing here depends on which loss
it is: the objective class says what data it reads and what options the data implies.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from sbert_tutor.data.sts import STSData
from sbert_tutor.encoders.cross_encoder import CrossEncoder
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.provenance import provenance as make_provenance
from sbert_tutor.stats import seeded_subset
from sbert_tutor.training.checkpoint import set_seed
from sbert_tutor.training.config import TrainingConfig
from sbert_tutor.training.evaluator import STSEvaluator
from sbert_tutor.training.examples import to_examples
from sbert_tutor.training.objectives import Objective, objective_class
from sbert_tutor.training.record import TrainingRecord
from sbert_tutor.training.sources import load_training_data, read_training_file
from sbert_tutor.training.trainer import Evaluator, Trainer
from sbert_tutor.validation import OptionError, python_spelling

__all__ = ["KEEP", "Keep", "TrainRun", "fit"]


class Keep(enum.Enum):
    """The default of :func:`fit`'s :class:`~sbert_tutor.training.config.TrainingConfig`
    keywords: keep ``config``'s value (``None`` cannot say so, since several fields take it:
    ``max_grad_norm=None`` turns clipping off)."""

    KEEP = "keep config's value"


#: :data:`Keep.KEEP`, the default of every :class:`TrainingConfig` keyword of :func:`fit`.
KEEP = Keep.KEEP


@dataclass
class TrainRun:
    """A finished training run: the trained ``model`` (a sentence encoder or a cross-encoder, as
    given to :func:`fit`), its objective, the loss record, the time and the log."""

    model: SentenceEncoder | CrossEncoder
    objective: Objective
    record: TrainingRecord
    seconds: float
    log: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line: the model, the loss, the steps, the final loss and the time (not the
        model's layers)."""
        name = getattr(self.model, "name", None) or type(self.model).__name__
        final = self.record.final_loss()
        loss = "n/a" if final != final else f"{final:.4f}"
        steps = self.log.get("steps_done", len(self.record.steps))
        return (
            f"TrainRun(model={name!r}, loss={self.objective.name!r}, steps={steps}, "
            f"final_loss={loss}, evals={len(self.record.evals)}, seconds={self.seconds:.1f})"
        )


def fit(
    model: str | SentenceEncoder | CrossEncoder,
    loss: str,
    train: str | Any,
    config: TrainingConfig | None = None,
    *,
    objective_options: dict[str, Any] | None = None,
    max_examples: int | None = None,
    eval_task: str | None = None,
    eval_data: str | Path | STSData | Sequence[tuple[str, str, float]] | None = None,
    evaluator: Evaluator | None = None,
    text_columns: Sequence[str] | None = None,
    label_column: str | None = None,
    resume_from: str | None = None,
    device: str | None = None,
    provenance: Mapping[str, Any] | None = None,
    epochs: int | Keep = KEEP,
    batch_size: int | Keep = KEEP,
    lr: float | Keep = KEEP,
    weight_decay: float | Keep = KEEP,
    warmup_ratio: float | Keep = KEEP,
    schedule: str | Keep = KEEP,
    max_steps: int | None | Keep = KEEP,
    max_grad_norm: float | None | Keep = KEEP,
    seed: int | Keep = KEEP,
    amp: str | None | Keep = KEEP,
    bucket: int | tuple[int, ...] | str | None | Keep = KEEP,
    length_buckets: int | None | Keep = KEEP,
    no_duplicates: bool | None | Keep = KEEP,
    eval_steps: int | None | Keep = KEEP,
    eval_before: bool | Keep = KEEP,
    save_steps: int | None | Keep = KEEP,
    checkpoint_dir: str | None | Keep = KEEP,
    keep_checkpoints: int | None | Keep = KEEP,
    show_progress_bar: bool | Keep = KEEP,
) -> TrainRun:
    """Train ``model`` with ``loss`` on ``train``.

    Args:
        model: a hub name / folder, or a :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder` (trained in
            place); for a cross-encoder loss a :class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder`
            (a name is loaded with :meth:`~sbert_tutor.encoders.cross_encoder.CrossEncoder.from_pretrained`, a new one-logit head
            where the folder has none).
        loss: a registered objective (:data:`~sbert_tutor.training.objectives.OBJECTIVES`):
            ``cosine``, ``softmax``, ``triplet``, ``mnrl``, ``supmpn``, ``ce_score``,
            ``contrastive``, the cross-encoder losses ``ce_bce`` and ``ce_mse``, or your own.
        train: a named set (``stsb``, ``sick``, ``nli``, ...), a file path, or your own data
            (list of tuples/dicts, DataFrame, ``DataTable``, ``datasets.Dataset``, STS/NLI
            records).
        config: optimisation settings (AdamW, warm-up, clipping, seed, ...).
        objective_options: the objective's options (``features=``, ``scale=``, ``margin=``,
            ``score_range=``, ``hard_negatives=``, ``num_positives=`` ...; see its class).
        max_examples: train on a seeded random subset of this size (the quick profile's knob).
        eval_task: an STS task whose dev split is evaluated during training (``None``: no evaluation).
        eval_data: your own dev pairs, evaluated as ``eval_task`` is (Spearman and Pearson x100
            of the similarity, recorded as ``dev_spearman`` and ``dev_pearson``): a list of
            ``(sentence1, sentence2, score)``, an :class:`~sbert_tutor.data.STSData` or a file
            (two text columns and a score, read as ``train`` files are).
        evaluator: your own ``encoder -> {metric: value}`` instead (e.g. an
            :class:`~sbert_tutor.training.STSEvaluator`; its ``primary_metric``, if it has one,
            is the log's ``evaluator``). Evaluation runs before training, every
            ``eval_steps`` steps and at the end. Give at most one of ``eval_task``,
            ``eval_data`` and ``evaluator``.
        text_columns, label_column: the columns of a table or file to train on (names matched
            ignoring case; default: the label is the column called label/score, the texts the
            others in order).
        resume_from: a checkpoint to continue from (see :meth:`Trainer.train`).
        device: where a model loaded by name goes (``None``: CUDA when available).
        provenance: anything else to record in the log's provenance (e.g. ``{"command": ...}``).
        epochs, batch_size, lr, ..., show_progress_bar: the fields of :class:`TrainingConfig`,
            one keyword each (sentence-transformers' ``learning_rate`` is ``lr``,
            ``num_train_epochs`` ``epochs``, ``warmup_steps`` ``warmup_ratio``); each one given
            replaces that field of ``config`` (:data:`KEEP`, the default: ``config``'s value).
            The loss's own options go in ``objective_options``.

    Example (a cross-encoder on 0/1 relevance labels):
        >>> run = fit("sentence-transformers/all-MiniLM-L6-v2", "ce_bce",
        ...           [("what is a cat?", "A cat is a small feline.", 1),
        ...            ("what is a cat?", "Paris is in France.", 0)])  # doctest: +SKIP
        >>> run.model.rank("what is a cat?", ["Paris is in France.", "Cats purr."])  # doctest: +SKIP
    """
    given = locals()
    settings = {name: given[name] for name in _config_keywords() if given[name] is not KEEP}
    config = replace(config or TrainingConfig(), **settings)
    cls = objective_class(loss)
    option_names = cls.option_defaults()
    cls.check_options(objective_options or {})  # a misspelt option fails before any loading
    try:
        return _fit(
            model,
            cls,
            train,
            config,
            dict(objective_options or {}),
            max_examples,
            _evaluator(eval_task, eval_data, evaluator),
            text_columns,
            label_column,
            resume_from,
            device,
            provenance,
        )
    except OptionError as exc:  # advice in fit's own terms: objective options by their keyword
        raise exc.spelled(
            lambda name, value: (
                f"objective_options={{{name!r}: {value!r}}}"
                if name in option_names
                else python_spelling(name, value)
            )
        ) from None


def _fit(
    model: str | SentenceEncoder | CrossEncoder,
    cls: type[Objective],
    train: Any,
    config: TrainingConfig,
    options: dict[str, Any],
    max_examples: int | None,
    evaluator: Evaluator | None,
    text_columns: Sequence[str] | None,
    label_column: str | None,
    resume_from: str | None,
    device: str | None,
    provenance: Mapping[str, Any] | None,
) -> TrainRun:
    data = (
        load_training_data(train, cls, options, seed=config.seed)
        if isinstance(train, str)
        else train
    )
    options = cls.options_from_data(data, options)
    model_class = CrossEncoder if cls.model_kind == "cross-encoder" else SentenceEncoder
    if isinstance(model, (SentenceEncoder, CrossEncoder)):
        encoder = model
    else:
        set_seed(config.seed)  # a cross-encoder's new classification head is drawn at load
        encoder = model_class.from_pretrained(model, device=device)
    base_model = encoder.describe()
    set_seed(config.seed)  # before the objective: the softmax head's initial weights
    dim = encoder.embedding_dim if isinstance(encoder, SentenceEncoder) else None
    objective = cls.create(dim, options)
    objective.check_model(encoder)
    examples = objective.prepare(data, text_columns, label_column)
    if max_examples is not None and max_examples < len(examples):
        examples = examples.subset(seeded_subset(len(examples), max_examples, config.seed))
    trainer = Trainer(encoder, objective, examples, config, evaluator)
    start = time.perf_counter()
    record = trainer.train(resume_from=resume_from)
    seconds = time.perf_counter() - start
    files = [*examples.files, *getattr(evaluator, "files", ())]
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
        "evaluator": getattr(evaluator, "primary_metric", None),
        "loss_curve": record.to_dict(),
        "provenance": make_provenance(
            data_files=files,
            model=encoder.describe(),
            extra={"seed": config.seed, **(provenance or {})},
        ),
    }
    encoder.training_history.append(_history_entry(log, record))
    return TrainRun(model=encoder, objective=objective, record=record, seconds=seconds, log=log)


def _evaluator(
    eval_task: str | None,
    eval_data: str | Path | STSData | Sequence[tuple[str, str, float]] | None,
    evaluator: Evaluator | None,
) -> Evaluator | None:
    """The evaluation during training that ``fit`` was asked for (at most one way)."""
    given = [
        name
        for name, value in (
            ("eval_task", eval_task),
            ("eval_data", eval_data),
            ("evaluator", evaluator),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise ValueError(f"pass one of {', '.join(given)} to fit, not {len(given)}")
    if evaluator is not None:
        if not callable(evaluator):
            raise TypeError(
                f"evaluator must be callable (encoder -> {{metric: value}}), got "
                f"{type(evaluator).__name__}"
            )
        return evaluator
    if eval_task:
        return STSEvaluator(eval_task, "dev")
    if eval_data is not None:
        return STSEvaluator(data=_dev_pairs(eval_data), name="dev")
    return None


def _dev_pairs(data: str | Path | STSData | Sequence[tuple[str, str, float]]) -> STSData:
    """Your own dev pairs as :class:`~sbert_tutor.data.STSData`: ``(sentence1, sentence2,
    score)`` tuples, or a file of two text columns and a score (``read_training_file``; a
    bad line is named ``FILE:LINE``)."""
    if isinstance(data, STSData):
        return data
    if isinstance(data, (str, Path)):
        table = read_training_file(data)
        examples = to_examples(
            table, label="float", num_texts=2, what="dev pairs: two texts and a score"
        )
        pairs = [
            (a, b, float(s)) for (a, b), s in zip(examples.texts, examples.labels, strict=True)
        ]
        own = STSData.from_pairs(pairs, name="dev")
        return replace(own, source=f"file {data} ({len(own)} pairs)", files=(Path(data),))
    return STSData.from_pairs(data, name="dev")


def _config_keywords() -> tuple[str, ...]:
    """The fields of :class:`TrainingConfig`, which :func:`fit` takes as keywords."""
    return tuple(f.name for f in fields(TrainingConfig))


def _history_entry(log: dict[str, Any], record: TrainingRecord) -> dict[str, Any]:
    """What ``SentenceEncoder.training_history`` keeps of a run (for the model card): the
    log without the loss curve and the provenance, plus the final loss (mean of the last 10
    steps) and the evaluation points."""
    entry = {k: v for k, v in log.items() if k not in ("loss_curve", "provenance")}
    final = record.final_loss()
    entry["final_loss"] = None if final != final else final  # NaN: no step logged a loss
    entry["evals"] = [dict(e) for e in record.evals]
    entry["finished"] = log["provenance"]["timestamp"]
    return entry
