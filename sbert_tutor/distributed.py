r"""Data-parallel training and sharded encoding with PyTorch's own machinery (``torchrun`` + DDP).

Run any training script under ``torchrun --nproc_per_node=K``: the trainer sees the
``WORLD_SIZE``/``RANK`` environment, wraps encoder + objective in
:class:`~torch.nn.parallel.DistributedDataParallel`, and gives each process a contiguous shard of
every *global* batch of ``K * batch_size`` examples.

**In-batch negatives across processes.** For ranking losses (MNRL, SupMPN, contrastive) the
negatives of an anchor are the other examples *of the global batch*. Each process gathers the
embeddings of all processes with :func:`gather_with_grad` (``torch.distributed.nn.all_gather``,
differentiable) and computes the loss :math:`L` of the whole global batch — the same number on
every process, equal to a single process's loss on the concatenated batch. Backward through the
gather sums the gradient of :math:`L` from all :math:`K` processes into each local embedding
(:math:`K \,\partial L/\partial e_\text{local}`), and DDP's gradient averaging divides by
:math:`K`: every process ends with :math:`\partial L / \partial \theta`, exactly the single-process
gradient. Losses without in-batch negatives are computed on the local shard; DDP's average of the
local means is the global mean (shards have equal size: incomplete global batches are dropped).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from sbert_tutor.embedding import Encoder


def is_active() -> bool:
    """True inside an initialised process group of more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    return dist.get_world_size() if is_active() else 1


def rank() -> int:
    return dist.get_rank() if is_active() else 0


def init_from_env(backend: str | None = None) -> bool:
    """Initialise the process group from ``torchrun``'s environment; ``False`` when not launched so.

    Backend: ``nccl`` with CUDA, else ``gloo``. Each process uses GPU ``LOCAL_RANK``.
    """
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or (
        dist.is_available() and dist.is_initialized()
    ):
        return is_active()
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend or ("nccl" if cuda else "gloo"))
    return True


def gather_with_grad(tensor: torch.Tensor) -> torch.Tensor:
    """Concatenate ``tensor`` from every process along dim 0, differentiably (identity when alone)."""
    if not is_active():
        return tensor
    from torch.distributed.nn.functional import all_gather

    with warnings.catch_warnings():  # the public differentiable gather; its successor is private
        warnings.simplefilter("ignore", FutureWarning)
        return torch.cat(all_gather(tensor), dim=0)


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

    def __init__(self, encoder: nn.Module, objective: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.objective = objective

    def forward(self, rows: Sequence[Sequence[str]], labels: torch.Tensor | None) -> torch.Tensor:
        return self.objective.loss(self.encoder, rows, labels)


def wrap(encoder: nn.Module, objective: nn.Module) -> nn.Module:
    """``JointModel`` in DDP when a process group is active, else the plain ``JointModel``."""
    joint = JointModel(encoder, objective)
    if not is_active():
        return joint
    from torch.nn.parallel import DistributedDataParallel

    device = next(encoder.parameters()).device
    ids = [device.index] if device.type == "cuda" else None
    # Hugging Face encoders carry parameters SBERT never uses (BERT's pooler): tell DDP so.
    return DistributedDataParallel(joint, device_ids=ids, find_unused_parameters=True)


def encode_sharded(encoder: Encoder, sentences: Sequence[str], **encode_kwargs: Any) -> np.ndarray:
    """Encode a large corpus across processes: each encodes a contiguous shard; all get the whole.

    Under one process this is ``encoder.encode``. Rows come back in input order.
    """
    if not is_active():
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
