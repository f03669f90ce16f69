"""``sbert_tutor.book.op_time``: an encode's time by kind of operation, and Amdahl's law over it.

References: the calls are counted independently with forward hooks on the model's modules; the
speedup arithmetic is checked on a hand-worked split.
"""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from sbert_tutor import SentenceEncoder
from sbert_tutor.book.op_time import OPERATION_KINDS, OTHER, operation_speedups, time_by_operation

pytestmark = pytest.mark.usefixtures("single_thread")

SENTENCES = [
    f"sentence {i} of the test, a little longer than the one before" * (1 + i % 3)
    for i in range(10)
]


def _module_calls(enc: SentenceEncoder, sentences: list[str], batch_size: int, compute_dtype=None):
    """Forward calls of the model's Linear layers and of its self-attention blocks, by hooks."""
    counts = {"linear": 0, "attention": 0}

    def hook(kind):
        def count(*_):
            counts[kind] += 1

        return count

    handles = []
    for module in enc.model.modules():
        if isinstance(module, torch.nn.Linear):
            handles.append(module.register_forward_hook(hook("linear")))
        elif type(module).__name__.endswith("SelfAttention"):
            handles.append(module.register_forward_hook(hook("attention")))
    try:
        enc.encode(sentences, batch_size=batch_size, compute_dtype=compute_dtype)
    finally:
        for h in handles:
            h.remove()
    return counts


def test_kinds_count_the_models_own_calls(tiny_bert):
    bert, tok = tiny_bert
    enc = SentenceEncoder(bert, tok)
    casts = {}
    for compute_dtype in (None, "bf16"):
        split = time_by_operation(enc, SENTENCES, compute_dtype=compute_dtype, batch_size=4)
        hooks = _module_calls(enc, SENTENCES, 4, compute_dtype)
        assert hooks["attention"] == 2 * 3  # 2 layers, 3 batches: the hooks see the model run
        assert split.loc["matrix products", "calls"] == hooks["linear"]
        assert split.loc["attention", "calls"] == hooks["attention"]
        assert list(split.index) == [*OPERATION_KINDS, OTHER]
        assert (split["seconds"] > 0).loc[["matrix products", "attention", OTHER]].all()
        assert split["share"].sum() == pytest.approx(1.0)
        casts[compute_dtype] = split.loc["casts and copies", "calls"]
    assert casts["bf16"] > casts[None]  # autocast adds the casts to bf16 and back


def test_speedups_follow_amdahls_law():
    """A hand-worked split: matrix products 6 s -> 2 s (3x), attention 2 s -> 2 s (1x), casts
    0 -> 0.5 s, the rest 2 s -> 1.5 s. The whole: 10 s -> 6 s, 1.667x, below the 3x of the
    products because attention keeps its 2 s."""

    def split(values):
        return pd.DataFrame({"seconds": dict(zip([*OPERATION_KINDS, OTHER], values, strict=True))})

    table = operation_speedups(
        {"fp32": split([6.0, 2.0, 0.0, 2.0]), "bf16": split([2.0, 2.0, 0.5, 1.5])}, "fp32"
    )
    assert table.loc["whole encode", "fp32 s"] == 10.0
    assert table.loc["whole encode", "bf16 s"] == 6.0
    assert table.loc["whole encode", "bf16 speedup"] == pytest.approx(10 / 6)
    assert table.loc["matrix products", "bf16 speedup"] == pytest.approx(3.0)
    assert table.loc["attention", "bf16 speedup"] == pytest.approx(1.0)
    assert table.loc["matrix products", "fp32 share"] == pytest.approx(0.6)
    with pytest.raises(ValueError, match="baseline 'fp16' is not one of the splits"):
        operation_speedups({"fp32": split([1, 1, 1, 1])}, "fp16")


def test_bad_input_says_what_to_do(tiny_bert, monkeypatch):
    bert, tok = tiny_bert
    enc = SentenceEncoder(bert, tok)
    with pytest.raises(ValueError, match="non-empty list of sentences"):
        time_by_operation(enc, "one sentence")
    with pytest.raises(ValueError, match="non-empty list"):
        time_by_operation(enc, [])
    monkeypatch.setattr(SentenceEncoder, "device", property(lambda self: torch.device("cuda", 0)))
    with pytest.raises(ValueError, match=r"encoder.to\('cpu'\)"):
        time_by_operation(enc, SENTENCES)
