r"""Data-parallel training and sharded encoding with PyTorch's own machinery (``torchrun`` + DDP).

Run any training script under ``torchrun --nproc_per_node=K``: the trainer sees the
``WORLD_SIZE``/``RANK`` environment, wraps encoder + objective in
:class:`~torch.nn.parallel.DistributedDataParallel`, and gives each process a contiguous shard of
every *global* batch of ``K * batch_size`` examples.

**In-batch negatives across processes.** For ranking losses (MNRL, SupMPN, contrastive) the
negatives of an anchor are the other examples *of the global batch*. Each process gathers the
embeddings of all processes with ``gather_with_grad`` (an all-gather whose backward is an
``all_reduce``) and computes the loss :math:`L` of the whole global batch — the same number on
every process, equal to a single process's loss on the concatenated batch. Backward through the
gather sums the gradient of :math:`L` from all :math:`K` processes into each local embedding
(:math:`K \,\partial L/\partial e_\text{local}`), and DDP's gradient averaging divides by
:math:`K`: every process ends with :math:`\partial L / \partial \theta`, exactly the single-process
gradient. Losses without in-batch negatives are computed on the local shard; DDP's average of the
local means is the global mean (shards have equal size: incomplete global batches are dropped).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from sbert_tutor.encoders.protocol import Encoder


def _is_active() -> bool:
    """True inside an initialised process group of more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    return dist.get_world_size() if _is_active() else 1


def rank() -> int:
    return dist.get_rank() if _is_active() else 0


def _launched() -> bool:
    """True when ``torchrun`` started this process as one of several (``WORLD_SIZE`` > 1)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def process_device(device: str | None, gpus: int | None = None) -> str | None:
    """The device of this ``torchrun`` process: ``device`` as given, or ``cuda:LOCAL_RANK``.

    Under ``torchrun`` with CUDA available and no device given (or plain ``"cuda"``), process
    ``LOCAL_RANK`` takes GPU ``LOCAL_RANK``; so there must be a GPU for every process on this
    machine (``LOCAL_WORLD_SIZE``). ``"cpu"``, an explicit ``"cuda:k"``, or no CUDA at all: the
    device stays as given (``None``: CPU). Outside ``torchrun``: ``device`` unchanged.
    ``gpus`` defaults to :func:`torch.cuda.device_count` (given in tests).

    Raises:
        ValueError: more processes on this machine than GPUs; the message says how many of each
            and what to pass instead (``--nproc_per_node``, or ``--device cpu``).
    """
    if not _launched():
        return device
    if device is not None and device != "cuda":
        return device
    if gpus is None:
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus == 0:
        if device == "cuda":
            raise ValueError("--device cuda was given, but this machine has no CUDA GPU")
        return device
    here = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if here > gpus:
        raise ValueError(
            f"torchrun started {here} processes on this machine, but it has {gpus} CUDA "
            f"GPU{'s' if gpus != 1 else ''}: each process trains on a GPU of its own. Start at "
            f"most {gpus} (torchrun --nproc_per_node={gpus} ...), or pass --device cpu to train "
            f"in {here} CPU processes."
        )
    return f"cuda:{local_rank}"


def init_from_env(backend: str | None = None, device: str | None = None) -> bool:
    """Initialise the process group from ``torchrun``'s environment; ``False`` when not launched so.

    ``device`` is this process's device (``process_device``); ``None`` means GPU
    ``LOCAL_RANK`` when CUDA is available, else the CPU. Backend: ``nccl`` for a CUDA device,
    else ``gloo``.
    """
    if not _launched() or (dist.is_available() and dist.is_initialized()):
        return _is_active()
    if device is None:
        cuda = torch.cuda.is_available()
        index = int(os.environ.get("LOCAL_RANK", "0"))
    else:
        target = torch.device(device)
        cuda = target.type == "cuda"
        index = target.index if target.index is not None else int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(index)
    dist.init_process_group(backend or ("nccl" if cuda else "gloo"))
    return True


def close(wait: bool = True) -> None:
    """Leave the process group at the end of a ``torchrun`` run (nothing when none is initialised).

    ``wait``: first wait for every process (a barrier), so none leaves while another still needs
    it; pass ``False`` on an error path, where another process may never reach the barrier.
    """
    if dist.is_available() and dist.is_initialized():
        if wait:
            dist.barrier()
        dist.destroy_process_group()


class _GatherWithGrad(torch.autograd.Function):
    """All-gather along dim 0 whose backward sums the gradient over processes (``all_reduce``)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.contiguous()
        pieces = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
        dist.all_gather(pieces, tensor)
        ctx.rows = tensor.shape[0]
        return torch.cat(pieces, dim=0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)  # sum over processes of dL/d(gathered)
        start = dist.get_rank() * ctx.rows
        return grad[start : start + ctx.rows]


def gather_with_grad(tensor: torch.Tensor) -> torch.Tensor:
    r"""Concatenate ``tensor`` from every process along dim 0, differentiably (identity when alone).

    Every process must pass the same shape. Backward returns, for this process's rows, the sum over
    processes of the gradient reaching them (:math:`K\,\partial L/\partial e_\text{local}` when
    every process computes the same loss :math:`L`). The backward is one ``all_reduce``, which
    every backend has (``torch.distributed.nn.all_gather`` emulates it with ``all_to_all`` on gloo,
    whose CPU processes could abort at exit with PyTorch 2.13).
    """
    if not _is_active():
        return tensor
    return _GatherWithGrad.apply(tensor)


def sum_gradients(parameters: Sequence[nn.Parameter]) -> None:
    r"""Replace each parameter's gradient by its sum over processes (nothing when alone).

    For an objective whose every process computes the same global loss :math:`L` but
    back-propagates only into its own texts' embeddings (GradCache), each process holds its
    share of :math:`\partial L / \partial \theta`; the sum is the whole gradient. A parameter
    without a gradient on this process takes part with zeros (every process must send the same
    tensors).
    """
    if not _is_active():
        return
    for param in parameters:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
        dist.all_reduce(param.grad)


def shard(
    batch: Sequence[int], process: int | None = None, processes: int | None = None
) -> list[int]:
    """This process's contiguous slice of a global batch (equal sizes: ``len(batch)`` divisible)."""
    process = rank() if process is None else process
    processes = world_size() if processes is None else processes
    size = len(batch) // processes
    return list(batch[process * size : (process + 1) * size])


class JointModel(nn.Module):
    """Encoder + objective as one module, so that DDP synchronises every trained parameter.

    ``forward(rows, labels)`` returns the objective's loss on the rows; the encoder seen by the
    objective routes its forward pass through this module's DDP wrapper when there is one.
    """

    def __init__(self, encoder: nn.Module, objective: nn.Module, bucket: Any = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.objective = objective
        self.bucket = bucket  # width bucketing of each batch (sbert_tutor.runtime.batching)

    def forward(self, rows: Sequence[Sequence[str]], labels: torch.Tensor | None) -> torch.Tensor:
        return self.objective.loss(self.encoder, rows, labels, bucket=self.bucket)


def wrap(
    encoder: nn.Module, objective: nn.Module, bucket: Any = None, ddp: bool = True
) -> nn.Module:
    """``JointModel`` in DDP when a process group is active, else the plain ``JointModel``.

    ``ddp=False`` (an objective that runs its own backward passes, e.g. GradCache): no DDP
    wrapper; the parameters of process 0 are broadcast to every process, as DDP would, and the
    caller sums the gradients with ``sum_gradients`` after each backward.
    """
    joint = JointModel(encoder, objective, bucket)
    if not _is_active():
        return joint
    if not ddp:
        with torch.no_grad():
            for tensor in [*joint.parameters(), *joint.buffers()]:
                dist.broadcast(tensor, src=0)
        return joint
    from torch.nn.parallel import DistributedDataParallel

    device = next(encoder.parameters()).device
    ids = [device.index] if device.type == "cuda" else None
    # Hugging Face encoders carry parameters SBERT never uses (BERT's pooler): tell DDP so.
    return DistributedDataParallel(joint, device_ids=ids, find_unused_parameters=True)


def encode_sharded(
    encoder: Encoder,
    sentences: Sequence[str],
    *,
    batch_size: int = 32,
    show_progress_bar: bool | None = None,
    normalize_embeddings: bool = False,
    truncate_dim: int | None = None,
) -> np.ndarray:
    """Encode a large corpus across processes: each encodes a contiguous shard; all get the whole.

    Under one process this is ``encoder.encode``. Rows come back in input order. The keywords
    are ``encode``'s (sentence-transformers' names); ``normalize_embeddings`` and
    ``truncate_dim`` are passed only when set, so an encoder whose ``encode`` takes just
    ``batch_size`` and ``show_progress_bar`` (:class:`~sbert_tutor.encoders.protocol.Encoder`)
    works with the defaults.
    """
    encode_kwargs: dict[str, Any] = {
        "batch_size": batch_size,
        "show_progress_bar": show_progress_bar,
    }
    if normalize_embeddings:
        encode_kwargs["normalize_embeddings"] = True
    if truncate_dim is not None:
        encode_kwargs["truncate_dim"] = truncate_dim
    if not _is_active():
        return encoder.encode(sentences, **encode_kwargs)
    n, k, r = len(sentences), world_size(), rank()
    bounds = np.linspace(0, n, k + 1).astype(int)
    part = list(sentences[bounds[r] : bounds[r + 1]])
    local = (
        encoder.encode(part, **encode_kwargs)
        if part
        else np.zeros((0, encoder.embedding_dim), np.float32)
    )
    pieces: list[Any] = [None] * k
    dist.all_gather_object(pieces, local)
    return np.concatenate(pieces, axis=0)


__all__ = ["encode_sharded"]
