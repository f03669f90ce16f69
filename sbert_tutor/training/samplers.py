r"""Batch samplers: length buckets (smart batching) and no duplicates (for in-batch negatives).

**Length buckets.** A batch is padded to its longest example, so mixing a 5-token and a
60-token sentence wastes 55 positions of compute per short row. Each epoch we shuffle the data,
cut it into *buckets* of ``batch_size * bucket_batches`` examples, sort each bucket by length,
cut it into batches and shuffle the batches. Batches hold similar lengths, yet every epoch sees
a new order. (Sorting all the data at once would pad least, but would also feed the model all
short sentences first.) The order depends only on ``(seed, epoch)``.

**No duplicates.** In-batch-negative losses (MNRL, SupMPN, in-batch contrastive) treat every other
example's positive as a negative. If one sentence appears twice in a batch it becomes its own
negative: a false negative. :class:`NoDuplicatesBatchSampler` fills each batch in order, skipping
(and postponing to a later batch) any example that shares a text with the batch so far.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

__all__ = ["LengthBucketBatchSampler", "NoDuplicatesBatchSampler", "length_bucketed_batches"]


def _check_batch_size(batch_size: int) -> int:
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    return int(batch_size)


def _epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """The random generator of one epoch: a function of ``(seed, epoch)`` only."""
    return np.random.default_rng([int(seed), int(epoch)])


def length_bucketed_batches(
    lengths: Sequence[int] | np.ndarray,
    batch_size: int,
    rng: np.random.Generator,
    bucket_batches: int | None = 50,
    drop_last: bool = False,
) -> list[list[int]]:
    """Indices grouped into batches of similar length (see the module docstring).

    Args:
        lengths: token count of each example (e.g. its longest text).
        batch_size: examples per batch; only the very last batch may be smaller.
        rng: the generator used for both shuffles.
        bucket_batches: batches per sorting bucket; ``None`` sorts the whole data set, ``1``
            disables grouping (a plain shuffle).
        drop_last: drop a final incomplete batch.
    """
    batch_size = _check_batch_size(batch_size)
    lengths = np.asarray(lengths)
    n = len(lengths)
    order = rng.permutation(n)
    bucket = n if bucket_batches is None else batch_size * int(bucket_batches)
    if bucket < 1:
        raise ValueError(f"bucket_batches must be >= 1 or None, got {bucket_batches!r}")
    batches: list[list[int]] = []
    for start in range(0, n, bucket):
        chunk = order[start : start + bucket]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i : i + batch_size].tolist() for i in range(0, len(chunk), batch_size)]
    if drop_last and batches and len(batches[-1]) < batch_size:
        batches.pop()
    perm = rng.permutation(len(batches))
    return [batches[i] for i in perm]


class LengthBucketBatchSampler:
    """Batches of similar token length, reshuffled every epoch; deterministic under ``seed``.

    ``batches(epoch)`` returns the plan of one epoch; iterating yields the batches of the current
    epoch (:meth:`set_epoch`), so it also works as a ``DataLoader(batch_sampler=...)``.

    Example:
        >>> sampler = LengthBucketBatchSampler([3, 9, 4, 8, 3, 9], batch_size=2, seed=0)
        >>> sorted(sorted(b) for b in sampler.batches(0))
        [[0, 4], [1, 5], [2, 3]]
    """

    def __init__(
        self,
        lengths: Sequence[int] | np.ndarray,
        batch_size: int,
        seed: int = 0,
        bucket_batches: int | None = 50,
        drop_last: bool = False,
    ) -> None:
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if self.lengths.ndim != 1 or len(self.lengths) == 0:
            raise ValueError("lengths must be a non-empty 1-D sequence (one per example)")
        self.batch_size = _check_batch_size(batch_size)
        self.seed = int(seed)
        self.bucket_batches = bucket_batches
        self.drop_last = drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Iterating yields the batches of ``epoch`` from now on."""
        self.epoch = int(epoch)

    def batches(self, epoch: int) -> list[list[int]]:
        return length_bucketed_batches(
            self.lengths,
            self.batch_size,
            _epoch_rng(self.seed, epoch),
            self.bucket_batches,
            self.drop_last,
        )

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches(self.epoch))

    def __len__(self) -> int:
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class NoDuplicatesBatchSampler:
    """Batches in which no text occurs twice (across all columns of all examples).

    Each epoch starts from an order (length-bucketed when ``lengths`` is given, else a plain
    shuffle) and fills batches greedily: an example that shares a text with the batch being
    filled is postponed to a later batch. Every example appears exactly once per epoch; batches
    are full except near the end, or when the data is too repetitive to fill them (the scan for
    a fitting example stops after ``max_scan`` examples).

    Args:
        texts: the texts of each example (e.g. ``(anchor, positive)``); compared after
            stripping surrounding whitespace.
        batch_size, seed, bucket_batches: as for :class:`LengthBucketBatchSampler`.
        lengths: token lengths for length bucketing; ``None`` for a plain shuffle.
        max_scan: how far ahead to look for an example that fits (default ``100 * batch_size``).
    """

    def __init__(
        self,
        texts: Sequence[Sequence[str]],
        batch_size: int,
        seed: int = 0,
        lengths: Sequence[int] | np.ndarray | None = None,
        bucket_batches: int | None = 50,
        max_scan: int | None = None,
    ) -> None:
        if len(texts) == 0:
            raise ValueError("texts must hold at least one example")
        self.keys = [frozenset(t.strip() for t in row) for row in texts]
        self.batch_size = _check_batch_size(batch_size)
        self.seed = int(seed)
        self.lengths = None if lengths is None else np.asarray(lengths, dtype=np.int64)
        if self.lengths is not None and len(self.lengths) != len(self.keys):
            raise ValueError(
                f"length mismatch: {len(self.keys)} examples but {len(self.lengths)} lengths"
            )
        self.bucket_batches = bucket_batches
        self.max_scan = max_scan or 100 * self.batch_size
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Iterating yields the batches of ``epoch`` from now on."""
        self.epoch = int(epoch)

    def _order(self, epoch: int) -> list[int]:
        rng = _epoch_rng(self.seed, epoch)
        if self.lengths is None:
            return rng.permutation(len(self.keys)).tolist()
        plan = length_bucketed_batches(self.lengths, self.batch_size, rng, self.bucket_batches)
        return [i for batch in plan for i in batch]

    def batches(self, epoch: int) -> list[list[int]]:
        order = self._order(epoch)
        n = len(order)
        used = np.zeros(n, dtype=bool)
        start = 0
        batches: list[list[int]] = []
        while start < n:
            batch: list[int] = []
            seen: set[str] = set()
            pos, stop = start, min(n, start + self.max_scan)
            while pos < stop and len(batch) < self.batch_size:
                if not used[pos]:
                    keys = self.keys[order[pos]]
                    if seen.isdisjoint(keys):
                        batch.append(order[pos])
                        seen |= keys
                        used[pos] = True
                pos += 1
            batches.append(batch)
            while start < n and used[start]:
                start += 1
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches(self.epoch))

    def __len__(self) -> int:
        return len(self.batches(self.epoch))
