"""Pooling against hand-computed padded examples."""

import pytest
import torch

from sbert_tutor.encoders.pooling import pool

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


# ------------------------------------------------------------------ against sentence-transformers

ALL_MODES = ["mean", "max", "cls", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"]


def _random_batch(left: bool):
    """8 sentences of 1..9 real tokens padded to 9, right- or left-padded, random embeddings."""
    torch.manual_seed(1)
    lengths = torch.tensor([9, 1, 4, 7, 2, 9, 5, 3])
    positions = torch.arange(9).unsqueeze(0)
    mask = positions < lengths.unsqueeze(1)
    if left:
        mask = mask.flip(1)
    return torch.randn(8, 9, 6), mask.long()


def _st_pool(hidden, mask, mode, prompt_length=0):
    from sentence_transformers.sentence_transformer.modules import Pooling

    module = Pooling(hidden.size(-1), pooling_mode=mode, include_prompt=not prompt_length)
    features = {"token_embeddings": hidden, "attention_mask": mask}
    if prompt_length:
        features["prompt_length"] = prompt_length
    return module(features)["sentence_embedding"]


@pytest.mark.parametrize("left", [False, True], ids=["right-padded", "left-padded"])
@pytest.mark.parametrize("mode", ALL_MODES + [("cls", "mean"), ("mean", "max", "lasttoken")])
def test_every_mode_matches_sentence_transformers(mode, left):
    pytest.importorskip("sentence_transformers")
    hidden, mask = _random_batch(left)
    ours = pool(hidden, mask, mode)
    torch.testing.assert_close(ours, _st_pool(hidden, mask, mode), rtol=0, atol=1e-6)
    joined = mode if isinstance(mode, str) else "+".join(mode)
    assert ours.shape == (8, 6 * len(joined.split("+")))


@pytest.mark.parametrize("mode", ALL_MODES)
def test_prompt_tokens_left_out_like_sentence_transformers(mode):
    pytest.importorskip("sentence_transformers")
    hidden, mask = _random_batch(left=False)
    keep = mask.sum(1) > 2  # rows longer than the prompt
    ours = pool(hidden[keep], mask[keep], mode, prompt_length=2)
    ref = _st_pool(hidden[keep], mask[keep], mode, prompt_length=2)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-6)


def test_hand_worked_extra_modes():
    # sentence 2 has 2 real tokens (2, 1) and (-2, 7):
    # mean_sqrt_len: (0, 8) / sqrt(2); weightedmean: (1*(2,1) + 2*(-2,7)) / 3 = (-2/3, 5);
    # lasttoken: (-2, 7), never the padding (100, 100).
    root2 = 2.0**0.5
    torch.testing.assert_close(
        pool(H, MASK, "mean_sqrt_len_tokens")[1], torch.tensor([0.0, 8 / root2])
    )
    torch.testing.assert_close(pool(H, MASK, "weightedmean")[1], torch.tensor([-2 / 3, 5.0]))
    torch.testing.assert_close(pool(H, MASK, "lasttoken")[1], torch.tensor([-2.0, 7.0]))
    torch.testing.assert_close(
        pool(H, MASK, "cls+lasttoken")[1], torch.tensor([2.0, 1.0, -2.0, 7.0])
    )


def test_combination_checks():
    from sbert_tutor.encoders.pooling import check_pooling, pooled_dim

    assert check_pooling(["cls", "mean"]) == "cls+mean" == check_pooling("cls + mean")
    assert pooled_dim("cls+mean", 384) == 768
    with pytest.raises(ValueError, match="repeats"):
        check_pooling("mean+mean")
