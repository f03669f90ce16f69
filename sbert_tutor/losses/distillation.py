r"""Distillation from a cross-encoder: the bi-encoder learns the teacher's score *margins*.

* :func:`margin_mse` -- Margin-MSE (Hofstätter et al., 2020): the mean squared error between the
  student's margin :math:`s(q, p^+) - s(q, p^-)` and the teacher's margin for the same triplet.

Only the margin is matched, not the scores themselves: a cross-encoder's logits and a
bi-encoder's dot products live on different scales, and the ranking depends only on differences.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from sbert_tutor.losses.checks import check_grouped, check_same_2d, shape_of

__all__ = ["MARGIN_SIMILARITIES", "margin_mse"]

#: The student's score :math:`s(q, p)` of :func:`margin_mse`.
MARGIN_SIMILARITIES = ("dot", "cosine")


def _pair_scores(q: Tensor, p: Tensor, similarity: str) -> Tensor:
    """:math:`s(q_i, p_i)` row by row: ``[N, d]`` x ``[N, d]`` -> ``[N]``."""
    if similarity == "cosine":
        return F.cosine_similarity(q, p, dim=-1)
    return (q * p).sum(dim=-1)


def margin_mse(
    queries: Tensor,
    positives: Tensor,
    negatives: Tensor,
    teacher_margins: Tensor,
    similarity: str = "dot",
) -> Tensor:
    r"""Margin-MSE: regress the student's score margin onto the teacher's.

    For each triplet :math:`(q_i, p_i^+, p_i^-)` with the teacher's margin
    :math:`m_i = t(q_i, p_i^+) - t(q_i, p_i^-)` (e.g. a cross-encoder's logits) and the student's
    score :math:`s` (the dot product by default, as in the paper and sentence-transformers):

    .. math::

        \mathcal{L} = \frac{1}{N} \sum_{i=1}^{N}
            \Bigl(\bigl(s(q_i, p_i^+) - s(q_i, p_i^-)\bigr) - m_i\Bigr)^2

    With :math:`Q` negatives per query (``negatives`` ``[N, Q, d]``, ``teacher_margins``
    ``[N, Q]``) the mean runs over all :math:`N Q` margins
    :math:`s(q_i, p_i^+) - s(q_i, p_{ik}^-)`, as sentence-transformers computes it.

    Args:
        queries: Query embeddings :math:`q_i`.
        positives: Positive passage embeddings :math:`p_i^+`, one per query.
        negatives: Negative passage embeddings :math:`p_i^-`: one per query, or ``Q`` per query.
        teacher_margins: The teacher's margins :math:`m_i` (targets; pass them detached).
        similarity: ``"dot"`` (default) or ``"cosine"``.

    Returns:
        Scalar loss (mean over the batch and the negatives).

    Inputs:
        ``queries``, ``positives``: ``[N, d]``; ``negatives``: ``[N, d]`` with
        ``teacher_margins`` ``[N]`` (or ``[N, 1]``), or ``[N, Q, d]`` with ``[N, Q]``.

    Raises:
        ValueError: shape mismatch, NaN margins or an unknown ``similarity``.

    Reference:
        Hofstätter, Althammer, Schröder, Sertkan and Hanbury (2020), "Improving Efficient Neural
        Ranking Models with Cross-Architecture Knowledge Distillation"; sentence-transformers'
        ``MarginMSELoss``.

    Example:
        >>> import torch
        >>> q = torch.tensor([[1.0, 0.0]])
        >>> p, n = torch.tensor([[3.0, 0.0]]), torch.tensor([[1.0, 5.0]])  # q.p = 3, q.n = 1
        >>> margin_mse(q, p, n, torch.tensor([2.0]))  # the student's margin 2 is the teacher's
        tensor(0.)
        >>> margin_mse(q, p, n, torch.tensor([5.0]))  # (2 - 5)^2
        tensor(9.)
    """
    n, d = check_same_2d({"queries": queries, "positives": positives})
    if similarity not in MARGIN_SIMILARITIES:
        raise ValueError(f"similarity must be one of {MARGIN_SIMILARITIES}, got {similarity!r}.")
    grouped = negatives.dim() == 3 if isinstance(negatives, Tensor) else False
    if grouped:
        check_grouped("negatives", negatives, n, d, "Q")
        width = negatives.shape[1]
    else:
        check_same_2d({"queries": queries, "negatives": negatives})
        width = 1
    margins = torch.as_tensor(teacher_margins).detach()
    if margins.shape not in ((n, width), *([(n,)] if width == 1 else [])):
        wanted = f"[N] = [{n}] or [N, 1]" if width == 1 else f"[N, Q] = [{n}, {width}]"
        raise ValueError(
            f"teacher_margins must have shape {wanted} (one margin per negative), got "
            f"{shape_of(margins)}."
        )
    if margins.is_floating_point() and margins.isnan().any():
        raise ValueError("teacher_margins contains NaN; drop or fix those triplets first.")
    margins = margins.reshape(n, width).to(device=queries.device, dtype=queries.dtype)
    positive = _pair_scores(queries, positives, similarity)  # [N]
    if grouped:
        expanded = queries.unsqueeze(1).expand(-1, width, -1)
        negative = _pair_scores(expanded, negatives, similarity)  # [N, Q]
    else:
        negative = _pair_scores(queries, negatives, similarity).unsqueeze(1)  # [N, 1]
    return F.mse_loss(positive.unsqueeze(1) - negative, margins)
