"""sbert_tutor.book.analysis: anisotropy and the 2-D PCA picture, against hand-worked values and an
eigendecomposition."""

from __future__ import annotations

import numpy as np
import pytest

from sbert_tutor.book.analysis import anisotropy, pca_2d, random_pairs


def test_anisotropy_extremes():
    i, j = random_pairs(5, 10_000, seed=1)
    assert not np.any(i == j) and set(np.unique(np.r_[i, j])) == set(range(5))
    assert anisotropy(np.eye(8), n_pairs=500) == pytest.approx(0.0)  # orthogonal: cos = 0
    same_direction = np.outer(np.arange(1, 7), np.ones(4))
    assert anisotropy(same_direction, n_pairs=500) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 2"):
        random_pairs(1, 3)


def test_pca_2d_matches_eigendecomposition():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 8)) @ rng.normal(size=(8, 8))
    coords, ratio = pca_2d(x)
    centred = x - x.mean(0)
    values, vectors = np.linalg.eigh(np.cov(centred, rowvar=False))
    order = np.argsort(values)[::-1]
    ref = centred @ vectors[:, order[:2]]
    for j in range(2):  # a component's sign is arbitrary
        sign = np.sign(ref[:, j] @ coords[:, j])
        np.testing.assert_allclose(coords[:, j], sign * ref[:, j], atol=1e-9)
    np.testing.assert_allclose(ratio, values[order[:2]] / values.sum(), rtol=1e-9)
