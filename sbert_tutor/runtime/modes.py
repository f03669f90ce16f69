"""A module's train/eval mode, put back exactly as it was found."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import nn

__all__ = ["eval_mode"]


@contextmanager
def eval_mode(module: nn.Module) -> Iterator[nn.Module]:
    """Run the block with ``module`` and all its submodules in eval mode (dropout off), then give
    each submodule back the mode it had: a wrapper whose own flag disagrees with the model it
    wraps (``encoder.model.eval()`` called on the model alone) keeps both as they were.

    Example:
        >>> net = nn.Sequential(nn.Dropout(0.1), nn.Linear(2, 2))
        >>> _ = net[0].eval()
        >>> with eval_mode(net):
        ...     net.training, net[0].training
        (False, False)
        >>> net.training, net[0].training, net[1].training
        (True, False, True)
    """
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        yield module
    finally:
        for m, training in modes:
            m.training = training
