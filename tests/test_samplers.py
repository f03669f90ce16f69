"""Batch samplers: length buckets group similar lengths; no-duplicates batches never repeat a text."""

from __future__ import annotations

import numpy as np
import pytest

from sbert_tutor.training.samplers import (
    LengthBucketBatchSampler,
    NoDuplicatesBatchSampler,
    length_bucketed_batches,
)


def _lengths(n: int = 1000, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(5, 61, size=n)


def _covers_once(batches: list[list[int]], n: int) -> bool:
    flat = [i for b in batches for i in b]
    return sorted(flat) == list(range(n))


def _spread(batches: list[list[int]], lengths: np.ndarray) -> float:
    """Mean (max - min) token length inside a batch."""
    return float(np.mean([lengths[b].max() - lengths[b].min() for b in batches]))


def test_buckets_cover_every_example_once_with_full_batches():
    lengths = _lengths(1003)
    batches = LengthBucketBatchSampler(lengths, batch_size=16, seed=1).batches(0)
    assert _covers_once(batches, 1003)
    sizes = sorted(len(b) for b in batches)
    assert len(batches) == 63 and sizes[0] == 1003 % 16 and set(sizes[1:]) == {16}


def test_buckets_group_similar_lengths():
    lengths = _lengths()
    bucketed = LengthBucketBatchSampler(lengths, batch_size=16, seed=0).batches(0)
    shuffled = LengthBucketBatchSampler(lengths, batch_size=16, seed=0, bucket_batches=1).batches(0)
    # lengths 5..60: a random batch of 16 spans ~50 tokens, a bucket of 800 sorted ~1 per batch
    assert _spread(bucketed, lengths) < 3 < 40 < _spread(shuffled, lengths)
    padded = sum(len(b) * lengths[b].max() for b in bucketed)
    assert padded < 1.05 * lengths.sum()  # under 5% padding, vs ~70% for random batches


def test_global_sort_gives_disjoint_length_ranges():
    lengths = _lengths(200)
    batches = length_bucketed_batches(lengths, 8, np.random.default_rng(0), bucket_batches=None)
    ranges = sorted((lengths[b].min(), lengths[b].max()) for b in batches)
    assert all(hi <= next_lo for (_, hi), (next_lo, _) in zip(ranges, ranges[1:], strict=False))


def test_bucket_order_depends_only_on_seed_and_epoch():
    lengths = _lengths(300)
    a = LengthBucketBatchSampler(lengths, 8, seed=7)
    b = LengthBucketBatchSampler(lengths, 8, seed=7)
    assert a.batches(0) == b.batches(0) and a.batches(3) == b.batches(3)
    assert a.batches(0) != a.batches(1)  # reshuffled every epoch
    assert a.batches(0) != LengthBucketBatchSampler(lengths, 8, seed=8).batches(0)
    a.set_epoch(3)
    assert list(a) == b.batches(3) and len(a) == 38


def test_works_as_a_dataloader_batch_sampler():
    from torch.utils.data import DataLoader

    sampler = LengthBucketBatchSampler(_lengths(40), 8, seed=0)
    loaded = [batch.tolist() for batch in DataLoader(list(range(40)), batch_sampler=sampler)]
    assert loaded == sampler.batches(0)


def _repetitive_pairs(n: int = 400, seed: int = 0) -> list[tuple[str, str]]:
    """Pairs drawn from only 30 anchors and 50 positives: plain batches of 16 collide often."""
    rng = np.random.default_rng(seed)
    return [(f"anchor {rng.integers(30)}", f"positive {rng.integers(50)}") for _ in range(n)]


def _has_duplicate(batch: list[int], texts) -> bool:
    seen = [t.strip() for i in batch for t in texts[i]]
    return len(seen) != len(set(seen))


@pytest.mark.parametrize("use_lengths", [False, True])
def test_no_duplicates_never_repeats_a_text_and_covers_the_data(use_lengths):
    texts = _repetitive_pairs()
    lengths = _lengths(len(texts)) if use_lengths else None
    sampler = NoDuplicatesBatchSampler(texts, batch_size=16, seed=0, lengths=lengths)
    for epoch in (0, 1):
        batches = sampler.batches(epoch)
        assert _covers_once(batches, len(texts))
        assert not any(_has_duplicate(b, texts) for b in batches)
        assert max(len(b) for b in batches) == 16
    # the property is not vacuous: plain batches of the same data do repeat texts
    plain = LengthBucketBatchSampler(np.ones(len(texts)), 16, seed=0, bucket_batches=1).batches(0)
    assert sum(_has_duplicate(b, texts) for b in plain) > 10


def test_no_duplicates_compares_stripped_text_and_all_columns():
    texts = [("a cat", "a dog"), (" a cat ", "a cow"), ("a hen", "a dog"), ("x", "y")]
    batches = NoDuplicatesBatchSampler(texts, batch_size=4, seed=0).batches(0)
    assert _covers_once(batches, 4)
    for batch in batches:
        assert not ({0, 1} <= set(batch) or {0, 2} <= set(batch))


def test_no_duplicates_is_deterministic_and_keeps_lengths_grouped():
    texts = [(f"s{i}", f"t{i}") for i in range(800)]
    lengths = _lengths(800)
    a = NoDuplicatesBatchSampler(texts, 16, seed=3, lengths=lengths)
    assert a.batches(0) == NoDuplicatesBatchSampler(texts, 16, seed=3, lengths=lengths).batches(0)
    assert a.batches(0) != a.batches(1)
    assert _spread(a.batches(0), lengths) < 3  # no duplicates here: the bucketed plan unchanged


def test_bad_sampler_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        LengthBucketBatchSampler([1, 2], batch_size=0)
    with pytest.raises(ValueError, match="non-empty"):
        LengthBucketBatchSampler([], batch_size=2)
    with pytest.raises(ValueError, match="length mismatch"):
        NoDuplicatesBatchSampler([("a", "b")], batch_size=2, lengths=[1, 2])
