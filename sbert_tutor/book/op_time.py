r"""Where an encode spends its time, by kind of operation (book chapter 13).

A precision or a runtime does not speed up every operation alike. Split the time :math:`T` of
an fp32 encode into the kinds of operation :math:`g` (matrix products, attention, casts, the
rest), :math:`T = \sum_g T_g`; if a faster precision divides the time of kind :math:`g` by
:math:`s_g`, the whole encode is faster by

.. math::

    S = \frac{T}{\sum_g T_g / s_g},

Amdahl's law: a kind that takes a share :math:`p_g = T_g / T` and is not sped up
(:math:`s_g = 1`) caps :math:`S` below :math:`1 / p_g`, however fast the rest becomes.

:func:`time_by_operation` measures the :math:`T_g` of one ``encode`` call with PyTorch's
profiler: each operator's *self* time (without the operators it calls, so nothing is counted
twice), summed by the kind :data:`OPERATION_KINDS` gives it. :func:`operation_speedups` puts two
such splits side by side, the :math:`s_g` and the :math:`S` they make. Run it on the CPU: on a
GPU the host's time is not the device's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch

__all__ = ["OPERATION_KINDS", "OTHER", "operation_speedups", "time_by_operation"]

#: The kinds an operator's self time is summed into, by PyTorch operator name; any other operator
#: counts as :data:`OTHER`. "attention" is the fused scaled-dot-product kernels (and a softmax);
#: an attention written out as ``matmul``/``softmax`` puts its two products in "matrix products".
OPERATION_KINDS: dict[str, tuple[str, ...]] = {
    "matrix products": ("aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm"),
    "attention": (
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_attention_math",
        "aten::_softmax",
    ),
    "casts and copies": ("aten::copy_", "aten::_to_copy"),
}
#: The kind of every operator :data:`OPERATION_KINDS` does not name: element-wise operations,
#: layer norms, embeddings, pooling, indexing.
OTHER = "element-wise, norms and the rest"
_KIND_OF = {op: kind for kind, ops in OPERATION_KINDS.items() for op in ops}


def time_by_operation(
    encoder: Any,
    sentences: Sequence[str],
    compute_dtype: str | torch.dtype | None = None,
    batch_size: int = 64,
) -> pd.DataFrame:
    """The self time of one ``encoder.encode(sentences, compute_dtype=..., batch_size=...)`` on the
    CPU, by kind of operation: one row per kind of :data:`OPERATION_KINDS` and :data:`OTHER`, with
    ``seconds`` (:math:`T_g`), ``calls`` (operator calls) and ``share`` (:math:`T_g / T`). One
    batch is encoded first, untimed, so one-off costs stay out.

    Raises:
        ValueError: when the encoder is not on the CPU or there are no sentences.
    """
    from torch.profiler import ProfilerActivity, profile

    if torch.device(encoder.device).type != "cpu":
        raise ValueError(
            f"time_by_operation profiles the CPU, and the encoder is on {encoder.device}: move it "
            "with encoder.to('cpu'), or profile a GPU with torch.profiler and ProfilerActivity.CUDA"
        )
    if isinstance(sentences, str) or not sentences:
        raise ValueError("time_by_operation needs a non-empty list of sentences, not a string")
    kwargs = {"batch_size": batch_size, "compute_dtype": compute_dtype, "show_progress_bar": False}
    encoder.encode(list(sentences[:batch_size]), **kwargs)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        encoder.encode(list(sentences), **kwargs)
    seconds = dict.fromkeys([*OPERATION_KINDS, OTHER], 0.0)
    calls = dict.fromkeys(seconds, 0)
    for event in prof.key_averages():
        kind = _KIND_OF.get(event.key, OTHER)
        seconds[kind] += event.self_cpu_time_total / 1e6
        calls[kind] += event.count
    table = pd.DataFrame({"seconds": seconds, "calls": calls})
    table["share"] = table["seconds"] / table["seconds"].sum()
    table.index.name = "operation"
    return table


def operation_speedups(splits: Mapping[str, pd.DataFrame], baseline: str) -> pd.DataFrame:
    """Splits of :func:`time_by_operation` side by side, by name (e.g. ``{"fp32": ..., "bf16":
    ...}``): each split's seconds, the baseline's ``share`` :math:`p_g`, and each other split's
    speedup :math:`s_g` over the baseline a kind; the last row, ``whole encode``, holds the totals
    and :math:`S`."""
    if baseline not in splits:
        raise ValueError(f"baseline {baseline!r} is not one of the splits: {sorted(splits)}")
    table = pd.DataFrame({f"{name} s": split["seconds"] for name, split in splits.items()})
    table.loc["whole encode"] = table.sum()
    base = table[f"{baseline} s"]
    table[f"{baseline} share"] = base / base.iloc[-1]
    for name in splits:
        if name != baseline:
            table[f"{name} speedup"] = base / table[f"{name} s"]
    return table
