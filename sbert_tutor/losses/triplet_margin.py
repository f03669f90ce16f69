r"""Triplet objective: the positive must be closer to the anchor than the negative, by a margin."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from sbert_tutor.losses.checks import check_same_2d

__all__ = ["TRIPLET_DISTANCES", "TRIPLET_MARGIN", "pairwise_distance", "triplet"]

#: SBERT's distances (and sentence-transformers' ``TripletDistanceMetric``), which :func:`triplet`
#: accepts.
TRIPLET_DISTANCES: tuple[str, ...] = ("euclidean", "cosine")
# :func:`triplet` also accepts ``"cosine_relu"``, the thresholded cosine distance
# 1 - ReLU(cos) of Rygaard et al. ("Distance Dilemma", n.d., eq. 4 with the note under eq. 1).
_ACCEPTED = (*TRIPLET_DISTANCES, "cosine_relu")
#: The default margin :math:`\varepsilon` of the triplet loss and objective: the SBERT paper's
#: :math:`\varepsilon = 1` with Euclidean distance (sentence-transformers' ``TripletLoss``
#: defaults to 5).
TRIPLET_MARGIN = 1.0


def pairwise_distance(x: Tensor, y: Tensor, distance: str = "euclidean") -> Tensor:
    r"""Row-wise distance :math:`\delta(x_i, y_i)`.

    ``"euclidean"``: :math:`\lVert x_i - y_i \rVert_2`; ``"cosine"``: :math:`1 - \cos(x_i, y_i)`,
    in :math:`[0, 2]`; ``"cosine_relu"``: :math:`1 - \operatorname{ReLU}(\cos(x_i, y_i))`, in
    :math:`[0, 1]` (Rygaard et al.'s cosine distance).

    Inputs:
        ``x``, ``y``: ``[N, d]``. Returns ``[N]``.

    Example:
        >>> pairwise_distance(torch.tensor([[0.0, 0.0]]), torch.tensor([[3.0, 4.0]]))
        tensor([5.])
    """
    if distance == "euclidean":
        return torch.linalg.vector_norm(x - y, dim=-1)
    if distance == "cosine":
        return 1.0 - F.cosine_similarity(x, y, dim=-1)
    if distance == "cosine_relu":
        return 1.0 - F.relu(F.cosine_similarity(x, y, dim=-1))
    raise ValueError(_unknown(distance))


def _unknown(distance: str) -> str:
    return f"distance must be one of {list(TRIPLET_DISTANCES)} or 'cosine_relu', got {distance!r}."


def triplet(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    distance: str = "euclidean",
    margin: float = TRIPLET_MARGIN,
) -> Tensor:
    r"""SBERT triplet objective (hinge on the distance gap).

    .. math::

        \mathcal{L} = \frac{1}{N} \sum_{i=1}^{N}
            \max\bigl(\delta(a_i, p_i) - \delta(a_i, n_i) + \varepsilon,\ 0\bigr)

    with :math:`\delta(x, y) = \lVert x - y \rVert_2` (``"euclidean"``) or
    :math:`\delta(x, y) = 1 - \cos(x, y)` (``"cosine"``), and margin :math:`\varepsilon`; or
    Rygaard et al.'s :math:`\delta(x, y) = 1 - \operatorname{ReLU}(\cos(x, y))`
    (``"cosine_relu"``).

    Args:
        anchor: Anchor embeddings :math:`a_i`.
        positive: Positive embeddings :math:`p_i` (should be close to the anchor).
        negative: Negative embeddings :math:`n_i` (should be far from the anchor).
        distance: ``"euclidean"``, ``"cosine"`` or ``"cosine_relu"``.
        margin: :math:`\varepsilon`; the default :data:`TRIPLET_MARGIN` = 1 is the SBERT
            paper's (with Euclidean distance; sentence-transformers' ``TripletLoss`` defaults to
            5). With ``"cosine"`` the distance gap lies in :math:`[-2, 2]`, so use a margin well
            below 2; with ``"cosine_relu"`` it lies in :math:`[-1, 1]`, so for
            :math:`\varepsilon \ge 1` the hinge argument is never negative and the max never
            acts (Rygaard et al., section 5.2.2).

    Returns:
        Scalar loss (mean over the batch).

    Inputs:
        ``anchor``, ``positive``, ``negative``: ``[N, d]``.

    Raises:
        ValueError: shape mismatch or unknown ``distance``.

    Reference:
        Reimers & Gurevych (2019), "Sentence-BERT", Sec. 3 (triplet objective function);
        Schroff et al. (2015), "FaceNet"; ``"cosine_relu"``: Rygaard, Bramsløw, Jensen, Bagger
        (n.d.), "Distance Dilemma", eq. 4 and the note under eq. 1.

    Example:
        >>> a = torch.tensor([[0.0, 0.0]])
        >>> p = torch.tensor([[1.0, 0.0]])  # distance 1
        >>> n = torch.tensor([[3.0, 4.0]])  # distance 5
        >>> triplet(a, p, n, margin=1.0)  # max(1 - 5 + 1, 0)
        tensor(0.)
        >>> triplet(a, p, n, margin=5.0)  # max(1 - 5 + 5, 0)
        tensor(1.)
    """
    check_same_2d({"anchor": anchor, "positive": positive, "negative": negative})
    if distance not in _ACCEPTED:
        raise ValueError(_unknown(distance))
    d_pos = pairwise_distance(anchor, positive, distance)
    d_neg = pairwise_distance(anchor, negative, distance)
    return F.relu(d_pos - d_neg + margin).mean()
