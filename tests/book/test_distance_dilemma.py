"""Chapter 12 (sbert_tutor.book.chapters.distance_dilemma): the study's margins in the setups,
the page's Platt scaling against a generic optimiser and by hand, and the figures on hand-made
tables. The experiment itself (the split, the teacher and its calibration, the training sets, the
loop over the setups, the evaluation and the bootstrap) runs on the chapter's page, with its
checks beside the code."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from sbert_tutor.book.chapters import distance_dilemma
from tests.book.pages import page_functions

platt_scale = page_functions("12_distance_dilemma", "platt_scale")["platt_scale"]


# ------------------------------------------------------------------------------ figures
def _long_table() -> pd.DataFrame:
    rows = []
    for setup, arch, distance, base in [
        ("start model / cosine", "start model", "cosine", 0.5),
        ("start model / euclidean", "start model", "euclidean", 0.5),
        ("Siamese / cosine", "Siamese", "cosine", 0.55),
        ("Triplet / euclidean", "Triplet", "euclidean", 0.45),
    ]:
        for measure in distance_dilemma.MEASURES:
            for k in (1, 10):
                rows.append(
                    dict(
                        setup=setup,
                        architecture=arch,
                        distance=distance,
                        measure=measure,
                        k=k,
                        value=base + k / 100,
                    )
                )
    return pd.DataFrame(rows)


def test_the_figures_draw_the_pages_tables():
    import matplotlib.pyplot as plt

    pairs = pd.DataFrame({"label": [1, 0, 0, 1], "teacher_cosine": [0.8, 0.3, 0.5, 0.7]})
    ax = distance_dilemma.plot_teacher_scores(pairs, bins=4)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["positive", "BM25 negative"]
    axes = distance_dilemma.plot_results(_long_table())
    assert len(axes) == len(distance_dilemma.MEASURES)
    assert [line.get_linestyle() for line in axes[0].lines] == ["--", "--", "-", "-"]
    assert list(axes[0].lines[2].get_xdata()) == [1, 10]
    plt.close("all")


def test_study_margins_are_the_papers():
    from sbert_tutor.book.chapters.distance_dilemma import DistanceDilemmaSizes
    from sbert_tutor.book.published import DISTANCE_DILEMMA
    from sbert_tutor.book.sizes import sizes_for

    margins = sorted(opts["margin"] for _, opts in distance_dilemma.STUDY_MARGIN_SETUPS.values())
    assert margins == [DISTANCE_DILEMMA["triplet cosine margin, retried"], 5.0, 5.0]
    # the study's cosine distance is thresholded by a ReLU (the note under its eq. 1, for eq. 4)
    distances = sorted(
        opts["distance"] for _, opts in distance_dilemma.STUDY_MARGIN_SETUPS.values()
    )
    assert distances == ["cosine_relu", "cosine_relu", "euclidean"]
    assert DISTANCE_DILEMMA["triplet margin"] == 5.0
    assert not sizes_for(DistanceDilemmaSizes, "quick").study_margins
    assert sizes_for(DistanceDilemmaSizes, "paper").study_margins


# ------------------------------------------------------------------------------ Platt scaling
def _platt_objective(w, c, y):
    n_pos, n_neg = (y == 1).sum(), (y == 0).sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    z = w[0] * c + w[1]
    # cross-entropy with soft targets, written with logaddexp for stability
    return float(np.sum(t * np.logaddexp(0, -z) + (1 - t) * np.logaddexp(0, z)))


@pytest.mark.parametrize("separable", [False, True])
def test_platt_scale_matches_a_generic_optimiser(separable):
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.2).astype(int)
    c = rng.normal(0.2, 0.15, 300) + (0.6 if separable else 0.15) * y
    if separable:
        c[y == 1] = np.maximum(c[y == 1], c[y == 0].max() + 0.01)
    a, b = platt_scale(c, y)
    ref = minimize(
        _platt_objective,
        x0=[0.0, 0.0],
        args=(c, y),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000},
    )
    # ours is at least as good a minimum as the generic optimiser's, and at the same place
    assert _platt_objective([a, b], c, y) <= ref.fun + 1e-9
    assert a == pytest.approx(ref.x[0], rel=1e-4, abs=1e-4)
    assert b == pytest.approx(ref.x[1], rel=1e-4, abs=1e-4)
    assert a > 0  # higher teacher cosine -> more likely relevant
    assert math.isfinite(a)


def test_platt_scale_symmetric_hand_example():
    # two points per class, mirrored around c = 0 with equal counts: b = 0 by symmetry
    a, b = platt_scale([-1.0, -0.5, 0.5, 1.0], [0, 0, 1, 1])
    assert b == pytest.approx(0.0, abs=1e-12)
    assert a > 0


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        ([0.1, 0.2], [1], "equal-length"),
        ([0.1, float("nan")], [1, 0], "NaN"),
        ([0.1, 0.2], [1, 2], "0 or 1"),
        ([0.1, 0.2], [1, 1], "both classes"),
    ],
)
def test_platt_scale_errors(scores, labels, match):
    with pytest.raises(ValueError, match=match):
        platt_scale(scores, labels)
