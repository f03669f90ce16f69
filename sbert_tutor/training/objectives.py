r"""Objectives: how a batch of examples becomes one loss; the one registry of loss names.

An :class:`Objective` knows the *shape* of its examples (how many texts, which label), the pure
loss function to call, and how a named data set is turned into its examples. The trainer hands
it a batch of ``B`` examples of ``k`` texts each; :meth:`Objective.loss` encodes all ``B * k``
texts in **one** forward pass of the encoder (one padded batch, so the Siamese weights are
literally shared), reshapes the embeddings to ``[B, k, d]`` and calls :meth:`Objective.forward`:

===================  =================================  ==========  =======================================================
name                 texts per example                  label       pure function
===================  =================================  ==========  =======================================================
``cosine``           sentence1, sentence2               score       :func:`~sbert_tutor.losses.cosine_regression`
``softmax``          premise, hypothesis                class id    :func:`~sbert_tutor.losses.softmax_classification`
``triplet``          anchor, positive, negative         --          :func:`~sbert_tutor.losses.triplet`
``mnrl``             anchor, positive [, negatives...]  --          :func:`~sbert_tutor.losses.multiple_negatives_ranking`
``cached_mnrl``      as ``mnrl``                        --          ``mnrl`` with a gradient cache (GradCache)
``supmpn``           anchor, P positives, Q negatives   --          :func:`~sbert_tutor.losses.supmpn`
``ce_score``         query, document                    CE logit    :func:`~sbert_tutor.losses.ce_score_regression`
``margin_mse``       query, positive, negative          CE margin   :func:`~sbert_tutor.losses.margin_mse`
``contrastive``      sentence, positive                 --          :func:`~sbert_tutor.losses.in_batch_contrastive`
``matryoshka_mnrl``  as ``mnrl``                        --          :func:`~sbert_tutor.losses.matryoshka_loss` of ``mnrl``
``ce_bce``           text1, text2 (read as one input)   0/1, score  :func:`~sbert_tutor.losses.cross_encoder_bce`
``ce_mse``           text1, text2 (read as one input)   score       :func:`~sbert_tutor.losses.cross_encoder_mse`
===================  =================================  ==========  =======================================================

**Cross-encoders.** ``ce_bce`` and ``ce_mse`` train a
:class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder` instead (:attr:`Objective.model_kind`): its :meth:`Objective.loss` joins each pair
into one input, computes the logits in one forward pass (:func:`score_rows`) and calls the pure
function on them; its :meth:`Objective.lengths` counts the pair's tokens together, so the
trainer's smart batching sorts by the length the model reads. Everything else (AdamW, warm-up,
clipping, AMP, checkpoints) is the same trainer.

**The registry.** :data:`OBJECTIVES` is the only place a loss name means something: the CLI's
``--loss`` choices, :func:`~sbert_tutor.training.recipe.fit` and the named training sets
(:mod:`~sbert_tutor.training.sources`) all read it. A new loss is one pure function on
embeddings plus one subclass registered with :func:`register_objective`; the subclass declares

* its options: the keyword arguments of its ``__init__`` (``fit(objective_options=...)`` and
  the CLI's ``--loss-option NAME=VALUE`` pass them);
* :attr:`Objective.reads_scores`: it trains on similarity scores (the STS sets);
* :attr:`Objective.nli_shape` (or :meth:`Objective.shape_nli`): how NLI pairs become its
  examples (``None``: not from NLI);
* :meth:`Objective.options_from_data`: options the data itself implies (the score scale).

Texts are *not* de-duplicated inside a batch: a text given twice is encoded twice with two
dropout masks, which is what makes "the premise as its own positive" (SupMPN padding, SimCSE) work.
Only the softmax objective has parameters (its classifier head); the trainer optimises them with
the encoder's.
"""

from __future__ import annotations

import difflib
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from sbert_tutor.data import nli as nli_data
from sbert_tutor.data.nli import NLI_LABELS, NLIData
from sbert_tutor.data.table import DataTable
from sbert_tutor.encoders.cross_encoder import CrossEncoder
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder, TruncationWarning
from sbert_tutor.losses import (
    CE_ACTIVATIONS,
    DEFAULT_FEATURES,
    MARGIN_SIMILARITIES,
    TRIPLET_MARGIN,
    SoftmaxClassifier,
    ce_score_regression,
    cosine_regression,
    cross_encoder_bce,
    cross_encoder_mse,
    in_batch_contrastive,
    margin_mse,
    multiple_negatives_ranking,
    softmax_classification,
    supmpn,
    triplet,
)
from sbert_tutor.losses.matryoshka import check_matryoshka_dims, matryoshka_loss
from sbert_tutor.runtime.batching import Bucket
from sbert_tutor.runtime.precision import full_precision
from sbert_tutor.training import distributed
from sbert_tutor.training.checkpoint import rng_state, set_rng_state
from sbert_tutor.training.distributed import gather_with_grad
from sbert_tutor.training.examples import Examples, to_examples
from sbert_tutor.validation import OptionError, check_choice

__all__ = [
    "CEScoreObjective",
    "CachedMNRLObjective",
    "ContrastiveObjective",
    "CosineObjective",
    "CrossEncoderBCEObjective",
    "CrossEncoderMSEObjective",
    "CrossEncoderObjective",
    "MNRLObjective",
    "MarginMSEObjective",
    "MatryoshkaMNRLObjective",
    "OBJECTIVES",
    "Objective",
    "SoftmaxObjective",
    "SupMPNObjective",
    "TripletObjective",
    "embed_rows",
    "embed_texts",
    "make_objective",
    "objective_class",
    "pair_lengths",
    "register_objective",
    "score_rows",
    "token_lengths",
]


def embed_texts(encoder: SentenceEncoder, texts: Sequence[str], bucket: Bucket = None) -> Tensor:
    """Embed ``texts`` in one forward pass: ``[len(texts), d]`` (with gradients where enabled).

    Texts are tokenised with the encoder's own settings (strip, lower-casing, truncation to
    ``max_seq_length``) and padded to the longest of them, rounded up with ``bucket``
    (:meth:`SentenceEncoder.collate`; masked padding, the same embeddings in fp32).
    """
    ids, _ = encoder.token_ids(list(texts))
    batch = encoder.collate(ids, bucket=bucket)
    device = encoder.device
    return encoder(
        input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device)
    )


def embed_rows(
    encoder: SentenceEncoder, rows: Sequence[Sequence[str]], bucket: Bucket = None
) -> Tensor:
    """Embed ``B`` examples of ``k`` texts each in one forward pass: ``[B, k, d]`` with gradients.

    All ``B k`` texts are one padded batch (:func:`embed_texts`): the longest text of the whole
    batch sets the width.
    """
    width = len(rows[0])
    emb = embed_texts(encoder, [text for row in rows for text in row], bucket)
    return emb.view(len(rows), width, emb.shape[-1])


def score_rows(model: CrossEncoder, rows: Sequence[Sequence[str]], bucket: Bucket = None) -> Tensor:
    """The logits of ``B`` ``(text1, text2)`` examples in one forward pass: ``[B, num_labels]``
    with gradients.

    Each pair is one input ``[CLS] text1 [SEP] text2 [SEP]`` cut to the model's
    ``max_seq_length`` (longest text first), padded to the longest pair of the batch, rounded up
    with ``bucket`` (:meth:`~sbert_tutor.encoders.cross_encoder.CrossEncoder.collate`; masked padding).
    """
    ids, types, _ = model.pair_ids([row[0] for row in rows], [row[1] for row in rows])
    batch = model.collate(ids, types, bucket=bucket)
    device = model.device
    return model(**{name: tensor.to(device) for name, tensor in batch.items()})


def _warn_long(truncated: int, total: int, what: str, max_seq_length: int) -> None:
    if truncated:
        warnings.warn(
            f"{truncated} of {total} training {what} are longer than max_seq_length="
            f"{max_seq_length} tokens and will be truncated",
            TruncationWarning,
            stacklevel=5,  # the caller of Trainer(...)
        )


def token_lengths(encoder: SentenceEncoder, examples: Examples, chunk: int = 8192) -> np.ndarray:
    """Per example, the token count of its longest text (after truncation): the bucketing key."""
    unique = list(dict.fromkeys(t for row in examples.texts for t in row))
    length: dict[str, int] = {}
    truncated = 0
    for start in range(0, len(unique), chunk):
        part = unique[start : start + chunk]
        ids, cut = encoder.token_ids(part)
        truncated += cut
        length.update(zip(part, (len(x) for x in ids), strict=True))
    _warn_long(truncated, len(unique), "texts", encoder.max_seq_length)
    return np.array([max(length[t] for t in row) for row in examples.texts], dtype=np.int64)


def pair_lengths(model: CrossEncoder, examples: Examples, chunk: int = 8192) -> np.ndarray:
    """Per example, the token count of its pair read as one input (after truncation): the
    bucketing key of a cross-encoder."""
    unique = list(dict.fromkeys((row[0], row[1]) for row in examples.texts))
    length: dict[tuple[str, str], int] = {}
    truncated = 0
    for start in range(0, len(unique), chunk):
        part = unique[start : start + chunk]
        ids, _, cut = model.pair_ids([p[0] for p in part], [p[1] for p in part])
        truncated += cut
        length.update(zip(part, (len(x) for x in ids), strict=True))
    _warn_long(truncated, len(unique), "pairs", model.max_seq_length)
    return np.array([length[(row[0], row[1])] for row in examples.texts], dtype=np.int64)


class Objective(nn.Module):
    """Base class: the shape of the examples an objective reads, and its loss on embeddings.

    Subclasses set ``name``, ``label`` (``None``, ``"float"`` or ``"int"``),
    ``in_batch_negatives`` (whether other examples of the batch act as negatives, which
    calls for the no-duplicates sampler) and :attr:`roles`, implement :meth:`forward`, and are
    registered with :func:`register_objective`. The keyword arguments of ``__init__`` are the
    objective's options. What named data sets it trains on is declared by
    :attr:`reads_scores` and :meth:`shape_nli`.
    """

    name: ClassVar[str] = "objective"
    label: ClassVar[str | None] = None
    #: what the label means, for messages (e.g. "a cross-encoder's logit for the pair").
    label_meaning: ClassVar[str | None] = None
    in_batch_negatives: ClassVar[bool] = False
    #: the model it trains: ``"bi-encoder"`` (a :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder`)
    #: or ``"cross-encoder"`` (a :class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder`).
    model_kind: ClassVar[str] = "bi-encoder"
    #: trains on similarity scores: the STS training sets (``stsb``, ``sick``) are its data.
    reads_scores: ClassVar[bool] = False
    #: how NLI pairs become its examples (``staticmethod(nli_triplets)``, ...); ``None``: the NLI
    #: sets cannot train it. Override :meth:`shape_nli` when the shape depends on options.
    nli_shape: ClassVar[Callable[[NLIData], DataTable] | None] = None
    #: names of the text positions, for messages (``"..."`` marks "and more").
    roles: tuple[str, ...] = ()
    label_names: tuple[str, ...] | None = None
    #: computes its own parameter gradients (:meth:`loss_and_backward`, e.g. in several forward
    #: passes) instead of handing the trainer a loss to back-propagate.
    owns_backward: ClassVar[bool] = False

    # ------------------------------------------------------------------ the registry's hooks
    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """The objective's options (keyword arguments of ``__init__``) and their defaults."""
        params = inspect.signature(cls.__init__).parameters.values()
        return {
            p.name: None if p.default is inspect.Parameter.empty else p.default
            for p in params
            if p.name not in ("self", "embedding_dim")
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """Refuse an option the objective does not take, naming the closest one.

        Raises:
            ValueError: an unknown option name.
        """
        known = cls.option_defaults()
        unknown = sorted(set(options) - set(known))
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(known), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"the {cls.name} loss has no option {', '.join(map(repr, unknown))}; its options: "
                f"{', '.join(known) or 'none'}.{hint}"
            )

    @classmethod
    def create(
        cls, embedding_dim: int | None = None, options: Mapping[str, Any] | None = None
    ) -> Objective:
        """Build the objective from its ``options`` (its ``__init__``'s keywords, as a mapping);
        ``embedding_dim`` when ``__init__`` takes it.

        Raises:
            ValueError: an option the objective does not take, or a missing ``embedding_dim``.
        """
        options = dict(options or {})
        cls.check_options(options)
        if "embedding_dim" in inspect.signature(cls.__init__).parameters:
            if embedding_dim is None:
                raise ValueError(
                    f"the {cls.name} objective needs embedding_dim= (encoder.embedding_dim)"
                )
            return cls(embedding_dim, **options)
        return cls(**options)

    @classmethod
    def shape_nli(
        cls, nli: NLIData, seed: int = 0, options: Mapping[str, Any] | None = None
    ) -> DataTable | None:
        """NLI pairs in this objective's shape (:attr:`nli_shape`), or ``None`` when it does not
        train on NLI."""
        return None if cls.nli_shape is None else cls.nli_shape(nli)

    @classmethod
    def trains_on_nli(cls) -> bool:
        """Whether the NLI sets can train this objective (:attr:`nli_shape` or :meth:`shape_nli`)."""
        own = cls.shape_nli.__func__ is not Objective.shape_nli.__func__  # type: ignore[attr-defined]
        return cls.nli_shape is not None or own

    @classmethod
    def options_from_data(cls, data: Any, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` completed with what the training data implies (default: nothing)."""
        return dict(options)

    # ------------------------------------------------------------------ examples and loss
    @property
    def num_texts(self) -> int | None:
        """Texts per example (``None``: any number >= ``len(roles)``)."""
        return None if "..." in self.roles else len(self.roles)

    @classmethod
    def describe_inputs(cls, roles: Sequence[str] | None = None) -> str:
        """One example in words, e.g. ``"cosine takes (sentence1, sentence2) + a score ..."``."""
        roles = cls.roles if roles is None else roles
        names = ", ".join(r for r in roles if r != "...")
        more = " [, more negatives ...]" if "..." in roles else ""
        label = {"float": " + a score", "int": " + a class id", None: ""}[cls.label]
        if cls.label_meaning:
            label = f" + {cls.label_meaning}"
        return f"{cls.name} takes ({names}{more}){label} per example"

    def prepare(
        self,
        data: Any,
        text_columns: Sequence[str] | None = None,
        label_column: str | None = None,
    ) -> Examples:
        """Check the user's data and turn it into :class:`Examples` of this objective's shape."""
        fixed = [r for r in self.roles if r != "..."]
        return to_examples(
            data,
            label=self.label,
            num_texts=self.num_texts,
            min_texts=len(fixed),
            text_columns=text_columns,
            label_column=label_column,
            label_names=self.label_names,
            what=self.describe_inputs(self.roles),
        )

    def check_model(self, model: nn.Module) -> None:
        """Refuse a model this objective cannot train (a message says what to use instead)."""
        if isinstance(model, CrossEncoder):
            raise TypeError(
                f"the {self.name} loss trains a bi-encoder (SentenceEncoder) on embeddings; a "
                "CrossEncoder has none. Train it with a cross-encoder loss: "
                + ", ".join(n for n, c in OBJECTIVES.items() if c.model_kind == "cross-encoder")
            )

    def lengths(self, model: nn.Module, examples: Examples) -> np.ndarray:
        """Per example, the token count the trainer's smart batching sorts by: here the longest
        of its texts, each being its own input (:func:`token_lengths`)."""
        return token_lengths(model, examples)

    def loss(
        self,
        encoder: SentenceEncoder,
        rows: Sequence[Sequence[str]],
        labels: Tensor | None,
        bucket: Bucket = None,
    ) -> Tensor:
        """Encode a batch of examples (one forward pass, widths rounded up with ``bucket``:
        :func:`embed_rows`) and return the scalar loss.

        Under ``torchrun``, objectives with in-batch negatives gather the embeddings of every
        process first (``sbert_tutor.training.distributed.gather_with_grad``), so the negatives are the
        whole global batch and the loss equals the single-process loss on it.
        """
        embeddings = embed_rows(encoder, rows, bucket)
        if self.in_batch_negatives:
            embeddings = gather_with_grad(embeddings)
            labels = None if labels is None else gather_with_grad(labels)
        return self(embeddings, labels)

    def loss_and_backward(
        self,
        encoder: SentenceEncoder,
        rows: Sequence[Sequence[str]],
        labels: Tensor | None,
        bucket: Bucket = None,
        scale: Callable[[Tensor], Tensor] | None = None,
    ) -> Tensor:
        """The loss of a batch (detached) after adding its gradient to every parameter's ``.grad``.

        The trainer calls this for objectives with :attr:`owns_backward`; by default it is
        :meth:`loss` followed by ``backward``. ``scale`` multiplies the loss before the backward
        pass (the fp16 gradient scaler's ``scale``; ``None``: 1), so gradients come out scaled as
        the scaler expects.
        """
        loss = self.loss(encoder, rows, labels, bucket)
        (loss if scale is None else scale(loss)).backward()
        return loss.detach()

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        """The loss from embeddings ``[B, k, d]`` (and labels ``[B]``)."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """The hyper-parameters (recorded in the training log)."""
        return {"name": self.name}


#: name -> objective class, in registration order: the CLI, ``fit`` and the named training
#: sets read it. Add to it with :func:`register_objective`.
OBJECTIVES: dict[str, type[Objective]] = {}


def _check_in_range(examples: Examples, score_range: tuple[float, float], what: str) -> None:
    """An :class:`~sbert_tutor.validation.OptionError` naming the first label outside
    ``score_range`` (inclusive) and suggesting the range of the data's own labels."""
    lo, hi = score_range
    outside = (examples.labels < lo) | (examples.labels > hi)
    if outside.any():
        i = int(outside.argmax())
        low, high = float(np.floor(examples.labels.min())), float(np.ceil(examples.labels.max()))
        raise OptionError(
            f"{examples.place(i)}: {what} {examples.labels[i]:g} is outside the score range ({lo:g}, {hi:g}); pass the scale of your "
            f"{what}s, e.g. {{score_range}}",
            {"score_range": (_number(low), _number(high))},
        )


def _number(value: float) -> float | int:
    """``5.0`` as ``5`` (for the examples in messages), other values as they are."""
    return int(value) if float(value).is_integer() else value


def register_objective(cls: type[Objective]) -> type[Objective]:
    """Register an :class:`Objective` subclass under its ``name`` (usable as a class decorator).

    Raises:
        ValueError: the name is taken by another class.
    """
    known = OBJECTIVES.get(cls.name)
    if known is not None and known is not cls:
        raise ValueError(f"the loss name {cls.name!r} is taken by {known.__qualname__}")
    OBJECTIVES[cls.name] = cls
    return cls


def objective_class(name: str) -> type[Objective]:
    """The registered class of a loss name, or a ``ValueError`` listing the names."""
    return OBJECTIVES[check_choice(name, tuple(OBJECTIVES), "loss")]


def make_objective(
    name: str, embedding_dim: int | None = None, options: Mapping[str, Any] | None = None
) -> Objective:
    """Build an objective by name from its ``options`` (as :func:`~sbert_tutor.training.recipe.fit`'s
    ``objective_options``); ``softmax`` needs ``embedding_dim`` (``encoder.embedding_dim``).

    Example:
        >>> make_objective("mnrl", options={"scale": 20.0}).settings()
        {'name': 'mnrl', 'scale': 20.0, 'symmetric': False}
    """
    return objective_class(name).create(embedding_dim, options)


@register_objective
class CosineObjective(Objective):
    r"""SBERT regression: :math:`(\cos(u, v) - \hat y)^2` with scores rescaled from ``score_range``."""

    name = "cosine"
    label = "float"
    reads_scores = True
    roles = ("sentence1", "sentence2")

    def __init__(self, score_range: tuple[float, float] = (0.0, 5.0)) -> None:
        super().__init__()
        self.score_range = (float(score_range[0]), float(score_range[1]))
        if not self.score_range[1] > self.score_range[0]:
            raise ValueError(f"score_range must be (low, high) with low < high, got {score_range}")

    @classmethod
    def options_from_data(cls, data: Any, options: Mapping[str, Any]) -> dict[str, Any]:
        """The data's own score scale (``data.score_range``, e.g. STS's 0-5) unless given."""
        out = dict(options)
        if out.get("score_range") is None:
            scale = getattr(data, "score_range", None)
            if scale is None:
                raise OptionError(
                    "say which scale the scores are on, e.g. {score_range} for STS's 0-5 "
                    "(0 and 1 for scores in [0, 1])",
                    {"score_range": (0, 5)},
                )
            out["score_range"] = tuple(scale)
        return out

    def prepare(
        self,
        data: Any,
        text_columns: Sequence[str] | None = None,
        label_column: str | None = None,
    ) -> Examples:
        """As :meth:`Objective.prepare`, and every score must lie in ``score_range``."""
        examples = super().prepare(data, text_columns, label_column)
        _check_in_range(examples, self.score_range, "score")
        return examples

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return cosine_regression(embeddings[:, 0], embeddings[:, 1], labels, self.score_range)

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "score_range": list(self.score_range)}


@register_objective
class SoftmaxObjective(Objective):
    r"""SBERT classification: softmax over :math:`W [u; v; |u - v|]`; owns the trainable head.

    String labels are mapped through ``label_names`` (default: NLI's entailment, neutral,
    contradiction = 0, 1, 2). On NLI: every labelled pair.
    """

    name = "softmax"
    label = "int"
    roles = ("premise", "hypothesis")
    nli_shape = staticmethod(nli_data.labelled_pairs)

    def __init__(
        self,
        embedding_dim: int,
        num_labels: int | None = None,
        features: Sequence[str] = DEFAULT_FEATURES,
        label_names: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        if label_names is None and num_labels in (None, len(NLI_LABELS)):
            label_names = NLI_LABELS
        if num_labels is None:
            num_labels = len(label_names)
        if label_names is not None and len(label_names) != num_labels:
            raise ValueError(
                f"num_labels={num_labels} but {len(label_names)} label_names {list(label_names)}"
            )
        self.label_names = tuple(label_names) if label_names is not None else None
        self.classifier = SoftmaxClassifier(embedding_dim, num_labels, features)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        head = self.classifier
        return softmax_classification(
            embeddings[:, 0], embeddings[:, 1], labels, head, head.features
        )

    def settings(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "num_labels": self.classifier.num_labels,
            "features": list(self.classifier.features),
            "label_names": list(self.label_names or ()),
        }


@register_objective
class TripletObjective(Objective):
    r"""SBERT triplet: :math:`\max(\delta(a, p) - \delta(a, n) + \varepsilon, 0)`.

    The default margin :math:`\varepsilon = 1` with Euclidean distance is the SBERT paper's
    (:data:`~sbert_tutor.losses.TRIPLET_MARGIN`). On NLI: (premise, entailment, contradiction).
    """

    name = "triplet"
    roles = ("anchor", "positive", "negative")
    nli_shape = staticmethod(nli_data.nli_triplets)

    def __init__(self, distance: str = "euclidean", margin: float = TRIPLET_MARGIN) -> None:
        super().__init__()
        self.distance = distance
        self.margin = float(margin)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return triplet(
            embeddings[:, 0], embeddings[:, 1], embeddings[:, 2], self.distance, self.margin
        )

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "distance": self.distance, "margin": self.margin}


@register_objective
class MNRLObjective(Objective):
    """Multiple negatives ranking: other examples' positives (and all hard negatives) are negatives.

    Examples are ``(anchor, positive)`` or ``(anchor, positive, negative_1, ...)``. On NLI:
    (premise, entailment) pairs, or with ``hard_negatives=True`` (premise, entailment,
    contradiction) triplets; for your own data its columns decide.
    """

    name = "mnrl"
    in_batch_negatives = True
    roles = ("anchor", "positive", "...")

    def __init__(
        self, scale: float = 20.0, symmetric: bool = False, hard_negatives: bool = False
    ) -> None:
        super().__init__()
        self.scale = float(scale)
        self.symmetric = bool(symmetric)
        self.hard_negatives = bool(hard_negatives)

    @classmethod
    def shape_nli(
        cls, nli: NLIData, seed: int = 0, options: Mapping[str, Any] | None = None
    ) -> DataTable:
        if (options or {}).get("hard_negatives"):
            return nli_data.nli_triplets(nli)
        return nli_data.entailment_pairs(nli)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        negatives = embeddings[:, 2:] if embeddings.shape[1] > 2 else None
        return multiple_negatives_ranking(
            embeddings[:, 0], embeddings[:, 1], negatives, self.scale, self.symmetric
        )

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "scale": self.scale, "symmetric": self.symmetric}


@register_objective
class MatryoshkaMNRLObjective(MNRLObjective):
    """MNRL at several embedding prefixes (:func:`~sbert_tutor.losses.matryoshka_loss`):
    sentence-transformers' ``MatryoshkaLoss(model, MultipleNegativesRankingLoss(model), dims,
    weights, n_dims_per_step)``. Examples and options as ``mnrl``, plus ``dims`` (the prefix
    lengths; default the model's dimension :math:`d` and :math:`d/2, d/4, d/8, d/16`),
    ``weights`` (default 1 each) and ``n_dims_per_step`` (``-1``: every dimension every step)."""

    name = "matryoshka_mnrl"

    def __init__(
        self,
        embedding_dim: int,
        scale: float = 20.0,
        symmetric: bool = False,
        hard_negatives: bool = False,
        dims: Sequence[int] | None = None,
        weights: Sequence[float] | None = None,
        n_dims_per_step: int = -1,
    ) -> None:
        super().__init__(scale, symmetric, hard_negatives)
        if dims is None:
            dims = [embedding_dim // 2**i for i in range(5) if embedding_dim // 2**i > 0]
        self.dims, self.weights = check_matryoshka_dims(dims, weights)
        if max(self.dims) > embedding_dim:
            raise ValueError(
                f"Matryoshka dims {list(self.dims)} exceed the model's {embedding_dim} dimensions"
            )
        self.n_dims_per_step = int(n_dims_per_step)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return matryoshka_loss(
            super().forward, (embeddings,), self.dims, self.weights, self.n_dims_per_step
        )

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "name": self.name,
            "dims": list(self.dims),
            "weights": list(self.weights),
            "n_dims_per_step": self.n_dims_per_step,
        }


@register_objective
class CachedMNRLObjective(MNRLObjective):
    r"""MNRL with a gradient cache (GradCache): the loss and the parameter update of ``mnrl`` on
    a batch of any size, with activation memory that grows with ``mini_batch_size`` texts.

    In-batch negatives tie every example to every other, so a batch cannot be cut into pieces
    whose gradients add up (gradient accumulation gives each piece only its own negatives). The
    chain rule cuts it at the embeddings instead. With :math:`e_j = f_\theta(x_j)` the
    embeddings of the batch's texts and :math:`\mathcal{L}(e_1, \dots, e_M)` the MNRL loss,

    .. math::

        \frac{\partial \mathcal{L}}{\partial \theta}
            = \sum_{j=1}^{M} \Bigl(\frac{\partial \mathcal{L}}{\partial e_j}\Bigr)^{\top}
              \frac{\partial e_j}{\partial \theta}
            = \frac{\partial}{\partial \theta} \sum_{j=1}^{M} g_j^{\top} f_\theta(x_j),

        g_j = \frac{\partial \mathcal{L}}{\partial e_j} \text{ held fixed.}

    So one step is (:meth:`loss_and_backward`):

    1. embed all texts **without** a graph, ``mini_batch_size`` texts at a time;
    2. compute :math:`\mathcal{L}` on those embeddings (detached, ``requires_grad``) and
       back-propagate to them: the cache :math:`g_j` (a ``[M, d]`` tensor, no activations);
    3. embed each mini-batch again **with** a graph and back-propagate the surrogate
       :math:`\sum_j g_j^{\top} e_j` of that mini-batch; its graph is freed before the next.

    The gradients add up to :math:`\partial \mathcal{L} / \partial \theta` exactly. The second pass
    of a mini-batch replays the random state of its first pass, so dropout draws the same masks
    in both (the masks differ from ``mnrl``'s one pass over the whole batch; with dropout off
    the two objectives agree to float rounding). Under ``torchrun`` the first pass's embeddings
    of every process are gathered, each process keeps the cache rows of its own texts, and the
    trainer sums the parameter gradients over processes.

    Options as ``mnrl`` plus ``mini_batch_size`` (texts per forward pass; sentence-transformers'
    name). The cost is a second forward pass.

    Reference:
        Gao, Zhang, Han and Callan (2021), "Scaling Deep Contrastive Learning Batch Size under
        Memory Limited Setup" (GradCache); sentence-transformers'
        ``CachedMultipleNegativesRankingLoss``.
    """

    name = "cached_mnrl"
    owns_backward = True

    def __init__(
        self,
        scale: float = 20.0,
        symmetric: bool = False,
        hard_negatives: bool = False,
        mini_batch_size: int = 32,
    ) -> None:
        super().__init__(scale, symmetric, hard_negatives)
        if isinstance(mini_batch_size, bool) or int(mini_batch_size) != mini_batch_size:
            raise ValueError(f"mini_batch_size must be an integer >= 1, got {mini_batch_size!r}")
        if mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be an integer >= 1, got {mini_batch_size!r}")
        self.mini_batch_size = int(mini_batch_size)

    def _chunks(self, rows: Sequence[Sequence[str]]) -> list[list[str]]:
        flat = [text for row in rows for text in row]
        size = self.mini_batch_size
        return [flat[start : start + size] for start in range(0, len(flat), size)]

    def loss(
        self,
        encoder: SentenceEncoder,
        rows: Sequence[Sequence[str]],
        labels: Tensor | None,
        bucket: Bucket = None,
    ) -> Tensor:
        """The loss of a batch embedded ``mini_batch_size`` texts at a time, without a graph (for
        evaluation; training calls :meth:`loss_and_backward`)."""
        with torch.no_grad():
            pieces = [embed_texts(encoder, chunk, bucket) for chunk in self._chunks(rows)]
            local = torch.cat(pieces).view(len(rows), len(rows[0]), -1)
            return self(gather_with_grad(local), labels)

    def loss_and_backward(
        self,
        encoder: SentenceEncoder,
        rows: Sequence[Sequence[str]],
        labels: Tensor | None,
        bucket: Bucket = None,
        scale: Callable[[Tensor], Tensor] | None = None,
    ) -> Tensor:
        """One GradCache step (steps 1-3 above); returns the loss, detached."""
        chunks = self._chunks(rows)
        states = []
        with torch.no_grad():  # 1. embeddings without activations
            pieces = []
            for chunk in chunks:
                states.append(rng_state())
                pieces.append(embed_texts(encoder, chunk, bucket))
        local = torch.cat(pieces).view(len(rows), len(rows[0]), -1)
        # 2. the loss on the (gathered) embeddings and its gradient there: the cache
        everything = gather_with_grad(local).detach().requires_grad_()
        loss = self(everything, labels)
        with full_precision(encoder.device):
            (loss if scale is None else scale(loss)).backward()
        start = distributed.rank() * len(rows)
        cache = everything.grad[start : start + len(rows)].reshape(-1, everything.shape[-1])
        after = rng_state()
        # 3. each mini-batch again, with its graph, back-propagating sum_j g_j . e_j
        offset = 0
        for chunk, state in zip(chunks, states, strict=True):
            set_rng_state(state)  # the dropout masks of the first pass
            emb = embed_texts(encoder, chunk, bucket)
            grad = cache[offset : offset + len(chunk)]
            offset += len(chunk)
            with full_precision(encoder.device):
                (emb * grad.to(emb.dtype)).sum().backward()
        set_rng_state(after)
        return loss.detach()

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "name": self.name, "mini_batch_size": self.mini_batch_size}


@register_objective
class SupMPNObjective(Objective):
    """SupMPN: each anchor with ``P`` positives and ``Q`` negatives; the batch supplies the rest.

    Examples are ``(anchor, positive_1..P, negative_1..Q)``; on NLI,
    :func:`sbert_tutor.data.supmpn_groups` builds them.
    """

    name = "supmpn"
    in_batch_negatives = True

    def __init__(self, num_positives: int = 2, num_negatives: int = 2, temperature: float = 0.05):
        super().__init__()
        if int(num_positives) != num_positives or num_positives < 1:
            raise ValueError(f"num_positives must be an integer >= 1, got {num_positives!r}")
        if int(num_negatives) != num_negatives or num_negatives < 0:
            raise ValueError(f"num_negatives must be an integer >= 0, got {num_negatives!r}")
        self.num_positives = int(num_positives)
        self.num_negatives = int(num_negatives)
        self.temperature = float(temperature)
        self.roles = (
            "anchor",
            *(f"positive_{i + 1}" for i in range(self.num_positives)),
            *(f"negative_{i + 1}" for i in range(self.num_negatives)),
        )

    @classmethod
    def shape_nli(
        cls, nli: NLIData, seed: int = 0, options: Mapping[str, Any] | None = None
    ) -> DataTable:
        shape = {**cls.option_defaults(), **(options or {})}
        return nli_data.supmpn_groups(nli, shape["num_positives"], shape["num_negatives"], seed)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        p = self.num_positives
        return supmpn(
            embeddings[:, 0], embeddings[:, 1 : 1 + p], embeddings[:, 1 + p :], self.temperature
        )

    def settings(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "num_positives": self.num_positives,
            "num_negatives": self.num_negatives,
            "temperature": self.temperature,
        }


@register_objective
class CEScoreObjective(Objective):
    """Regress the bi-encoder similarity onto a cross-encoder teacher's logits (the Siamese
    objective of Rygaard et al., n.d., "Distance Dilemma")."""

    name = "ce_score"
    label = "float"
    label_meaning = "a cross-encoder's logit for the pair (the label)"
    roles = ("query", "document")

    def __init__(self, similarity: str = "cosine") -> None:
        super().__init__()
        self.similarity = similarity

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return ce_score_regression(embeddings[:, 0], embeddings[:, 1], labels, self.similarity)

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "similarity": self.similarity}


@register_objective
class MarginMSEObjective(Objective):
    r"""Distillation from a cross-encoder (Margin-MSE, Hofstätter et al., 2020): the student's
    margin :math:`s(q, p^+) - s(q, p^-)` regressed onto the teacher's margin, the label
    (:func:`~sbert_tutor.losses.margin_mse`):

    .. math::

        \mathcal{L} = \frac{1}{N} \sum_{i=1}^{N}
            \Bigl(\bigl(s(q_i, p_i^+) - s(q_i, p_i^-)\bigr) - m_i\Bigr)^2

    Examples are ``(query, positive, negative)`` with the teacher's margin
    :math:`m_i = t(q_i, p_i^+) - t(q_i, p_i^-)` as the label, computed once before training
    (:func:`sbert_tutor.training.hard_negatives.teacher_margins`, a cross-encoder's logits).
    ``similarity``: the student's score :math:`s`, ``"dot"`` (the paper's and
    sentence-transformers' ``MarginMSELoss`` default) or ``"cosine"``.
    """

    name = "margin_mse"
    label = "float"
    label_meaning = "the teacher's margin t(q, p+) - t(q, p-) (the label)"
    roles = ("query", "positive", "negative")

    def __init__(self, similarity: str = "dot") -> None:
        super().__init__()
        self.similarity = check_choice(similarity, MARGIN_SIMILARITIES, "similarity")

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return margin_mse(
            embeddings[:, 0], embeddings[:, 1], embeddings[:, 2], labels, self.similarity
        )

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "similarity": self.similarity}


@register_objective
class ContrastiveObjective(Objective):
    """In-batch contrastive loss (MNRL without hard negatives, written with a temperature).

    On NLI: (premise, entailment) pairs.
    """

    name = "contrastive"
    in_batch_negatives = True
    roles = ("sentence", "positive")
    nli_shape = staticmethod(nli_data.entailment_pairs)

    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        self.temperature = float(temperature)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return in_batch_contrastive(embeddings[:, 0], embeddings[:, 1], self.temperature)

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "temperature": self.temperature}


class CrossEncoderObjective(Objective):
    """Base of the cross-encoder losses: ``(text1, text2)`` + a label per example; the model is a
    :class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder` with one output, whose logit for the joined
    pair goes to :meth:`forward`. Trains on the STS sets (scores rescaled from their scale) or on
    your own labelled pairs."""

    model_kind = "cross-encoder"
    label = "float"
    reads_scores = True
    roles = ("text1", "text2")

    def __init__(self, score_range: tuple[float, float] | None = None) -> None:
        super().__init__()
        if score_range is not None:
            lo, hi = float(score_range[0]), float(score_range[1])
            if not hi > lo:
                raise ValueError(
                    f"score_range must be (low, high) with low < high, got {score_range}"
                )
            score_range = (lo, hi)
        self.score_range = score_range

    @classmethod
    def options_from_data(cls, data: Any, options: Mapping[str, Any]) -> dict[str, Any]:
        """The data's own score scale (``data.score_range``, e.g. STS's 0-5) unless given."""
        out = dict(options)
        scale = getattr(data, "score_range", None)
        if out.get("score_range") is None and scale is not None:
            out["score_range"] = tuple(scale)
        return out

    def check_model(self, model: nn.Module) -> None:
        if not isinstance(model, CrossEncoder):
            raise TypeError(
                f"the {self.name} loss trains a CrossEncoder, got {type(model).__name__}; load "
                "one with CrossEncoder.from_pretrained(...) (fit does this for a model name)"
            )
        if model.num_labels != 1:
            raise ValueError(
                f"the {self.name} loss needs one logit a pair, but the model has "
                f"num_labels={model.num_labels}; load it with num_labels=1"
            )

    def lengths(self, model: nn.Module, examples: Examples) -> np.ndarray:
        """Per example, the token count of the pair as one input (:func:`pair_lengths`)."""
        return pair_lengths(model, examples)

    def prepare(
        self,
        data: Any,
        text_columns: Sequence[str] | None = None,
        label_column: str | None = None,
    ) -> Examples:
        """As :meth:`Objective.prepare`, and with a ``score_range`` every label must lie in it."""
        examples = super().prepare(data, text_columns, label_column)
        if self.score_range is not None:
            _check_in_range(examples, self.score_range, "label")
        return examples

    def loss(
        self,
        encoder: CrossEncoder,
        rows: Sequence[Sequence[str]],
        labels: Tensor | None,
        bucket: Bucket = None,
    ) -> Tensor:
        """The logits of the batch's pairs (one forward pass, :func:`score_rows`), in fp32, and
        the loss on them."""
        return self(score_rows(encoder, rows, bucket).float(), labels)


@register_objective
class CrossEncoderBCEObjective(CrossEncoderObjective):
    """Binary cross-entropy on the pair's logit (sentence-transformers' ``BinaryCrossEntropyLoss``):
    0/1 relevance labels, or similarity scores rescaled from ``score_range`` to [0, 1] (default:
    the data's scale, else (0, 1))."""

    name = "ce_bce"
    label_meaning = "a 0/1 label or a score (the label)"

    def __init__(
        self, score_range: tuple[float, float] | None = None, pos_weight: float | None = None
    ) -> None:
        super().__init__(score_range if score_range is not None else (0.0, 1.0))
        self.pos_weight = None if pos_weight is None else float(pos_weight)

    def forward(self, logits: Tensor, labels: Tensor | None = None) -> Tensor:
        return cross_encoder_bce(logits, labels, self.score_range, self.pos_weight)

    def settings(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "score_range": list(self.score_range),
            "pos_weight": self.pos_weight,
        }


@register_objective
class CrossEncoderMSEObjective(CrossEncoderObjective):
    """Mean squared error between the activated logit and the score (sentence-transformers'
    ``MSELoss``): ``activation="identity"`` regresses the logit itself (e.g. onto a teacher's
    logits), ``"sigmoid"`` the predicted score. Scores are rescaled from ``score_range`` to
    [0, 1] when there is one (the data's scale, e.g. STS), else used as given."""

    name = "ce_mse"
    label_meaning = "a score (the label)"

    def __init__(
        self, score_range: tuple[float, float] | None = None, activation: str = "identity"
    ) -> None:
        super().__init__(score_range)
        if activation not in CE_ACTIVATIONS:
            raise ValueError(f"activation must be one of {CE_ACTIVATIONS}, got {activation!r}")
        self.activation = activation

    def forward(self, logits: Tensor, labels: Tensor | None = None) -> Tensor:
        return cross_encoder_mse(logits, labels, self.score_range, self.activation)

    def settings(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "score_range": None if self.score_range is None else list(self.score_range),
            "activation": self.activation,
        }


def label_tensor(labels: Any, kind: str | None) -> Tensor | None:
    """Labels of a batch as a tensor (``float32`` scores or ``int64`` ids)."""
    if kind is None or labels is None:
        return None
    return torch.as_tensor(labels, dtype=torch.float32 if kind == "float" else torch.long)
