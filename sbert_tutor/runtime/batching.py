r"""Batches for encoding: padding, width bucketing, the batch plan and a prefetching pipeline.

Book chapter 13 (computational efficiency). A batch of sentences with :math:`\ell_1, \dots, \ell_B`
tokens is padded to one width :math:`W \ge \max_i \ell_i`; the attention mask marks the
:math:`W - \ell_i` padding positions of row :math:`i`, so they never reach the sentence embedding.

* **Width bucketing** rounds :math:`W` up to a multiple of :math:`m` (or to the next width of a
  fixed ladder), :math:`W = m \lceil \max_i \ell_i / m \rceil`. The model then sees few distinct
  shapes, which matters on a GPU where a new shape can cost a one-off plan or kernel choice; it
  costs :math:`B (W - \max_i \ell_i)` extra padded positions.
* **The batch plan** (smart batching, SBERT paper section 7) sorts by token count so that each
  batch pads little. The plain plan tokenises everything, then sorts. The *chunked* plan (used by
  the pipelined encode) sorts by character count first, cuts the sorted order into chunks of a few
  batches and sorts each chunk by token count once it is tokenised, so that the next chunk can be
  tokenised while the current one is computed.
* ``Prefetcher`` runs a producer (tokenise, pad, pin) in a background thread, a bounded
  number of batches ahead of the consumer; ``HostSink`` gathers embeddings into input order
  with asynchronous device-to-host copies, so the host never waits for the GPU batch by batch.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = ["CHUNK_BATCHES", "batch_positions", "bucket_width", "resolve_bucket"]

#: ``bucket="auto"`` on CUDA under fp16/bf16: widths rounded up to a multiple of this.
BUCKET_MULTIPLE = 32
#: Batches a chunk holds in the chunked plan of the pipelined encode.
CHUNK_BATCHES = 16
#: Batches the producer of the pipelined encode may run ahead of the consumer.
_PREFETCH_BATCHES = 8
#: Batches whose device-to-host copy may be in flight before the host waits for the oldest.
_COPY_LAG = 4

Bucket = int | tuple[int, ...] | None


def check_bucket(bucket: object) -> Bucket:
    """``bucket`` in canonical form: ``None`` (no bucketing), a multiple, or a sorted ladder.

    ``None``, ``False``, ``0`` and ``1`` mean no bucketing; ``True`` means ``BUCKET_MULTIPLE``;
    an int ``m >= 2`` rounds widths up to a multiple of ``m``; a sequence of ints is a ladder of
    widths (a batch gets the smallest ladder width that holds its longest row).
    """
    if bucket is None or bucket is False:
        return None
    if bucket is True:
        return BUCKET_MULTIPLE
    if isinstance(bucket, (int, np.integer)):
        if bucket < 0:
            raise ValueError(f"bucket must be >= 0 (0 or None: no bucketing), got {bucket}")
        return int(bucket) if bucket >= 2 else None
    ladder = isinstance(bucket, Sequence) and not isinstance(bucket, str) and bucket
    if ladder and all(isinstance(w, (int, np.integer)) and w >= 1 for w in bucket):
        return tuple(sorted({int(w) for w in bucket}))
    raise ValueError(
        f"bucket={bucket!r} is not a bucketing; use 'auto', None (off), a multiple such as 32, "
        "or a ladder of widths such as (32, 64, 128, 256)"
    )


def resolve_bucket(
    bucket: object, device: torch.device | str, dtype: torch.dtype | None, padding_side: str
) -> Bucket:
    """The bucketing :meth:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder.encode` uses: ``"auto"`` decided,
    anything else checked.

    ``"auto"`` buckets to multiples of ``BUCKET_MULTIPLE`` on CUDA under fp16/bf16 (where each
    new width has a one-off cost) and pads to the longest row elsewhere: on a CPU every extra
    padded position is compute, and fp32 on CUDA has no such per-shape cost. It stays off for
    tokenizers that pad on the left, where extra padding would move the real tokens' positions.
    """
    if isinstance(bucket, str):
        if bucket != "auto":
            raise ValueError(f"bucket={bucket!r}: the only word accepted is 'auto'")
        half = dtype in (torch.float16, torch.bfloat16)
        on_cuda = torch.device(device).type == "cuda"
        return BUCKET_MULTIPLE if on_cuda and half and padding_side != "left" else None
    return check_bucket(bucket)


def bucket_width(length: int, bucket: Bucket = BUCKET_MULTIPLE, limit: int | None = None) -> int:
    """The padded width of a batch whose longest row has ``length`` tokens.

    ``bucket=None``: ``length``. A multiple ``m``: :math:`m \\lceil \\ell / m \\rceil`. A ladder: its
    smallest width :math:`\\ge \\ell` (``length`` itself beyond the ladder). The result never
    exceeds ``limit`` (the model's ``max_seq_length``) unless ``length`` already does.

    >>> bucket_width(17, 32), bucket_width(33, 32), bucket_width(250, 32, limit=256)
    (32, 64, 256)
    >>> bucket_width(17, (16, 64, 128)), bucket_width(200, (16, 64, 128))
    (64, 200)
    """
    length = int(length)
    if bucket is None:
        width = length
    elif isinstance(bucket, tuple):
        width = next((w for w in bucket if w >= length), length)
    else:
        width = -(-length // bucket) * bucket
    if limit is not None:
        width = min(width, max(int(limit), length))
    return max(width, length)


def pad_ids(
    ids: Sequence[Sequence[int]], width: int, pad_id: int, left: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Token-id lists -> ``input_ids`` and ``attention_mask`` arrays ``[B, width]`` (int64).

    Row :math:`i` holds its :math:`\\ell_i` ids at the right end when ``left`` (left padding), else
    at the start; the mask is 1 on them and 0 on padding. One vectorised fill, no Python loop
    over rows.
    """
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    if lengths.size and int(lengths.max()) > width:
        raise ValueError(f"a row has {int(lengths.max())} tokens, more than the width {width}")
    positions = np.arange(width, dtype=np.int64)
    if left:
        real = positions[None, :] >= (width - lengths)[:, None]
    else:
        real = positions[None, :] < lengths[:, None]
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
    input_ids[real] = flat  # boolean indexing fills row by row, left to right
    return input_ids, real.astype(np.int64)


def chunk_positions(
    char_lengths: Sequence[int] | np.ndarray, chunk_size: int | None, sort: bool = True
) -> list[np.ndarray]:
    """Input positions grouped into the chunks the batch plan tokenises one at a time.

    One chunk in input order when ``chunk_size`` is ``None`` or holds everything (the plain plan:
    tokenise all, then sort all by token count). Otherwise, with ``sort``, positions sorted by
    character count (longest first, stable) and cut into chunks of ``chunk_size``; without
    ``sort``, consecutive chunks in input order.
    """
    n = len(char_lengths)
    if chunk_size is None or n <= chunk_size:
        return [np.arange(n)]
    if sort:
        order = np.argsort(-np.asarray(char_lengths, dtype=np.int64), kind="stable")
    else:
        order = np.arange(n)
    return [order[s : s + chunk_size] for s in range(0, n, chunk_size)]


def batch_positions(
    positions: np.ndarray, token_lengths: Sequence[int] | np.ndarray, batch_size: int, sort: bool
) -> list[np.ndarray]:
    """One chunk's positions cut into batches, sorted by token count first (longest first, stable)
    when ``sort``. ``token_lengths[j]`` is the token count of ``positions[j]``."""
    if sort:
        order = np.argsort(-np.asarray(token_lengths, dtype=np.int64), kind="stable")
        positions = positions[order]
    return [positions[s : s + batch_size] for s in range(0, len(positions), batch_size)]


@dataclass
class Batch:
    """One padded batch: the input positions of its rows, their token counts and the tensors."""

    positions: np.ndarray
    lengths: np.ndarray
    tensors: dict[str, torch.Tensor]

    @property
    def width(self) -> int:
        return int(self.tensors["input_ids"].shape[1])


_DONE = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetcher:
    """Iterate over ``items`` with the work of producing them done in a background thread.

    The producer runs at most ``depth`` items ahead (a bounded queue); items arrive in the order
    ``items`` yields them; an exception raised by the producer is raised again here, in the
    consumer, with its traceback. Closing (or leaving a ``with`` block) early stops the producer.
    ``init`` runs first in the producer thread (e.g. to select the CUDA device there).
    """

    def __init__(
        self,
        items: Iterable[Any],
        depth: int = _PREFETCH_BATCHES,
        init: Callable[[], Any] | None = None,
    ) -> None:
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._items = items
        self._init = init
        self._thread = threading.Thread(
            target=self._produce, name="sbert-tutor-prefetch", daemon=True
        )
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        try:
            if self._init is not None:
                self._init()
            for item in self._items:
                if not self._put(item):
                    return
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, raised there
            self._put(_Failure(error))
            return
        self._put(_DONE)

    def __iter__(self) -> Iterator[Any]:
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item

    def close(self) -> None:
        """Stop the producer and wait for its thread to end."""
        self._stop.set()
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=0.05)
        self._thread.join()

    def __enter__(self) -> Prefetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def thread_init(device: torch.device | str) -> Callable[[], None] | None:
    """What a producer thread runs first so that its pinned allocations belong to ``device``'s
    GPU (the current CUDA device is per thread); ``None`` off CUDA. The index is read here, in
    the calling thread: ``"cuda"`` means the caller's current device."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    return lambda: torch.cuda.set_device(index)


class _Ready:
    """An already-finished copy (CPU): what a CUDA event is once the copy has landed."""

    def synchronize(self) -> None:
        return None


class HostSink:
    """Per-batch embeddings ``[b, d]`` -> one float32 array ``[n, d]`` in input order.

    ``asynchronous`` (the default on CUDA): each batch is copied to pinned host memory without
    waiting, with an event recorded after the copy; the host reads a batch only when more than
    ``lag`` newer copies are in flight, or at ``finish``. So there is no synchronisation per
    batch, and the GPU never idles because the host is reading. On a CPU the same bookkeeping runs
    with copies that are complete at once (what the tests check); synchronous mode writes at once.
    """

    def __init__(
        self,
        n: int,
        dim: int,
        device: torch.device | str,
        asynchronous: bool | None = None,
        lag: int = _COPY_LAG,
    ) -> None:
        self.out = np.empty((n, dim), dtype=np.float32)
        self.device = torch.device(device)
        self.asynchronous = (self.device.type == "cuda") if asynchronous is None else asynchronous
        self.lag = max(0, int(lag))
        self._pending: deque[tuple[np.ndarray, torch.Tensor, Any]] = deque()

    def _copy(self, emb: torch.Tensor) -> tuple[torch.Tensor, Any]:
        if self.device.type == "cuda":
            host = torch.empty(emb.shape, dtype=torch.float32, pin_memory=True)
            host.copy_(emb, non_blocking=True)
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(emb.device))  # the stream that copies
            return host, event
        return emb.detach().to("cpu", torch.float32, copy=True), _Ready()

    def add(self, positions: np.ndarray, emb: torch.Tensor) -> None:
        """Take the embeddings of the rows at ``positions`` (input positions, row order)."""
        if not self.asynchronous:
            self.out[positions] = emb.detach().to("cpu", torch.float32).numpy()
            return
        host, ready = self._copy(emb)
        self._pending.append((positions, host, ready))
        while len(self._pending) > self.lag:
            self._land()

    def _land(self) -> None:
        positions, host, ready = self._pending.popleft()
        ready.synchronize()
        self.out[positions] = host.numpy()  # host tensor: the pinned copy, landed

    def finish(self) -> np.ndarray:
        """Wait for the copies still in flight; the array in input order."""
        while self._pending:
            self._land()
        return self.out


class DeviceSink:
    """Per-batch embeddings ``[b, d]`` -> one tensor ``[n, d]`` on their device, in input order.

    What ``HostSink`` does for a numpy result, for a tensor result (``convert_to_tensor``):
    the rows stay where they were computed and are put back in input order there, in one
    scatter at ``finish``. No batch at all gives an empty ``[0, dim]`` tensor on ``device``.
    """

    def __init__(self, dim: int, device: torch.device | str) -> None:
        self.dim = int(dim)
        self.device = torch.device(device)
        self._rows: list[torch.Tensor] = []
        self._positions: list[np.ndarray] = []

    def add(self, positions: np.ndarray, emb: torch.Tensor) -> None:
        """Take the embeddings of the rows at ``positions`` (input positions, row order)."""
        self._rows.append(emb)
        self._positions.append(positions)

    def finish(self) -> torch.Tensor:
        """The rows in input order, on the device they were computed on."""
        if not self._rows:
            return torch.empty((0, self.dim), dtype=torch.float32, device=self.device)
        stacked = torch.cat(self._rows)
        order = torch.from_numpy(np.concatenate(self._positions)).to(stacked.device)
        result = torch.empty_like(stacked)
        result[order] = stacked
        return result
