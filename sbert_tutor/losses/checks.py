"""Shape checks shared by the loss functions: each names the argument, the shape it needs and the
shape it got, so a wrong batch fails with an error that says what to pass.

Shapes are written as in the chapters: ``[N, d]`` for a batch of ``N`` embeddings of dimension
``d``, ``[N, P, d]`` / ``[N, Q, d]`` for ``P`` positives / ``Q`` negatives per anchor.
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

__all__: list[str] = []


def shape_of(x: Tensor) -> str:
    """``x``'s shape as the errors print it, e.g. ``[4, 384]``."""
    return "[" + ", ".join(str(s) for s in x.shape) + "]"


def check_tensor(name: str, x: object, ndim: int, what: str) -> None:
    """Check that ``x`` is a floating-point tensor with ``ndim`` dimensions (``what`` describes
    the shape the caller needs, for the error)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {what}, got {type(x).__name__}.")
    if x.dim() != ndim:
        raise ValueError(
            f"{name} must be a {ndim}-D tensor of shape {what}, got shape {shape_of(x)}."
        )
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}.")


def check_same_2d(tensors: Mapping[str, Tensor]) -> tuple[int, int]:
    """Check that every tensor of ``{name: tensor}`` is ``[N, d]`` with the same ``N`` and ``d``;
    return ``(N, d)``. The names are the caller's argument names, used in the messages."""
    names = list(tensors)
    for name in names:
        check_tensor(name, tensors[name], 2, "[N, d]")
    first = names[0]
    ref = tensors[first]
    for name in names[1:]:
        if tensors[name].shape != ref.shape:
            raise ValueError(
                f"{first} and {name} must have the same shape [N, d], got "
                f"{first} {shape_of(ref)} and {name} {shape_of(tensors[name])}."
            )
    if ref.shape[0] == 0:
        raise ValueError(
            f"{first} is an empty batch (N = 0); the mean over the batch is undefined."
        )
    return ref.shape[0], ref.shape[1]


def check_grouped(name: str, x: Tensor, n: int, d: int, group: str) -> None:
    """Check that ``x`` is ``[N, group, d]`` for the given ``N`` and ``d``."""
    what = f"[N, {group}, d] = [{n}, {group}, {d}]"
    check_tensor(name, x, 3, what)
    if x.shape[0] != n or x.shape[2] != d:
        raise ValueError(f"{name} must have shape {what}, got {shape_of(x)}.")
