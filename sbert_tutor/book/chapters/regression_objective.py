"""Chapter 7, the regression objective: how the gold scores are scaled to the cosine's range
(:func:`target_scaling_table`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

#: label scalings of chapter 7: name -> the interval the gold range (0..5 on STSb) is mapped onto.
TARGET_SCALINGS: dict[str, tuple[float, float]] = {
    "y / 5 (SBERT)": (0.0, 1.0),
    "(y - 2.5) / 2.5": (-1.0, 1.0),
    "y unscaled": (0.0, 5.0),
}


def target_scaling_table(
    cosines: np.ndarray,
    scores: np.ndarray,
    score_range: tuple[float, float] = (0.0, 5.0),
    scalings: Mapping[str, tuple[float, float]] | None = None,
) -> pd.DataFrame:
    r"""What the regression loss asks of fixed cosines under different label scalings.

    Each scaling maps the gold range linearly onto an interval :math:`[a, b]`:
    :math:`t = a + (b - a)(y - y_{\min}) / (y_{\max} - y_{\min})`. Per scaling:

    * ``loss now``: :math:`\frac1N \sum_i (c_i - t_i)^2` at the given cosines;
    * ``loss floor``: the smallest loss any model can reach, as a cosine lives in
      :math:`[-1, 1]`: :math:`\frac1N \sum_i (\operatorname{clip}(t_i, -1, 1) - t_i)^2`;
    * ``unreachable targets``: the share of pairs with :math:`|t_i| > 1`;
    * ``pairs pulled together``: the share with :math:`c_i < t_i`, whose gradient raises the cosine.

    Args:
        cosines: :math:`c_i`, e.g. from :func:`~sbert_tutor.book.fixed_embeddings.pair_cosines`.
        scores: the gold scores :math:`y_i`, on ``score_range``.
        scalings: ``{name: (a, b)}``; default :data:`TARGET_SCALINGS`.
    """
    c = np.asarray(cosines, dtype=np.float64)
    y = np.asarray(scores, dtype=np.float64)
    lo, hi = float(score_range[0]), float(score_range[1])
    unit = (y - lo) / (hi - lo)
    rows = []
    for name, (a, b) in (scalings or TARGET_SCALINGS).items():
        t = a + (b - a) * unit
        rows.append(
            {
                "scaling": name,
                "target interval": f"[{a:g}, {b:g}]",
                "loss now": float(np.mean((c - t) ** 2)),
                "loss floor": float(np.mean((np.clip(t, -1.0, 1.0) - t) ** 2)),
                "unreachable targets": float(np.mean(np.abs(t) > 1.0)),
                "pairs pulled together": float(np.mean(c < t)),
            }
        )
    return pd.DataFrame(rows).set_index("scaling")
