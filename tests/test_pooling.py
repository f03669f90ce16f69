"""Pooling against hand-computed padded examples."""

import pytest
import torch

from sbert_tutor.pooling import pool

# Two sentences, T = 3, d = 2. The second has one padding position whose values are huge, so any
# leak of padding into the result is obvious.
H = torch.tensor(
    [
        [[1.0, 2.0], [3.0, -4.0], [5.0, 0.0]],
        [[2.0, 1.0], [-2.0, 7.0], [100.0, 100.0]],
    ]
)
MASK = torch.tensor([[1, 1, 1], [1, 1, 0]])


def test_mean_ignores_padding():
    # sentence 1: ((1+3+5)/3, (2-4+0)/3) = (3, -2/3); sentence 2: ((2-2)/2, (1+7)/2) = (0, 4)
    expected = torch.tensor([[3.0, -2.0 / 3.0], [0.0, 4.0]])
    torch.testing.assert_close(pool(H, MASK, "mean"), expected)


def test_max_ignores_padding():
    # sentence 2 without padding: max(2, -2) = 2, max(1, 7) = 7 (the 100s are padding)
    expected = torch.tensor([[5.0, 2.0], [2.0, 7.0]])
    torch.testing.assert_close(pool(H, MASK, "max"), expected)


def test_cls_is_first_token():
    torch.testing.assert_close(pool(H, MASK, "cls"), H[:, 0])


def test_all_padding_row_stays_finite():
    mask = torch.tensor([[1, 1, 1], [0, 0, 0]])
    for mode in ("mean", "max"):
        out = pool(H, mask, mode)
        assert torch.isfinite(out).all(), mode
        torch.testing.assert_close(out[1], torch.zeros(2))


def test_unknown_mode():
    with pytest.raises(ValueError, match="mean, max, cls"):
        pool(H, MASK, "avg_first_last")
