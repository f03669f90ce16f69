r"""A gradient written out by hand, checked against autograd (chapters 6 to 10).

Each of those chapters writes its loss's gradient in a few lines of tensor code on the page, from
its derivation, and compares it here with autograd through the library's own loss
(:mod:`sbert_tutor.losses`): :func:`autograd_gradients` gives
:math:`\partial \mathcal{L} / \partial x` for each input, :func:`compare_gradients` puts the two
side by side and fails where they differ.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import torch
from torch import Tensor

__all__ = ["autograd_gradients", "compare_gradients"]


def autograd_gradients(loss: Callable[..., Tensor], *inputs: Tensor) -> tuple[Tensor, ...]:
    r""":math:`\partial \mathcal{L} / \partial x` for every input ``x`` of ``loss(*inputs)``,
    from autograd, on fresh copies (the inputs are left as they are)."""
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    return torch.autograd.grad(loss(*leaves), leaves)


def compare_gradients(pairs: dict[str, tuple[Tensor, Tensor]]) -> pd.DataFrame:
    """One row per gradient, ``name -> (autograd, by hand)``: its shape, its largest entry and
    the largest difference between the two.

    Raises:
        AssertionError: where the two differ by more than ``torch.testing.assert_close`` allows
            for their dtype (float32: 1e-5 absolute and 1.3e-6 relative; float64: 1e-7 and
            1e-7), naming the gradient.
    """
    rows = {}
    for name, (auto, hand) in pairs.items():
        torch.testing.assert_close(hand, auto, msg=lambda text, name=name: f"{name}: {text}")
        rows[name] = (tuple(auto.shape), float(auto.abs().max()), float((auto - hand).abs().max()))
    columns = ["shape", "max |autograd|", "max |autograd - by hand|"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis("gradient")
