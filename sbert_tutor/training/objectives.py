r"""Objectives: how a batch of examples becomes one loss, for every loss of :mod:`sbert_tutor.losses`.

An :class:`Objective` knows the *shape* of its examples (how many texts, which label) and the
pure loss function to call. The trainer hands it a batch of ``B`` examples of ``k`` texts each;
:meth:`Objective.loss` encodes all ``B * k`` texts in **one** forward pass of the encoder
(one padded batch, so the Siamese weights are literally shared), reshapes the embeddings to
``[B, k, d]`` and calls :meth:`Objective.forward`:

=================  =====================================  ==========  ==============================
name               texts per example                      label       pure function
=================  =====================================  ==========  ==============================
``cosine``         sentence1, sentence2                   score       :func:`~sbert_tutor.losses.cosine_regression`
``softmax``        premise, hypothesis                    class id    :func:`~sbert_tutor.losses.softmax_classification`
``triplet``        anchor, positive, negative             --          :func:`~sbert_tutor.losses.triplet`
``mnrl``           anchor, positive [, negatives...]      --          :func:`~sbert_tutor.losses.multiple_negatives_ranking`
``supmpn``         anchor, P positives, Q negatives       --          :func:`~sbert_tutor.losses.supmpn`
``ce``             query, document                        CE logit    :func:`~sbert_tutor.losses.ce_score_regression`
``contrastive``    sentence, positive                     --          :func:`~sbert_tutor.losses.in_batch_contrastive`
=================  =====================================  ==========  ==============================

Texts are *not* de-duplicated inside a batch: a text given twice is encoded twice with two
dropout masks, which is what makes "the premise as its own positive" (SupMPN padding, SimCSE) work.
Only the softmax objective has parameters (its classifier head); the trainer optimises them with
the encoder's.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from sbert_tutor.distributed import gather_with_grad
from sbert_tutor.losses import (
    DEFAULT_FEATURES,
    SoftmaxClassifier,
    ce_score_regression,
    cosine_regression,
    in_batch_contrastive,
    multiple_negatives_ranking,
    softmax_classification,
    supmpn,
    triplet,
)
from sbert_tutor.training.examples import Examples, to_examples


def embed_rows(encoder: Any, rows: Sequence[Sequence[str]], bucket: Any = None) -> Tensor:
    """Embed ``B`` examples of ``k`` texts each in one forward pass: ``[B, k, d]`` with gradients.

    Texts are tokenised with the encoder's own settings (strip, lower-casing, truncation to
    ``max_seq_length``) and padded to the longest text of the whole batch, rounded up with
    ``bucket`` (:meth:`SentenceEncoder.collate`; masked padding, the same embeddings in fp32).
    """
    width = len(rows[0])
    flat = [text for row in rows for text in row]
    ids, _ = encoder.token_ids(flat)
    batch = encoder.collate(ids, bucket=bucket)
    device = encoder.device
    emb = encoder(
        input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device)
    )
    return emb.view(len(rows), width, emb.shape[-1])


class Objective(nn.Module):
    """Base class: the shape of the examples an objective reads, and its loss on embeddings.

    Subclasses set :attr:`name`, :attr:`label` (``None``, ``"float"`` or ``"int"``),
    :attr:`in_batch_negatives` (whether other examples of the batch act as negatives, which
    calls for the no-duplicates sampler) and implement :meth:`forward`.
    """

    name: ClassVar[str] = "objective"
    label: ClassVar[str | None] = None
    in_batch_negatives: ClassVar[bool] = False
    #: names of the text positions, for messages (``"..."`` marks "and more").
    roles: tuple[str, ...] = ()
    label_names: tuple[str, ...] | None = None

    @property
    def num_texts(self) -> int | None:
        """Texts per example (``None``: any number >= ``len(roles)``)."""
        return None if "..." in self.roles else len(self.roles)

    def describe_inputs(self) -> str:
        roles = ", ".join(r for r in self.roles if r != "...")
        more = " [, more negatives ...]" if "..." in self.roles else ""
        label = {"float": " + a score", "int": " + a class id", None: ""}[self.label]
        return f"{self.name} takes ({roles}{more}){label} per example"

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
            what=self.describe_inputs(),
        )

    def loss(
        self,
        encoder: Any,
        rows: Sequence[Sequence[str]],
        labels: Tensor | None,
        bucket: Any = None,
    ) -> Tensor:
        """Encode a batch of examples (one forward pass, widths rounded up with ``bucket``:
        :func:`embed_rows`) and return the scalar loss.

        Under ``torchrun``, objectives with in-batch negatives gather the embeddings of every
        process first (:func:`sbert_tutor.distributed.gather_with_grad`), so the negatives are the
        whole global batch and the loss equals the single-process loss on it.
        """
        embeddings = embed_rows(encoder, rows, bucket)
        if self.in_batch_negatives:
            embeddings = gather_with_grad(embeddings)
            labels = None if labels is None else gather_with_grad(labels)
        return self(embeddings, labels)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        """The loss from embeddings ``[B, k, d]`` (and labels ``[B]``)."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """The hyper-parameters (recorded in the training log)."""
        return {"name": self.name}


class CosineObjective(Objective):
    r"""SBERT regression: :math:`(\cos(u, v) - \hat y)^2` with scores rescaled from ``score_range``."""

    name = "cosine"
    label = "float"
    roles = ("sentence1", "sentence2")

    def __init__(self, score_range: tuple[float, float] = (0.0, 5.0)) -> None:
        super().__init__()
        self.score_range = (float(score_range[0]), float(score_range[1]))
        if not self.score_range[1] > self.score_range[0]:
            raise ValueError(f"score_range must be (low, high) with low < high, got {score_range}")

    def prepare(
        self,
        data: Any,
        text_columns: Sequence[str] | None = None,
        label_column: str | None = None,
    ) -> Examples:
        """As :meth:`Objective.prepare`, and every score must lie in ``score_range``."""
        examples = super().prepare(data, text_columns, label_column)
        lo, hi = self.score_range
        outside = (examples.labels < lo) | (examples.labels > hi)
        if outside.any():
            i = int(outside.argmax())
            raise ValueError(
                f"score {examples.labels[i]:g} of example {i} is outside score_range=({lo:g}, "
                f"{hi:g}); pass the scale of your scores, e.g. CosineObjective(score_range=(0, 1))"
            )
        return examples

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return cosine_regression(embeddings[:, 0], embeddings[:, 1], labels, self.score_range)

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "score_range": list(self.score_range)}


class SoftmaxObjective(Objective):
    r"""SBERT classification: softmax over :math:`W [u; v; |u - v|]`; owns the trainable head.

    String labels are mapped through ``label_names`` (default: NLI's entailment, neutral,
    contradiction = 0, 1, 2).
    """

    name = "softmax"
    label = "int"
    roles = ("premise", "hypothesis")

    def __init__(
        self,
        embedding_dim: int,
        num_labels: int | None = None,
        features: Sequence[str] = DEFAULT_FEATURES,
        label_names: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        from sbert_tutor.data.nli import NLI_LABELS

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


class TripletObjective(Objective):
    r"""SBERT triplet: :math:`\max(\delta(a, p) - \delta(a, n) + \varepsilon, 0)`.

    The default margin :math:`\varepsilon = 1` with Euclidean distance is the SBERT paper's.
    """

    name = "triplet"
    roles = ("anchor", "positive", "negative")

    def __init__(self, distance: str = "euclidean", margin: float = 1.0) -> None:
        super().__init__()
        self.distance = distance
        self.margin = float(margin)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return triplet(
            embeddings[:, 0], embeddings[:, 1], embeddings[:, 2], self.distance, self.margin
        )

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "distance": self.distance, "margin": self.margin}


class MNRLObjective(Objective):
    """Multiple negatives ranking: other examples' positives (and all hard negatives) are negatives.

    Examples are ``(anchor, positive)`` or ``(anchor, positive, negative_1, ...)``.
    """

    name = "mnrl"
    in_batch_negatives = True
    roles = ("anchor", "positive", "...")

    def __init__(self, scale: float = 20.0, symmetric: bool = False) -> None:
        super().__init__()
        self.scale = float(scale)
        self.symmetric = bool(symmetric)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        negatives = embeddings[:, 2:] if embeddings.shape[1] > 2 else None
        return multiple_negatives_ranking(
            embeddings[:, 0], embeddings[:, 1], negatives, self.scale, self.symmetric
        )

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "scale": self.scale, "symmetric": self.symmetric}


class SupMPNObjective(Objective):
    """SupMPN: each anchor with ``P`` positives and ``Q`` negatives; the batch supplies the rest.

    Examples are ``(anchor, positive_1..P, negative_1..Q)``, e.g. from
    :func:`sbert_tutor.data.supmpn_groups`.
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


class CEScoreObjective(Objective):
    """Regress the bi-encoder similarity onto a cross-encoder teacher's logits ("Distance Dilemma")."""

    name = "ce"
    label = "float"
    roles = ("query", "document")

    def __init__(self, similarity: str = "cosine") -> None:
        super().__init__()
        self.similarity = similarity

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return ce_score_regression(embeddings[:, 0], embeddings[:, 1], labels, self.similarity)

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "similarity": self.similarity}


class ContrastiveObjective(Objective):
    """In-batch contrastive loss (MNRL without hard negatives, written with a temperature)."""

    name = "contrastive"
    in_batch_negatives = True
    roles = ("sentence", "positive")

    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        self.temperature = float(temperature)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return in_batch_contrastive(embeddings[:, 0], embeddings[:, 1], self.temperature)

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "temperature": self.temperature}


#: name -> objective class; ``make_objective`` builds them by name.
OBJECTIVES: dict[str, type[Objective]] = {
    cls.name: cls
    for cls in (
        CosineObjective,
        SoftmaxObjective,
        TripletObjective,
        MNRLObjective,
        SupMPNObjective,
        CEScoreObjective,
        ContrastiveObjective,
    )
}


def check_objective_name(name: str) -> str:
    """Return ``name`` (lower case) if it names an objective, else a ``ValueError`` listing them."""
    key = str(name).strip().lower()
    if key not in OBJECTIVES:
        close = difflib.get_close_matches(key, OBJECTIVES, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown loss {name!r}; choose one of {', '.join(OBJECTIVES)}.{hint}")
    return key


def make_objective(name: str, embedding_dim: int | None = None, **options: Any) -> Objective:
    """Build an objective by name; ``softmax`` needs ``embedding_dim`` (``encoder.embedding_dim``).

    Example:
        >>> make_objective("mnrl", scale=20.0).settings()
        {'name': 'mnrl', 'scale': 20.0, 'symmetric': False}
    """
    cls = OBJECTIVES[check_objective_name(name)]
    if cls is SoftmaxObjective:
        if embedding_dim is None:
            raise ValueError("the softmax objective needs embedding_dim= (encoder.embedding_dim)")
        return cls(embedding_dim, **options)
    return cls(**options)


def label_tensor(labels: Any, kind: str | None) -> Tensor | None:
    """Labels of a batch as a tensor (``float32`` scores or ``int64`` ids)."""
    if kind is None or labels is None:
        return None
    return torch.as_tensor(labels, dtype=torch.float32 if kind == "float" else torch.long)
