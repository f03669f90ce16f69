"""sbert_tutor.stats: seeded subsets against numpy's own draw."""

from __future__ import annotations

import numpy as np
import pytest

from sbert_tutor.stats import seeded_subset


# ------------------------------------------------------------------------------ seeded subsets
def test_seeded_subset_is_numpy_choice_sorted_and_continues_a_generator():
    assert seeded_subset(10, 3, seed=0).tolist() == sorted(
        np.random.default_rng(0).choice(10, 3, replace=False).tolist()
    )
    assert seeded_subset(5, 5, seed=1).tolist() == [0, 1, 2, 3, 4]
    rng, ref = np.random.default_rng(7), np.random.default_rng(7)
    first, second = seeded_subset(20, 4, rng), seeded_subset(20, 4, rng)
    assert first.tolist() == sorted(ref.choice(20, 4, replace=False).tolist())
    assert second.tolist() == sorted(ref.choice(20, 4, replace=False).tolist())
    with pytest.raises(ValueError, match="cannot draw 6 of 5"):
        seeded_subset(5, 6)
