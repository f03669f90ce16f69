r"""Ranking (contrastive, InfoNCE-style) objectives with in-batch negatives.

All three losses score an anchor against a set of candidates with a scaled cosine similarity and
apply a softmax cross-entropy whose target is the anchor's own positive:

* :func:`multiple_negatives_ranking` -- MNRL / InfoNCE, optional hard negatives, optional
  symmetric (positive -> anchor) term;
* :func:`supmpn` -- several positives and several negatives per anchor (SupMPN);
* :func:`in_batch_contrastive` -- the plain in-batch objective (no hard negatives).

``scale`` and ``temperature`` are two names for one knob: :math:`s = 1 / \tau`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from sbert_tutor.losses.checks import check_grouped, check_same_2d, check_tensor, shape_of

__all__ = [
    "flat_negatives",
    "in_batch_contrastive",
    "multiple_negatives_ranking",
    "supmpn",
    "tensor_cosine_matrix",
]


def tensor_cosine_matrix(x: Tensor, y: Tensor) -> Tensor:
    r"""All-pairs cosine similarity of torch tensors, :math:`C_{ij} = \cos(x_i, y_j)`,
    differentiable (the losses'); NumPy arrays: :func:`sbert_tutor.similarity.cosine_matrix`.

    Inputs:
        ``x``: ``[N, d]``, ``y``: ``[M, d]``. Returns ``[N, M]``.

    Example:
        >>> x, y = torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 0.0], [0.0, 3.0]])
        >>> tensor_cosine_matrix(x, y)
        tensor([[1., 0.]])
    """
    return F.normalize(x, dim=-1) @ F.normalize(y, dim=-1).T


def _diagonal_cross_entropy(logits: Tensor) -> Tensor:
    r"""Softmax cross-entropy of ``[N, K]`` logits (``K >= N``) whose target for row ``i`` is
    column ``i``: :math:`\frac{1}{N} \sum_i \bigl(\log \sum_j e^{s_{ij}} - s_{ii}\bigr)`."""
    return (torch.logsumexp(logits, dim=1) - torch.diagonal(logits)).mean()


def flat_negatives(negatives: Tensor, n: int, d: int) -> Tensor:
    """Check hard negatives (``[M, d]``, or ``[N, Q, d]``: ``Q`` for each of ``n`` anchors) and
    return them as one ``[M, d]`` pool (``M = N Q`` for the grouped shape, anchor by anchor), the
    columns :func:`multiple_negatives_ranking` appends after the ``n`` positives."""
    if isinstance(negatives, Tensor) and negatives.dim() == 3:
        check_grouped("negatives", negatives, n, d, "Q")
        return negatives.reshape(-1, d)
    if isinstance(negatives, Tensor) and negatives.dim() != 2:
        raise ValueError(
            f"negatives must be 2-D [M, d] or 3-D [N, Q, d], got shape {shape_of(negatives)}."
        )
    check_tensor("negatives", negatives, 2, "[M, d] or [N, Q, d]")
    if negatives.shape[1] != d:
        raise ValueError(
            f"negatives must have shape [M, d] or [N, Q, d] with d = {d}, got {shape_of(negatives)}."
        )
    return negatives


def _check_positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}.")


def multiple_negatives_ranking(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor | None = None,
    scale: float = 20.0,
    symmetric: bool = False,
) -> Tensor:
    r"""Multiple Negatives Ranking Loss (InfoNCE with in-batch negatives).

    The candidates :math:`c_1, \dots, c_K` are all :math:`N` positives followed by every hard
    negative in the batch (all of them, shared by every anchor). With scale :math:`s`:

    .. math::

        \mathcal{L}_{a \to p} = -\frac{1}{N} \sum_{i=1}^{N}
            \log \frac{\exp\bigl(s \cos(a_i, p_i)\bigr)}
                      {\sum_{j=1}^{K} \exp\bigl(s \cos(a_i, c_j)\bigr)}

    i.e. a :math:`K`-way softmax cross-entropy over the logits :math:`s \cos(a_i, c_j)` whose
    target for row :math:`i` is column :math:`i`. With ``symmetric=True`` the positive -> anchor
    direction (over the anchors only, no hard negatives) is added and the two are averaged:

    .. math::

        \mathcal{L}_{p \to a} &= -\frac{1}{N} \sum_{i=1}^{N}
            \log \frac{\exp\bigl(s \cos(p_i, a_i)\bigr)}{\sum_{j=1}^{N} \exp\bigl(s \cos(p_i, a_j)\bigr)},
        \\
        \mathcal{L} &= \tfrac{1}{2}\bigl(\mathcal{L}_{a \to p} + \mathcal{L}_{p \to a}\bigr)

    Args:
        anchors: Anchor (query) embeddings :math:`a_i`.
        positives: Positive embeddings :math:`p_i`, one per anchor.
        negatives: Optional hard negatives: ``[M, d]`` (a pool shared by the whole batch) or
            ``[N, Q, d]`` (``Q`` per anchor; all ``N * Q`` are shared by the whole batch, as in
            sentence-transformers).
        scale: :math:`s = 1 / \tau` (20 means temperature 0.05).
        symmetric: Add the positive -> anchor term (sentence-transformers'
            ``MultipleNegativesSymmetricRankingLoss``).

    Returns:
        Scalar loss (mean over the batch).

    Inputs:
        ``anchors``, ``positives``: ``[N, d]``; ``negatives``: ``None``, ``[M, d]`` or ``[N, Q, d]``.

    Raises:
        ValueError: shape mismatch or ``scale <= 0``.

    Reference:
        Henderson et al. (2017), "Efficient Natural Language Response Suggestion for Smart Reply";
        van den Oord et al. (2018), "Representation Learning with Contrastive Predictive Coding".

    Example:
        >>> a = torch.eye(3)
        >>> float(multiple_negatives_ranking(a, a)) < 1e-6  # own positive wins by far (scale 20)
        True
        >>> multiple_negatives_ranking(a, a, scale=1.0)  # -log(e / (e + 2))
        tensor(0.5514)
    """
    n, d = check_same_2d({"anchors": anchors, "positives": positives})
    _check_positive("scale", scale)
    candidates = positives
    if negatives is not None:
        candidates = torch.cat([positives, flat_negatives(negatives, n, d)], dim=0)
    loss = _diagonal_cross_entropy(scale * tensor_cosine_matrix(anchors, candidates))
    if symmetric:
        loss = (
            loss + _diagonal_cross_entropy(scale * tensor_cosine_matrix(positives, anchors))
        ) / 2
    return loss


def supmpn(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor,
    temperature: float = 0.05,
) -> Tensor:
    r"""SupMPN: Supervised Multiple Positives and Negatives ranking loss (eq. 7 of the paper).

    Each anchor :math:`a_i` has :math:`P` positives :math:`p_{ik}` and :math:`Q` negatives
    :math:`n_{iq}`. Write :math:`e(x, y) = \exp(\cos(x, y) / \tau)`. Then

    .. math::

        \mathcal{L} &= -\frac{1}{N} \sum_{i=1}^{N} \frac{1}{P} \sum_{k=1}^{P}
            \log \frac{e(a_i, p_{ik})}{D_{ik}}, \\
        D_{ik} &= e(a_i, p_{ik}) + \sum_{j \ne i} \sum_{m=1}^{P} e(a_i, p_{jm})
            + \sum_{j=1}^{N} \sum_{q=1}^{Q} e(a_i, n_{jq})

    The anchor's *own* other positives (:math:`m \ne k`) are not in the denominator: each positive
    competes only with the other anchors' positives and with every negative in the batch. With
    :math:`P = 1` this is :func:`multiple_negatives_ranking` with ``scale = 1 / temperature``.

    Args:
        anchors: Anchor embeddings :math:`a_i`.
        positives: :math:`P` positives per anchor, :math:`p_{ik}`.
        negatives: :math:`Q` hard negatives per anchor, :math:`n_{iq}` (``Q`` may be 0).
        temperature: :math:`\tau` (0.05 means scale 20).

    Returns:
        Scalar loss (mean over anchors and their positives).

    Inputs:
        ``anchors``: ``[N, d]``; ``positives``: ``[N, P, d]``; ``negatives``: ``[N, Q, d]``.

    Raises:
        ValueError: shape mismatch or ``temperature <= 0``.

    Reference:
        Dehghan & Amasyali (2022), "SupMPN: Supervised Multiple Positives and Negatives Contrastive
        Learning Model for Semantic Textual Similarity", Applied Sciences 12(19):9659, eq. 7.

    Example:
        >>> a = torch.eye(2)
        >>> p = torch.eye(2).unsqueeze(1).repeat(1, 2, 1)  # two positives, both equal to the anchor
        >>> n = -torch.eye(2).unsqueeze(1)  # one negative each, opposite to the anchor
        >>> # denominator: own positive e^1, other anchor's two positives 2 e^0, negatives e^-1 + e^0
        >>> supmpn(a, p, n, temperature=1.0)  # -log(e / (e + 3 + e^-1))
        tensor(0.8060)
    """
    n, d = check_same_2d({"anchors": anchors})
    check_grouped("positives", positives, n, d, "P")
    check_grouped("negatives", negatives, n, d, "Q")
    if positives.shape[1] == 0:
        raise ValueError(
            "positives must hold at least one positive per anchor (P >= 1), got P = 0."
        )
    _check_positive("temperature", temperature)
    num_pos = positives.shape[1]
    # pos_logits[i, j, m] = cos(a_i, p_jm) / tau, shape [N, N, P]
    pos_logits = (
        tensor_cosine_matrix(anchors, positives.reshape(-1, d)).view(n, n, num_pos) / temperature
    )
    own = torch.diagonal(pos_logits, dim1=0, dim2=1).T  # own[i, k] = cos(a_i, p_ik) / tau, [N, P]
    own_mask = torch.eye(n, dtype=torch.bool, device=anchors.device).unsqueeze(-1)
    others = pos_logits.masked_fill(own_mask, float("-inf")).reshape(n, n * num_pos)
    neg_logits = tensor_cosine_matrix(anchors, negatives.reshape(-1, d)) / temperature  # [N, N*Q]
    shared = torch.logsumexp(torch.cat([others, neg_logits], dim=1), dim=1)  # [N]
    # -log(e^own / (e^own + e^shared)) for every (i, k)
    return (torch.logaddexp(own, shared.unsqueeze(1)) - own).mean()


def in_batch_contrastive(h: Tensor, h_plus: Tensor, temperature: float = 0.05) -> Tensor:
    r"""In-batch contrastive objective of Oh, Kim and Lim (n.d.), "Guidance by Semantic Search for
    Contrastive Learning of Sentence Embeddings" (its eq. 1, with the :math:`-\log` that the
    printed equation omits).

    .. math::

        \ell_i &= -\log \frac{\exp\bigl(\operatorname{sim}(h_i, h_i^{+}) / \tau\bigr)}
                            {\sum_{j=1}^{N} \exp\bigl(\operatorname{sim}(h_i, h_j^{+}) / \tau\bigr)},
        \\
        \mathcal{L} &= \frac{1}{N} \sum_{i=1}^{N} \ell_i,
        \qquad \operatorname{sim} = \cos

    This equals :func:`multiple_negatives_ranking` without hard negatives and with
    ``scale = 1 / temperature``.

    Args:
        h: Sentence embeddings :math:`h_i`.
        h_plus: Their positives :math:`h_i^{+}`.
        temperature: :math:`\tau`.

    Returns:
        Scalar loss (mean over the batch).

    Inputs:
        ``h``, ``h_plus``: ``[N, d]``.

    Raises:
        ValueError: shape mismatch or ``temperature <= 0``.

    Reference:
        Oh, Kim and Lim (n.d.), "Guidance by Semantic Search for Contrastive Learning of
        Sentence Embeddings", eq. 1 (for which it cites SimCLR, Chen et al., 2020); the objective
        is SimCSE's (Gao et al., 2021) supervised loss without hard negatives.

    Example:
        >>> h = torch.eye(3)
        >>> in_batch_contrastive(h, h, temperature=1.0)  # -log(e / (e + 2))
        tensor(0.5514)
    """
    check_same_2d({"h": h, "h_plus": h_plus})
    _check_positive("temperature", temperature)
    log_probs = torch.log_softmax(tensor_cosine_matrix(h, h_plus) / temperature, dim=1)
    return -torch.diagonal(log_probs).mean()
