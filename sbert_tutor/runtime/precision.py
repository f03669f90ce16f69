r"""The arithmetic a forward pass runs in: fp32, or fp16/bf16 mixed precision (book chapter 13).

``compute_dtype`` names it; it is *not* sentence-transformers' ``precision``, which quantises the
output embeddings. Under fp16/bf16 the transformer runs in :func:`torch.autocast`: matrix products
in half precision, layer norms, softmax and reductions in fp32; the pooling, dense layers and
normalisation that follow run in fp32, so only the transformer's rounding moves the embedding.

``"auto"`` picks by hardware: bf16 on CUDA GPUs of compute capability 8.0 or more (A100, H100,
L4, ...), fp16 on older ones (T4, V100: no bf16 tensor cores); on a CPU, bf16 where the CPU has
native bf16 instructions (:func:`cpu_has_native_bf16`: x86's ``avx512_bf16`` or ``amx_bf16``, Arm's
``bf16``), fp32 elsewhere: without them PyTorch emulates bf16, usually slower than fp32. The
default (``compute_dtype=None``) stays the weights' own fp32, the same digits on every machine.

On CUDA under fp16/bf16 the scaled-dot-product attention leaves out cuDNN's kernel: torch sends a
masked (padded) half-precision attention to cuDNN first on recent GPUs, and cuDNN builds a new
execution plan, a one-off cost of about 0.1-0.5 s, for every batch shape it has not seen, which
length-sorted batches keep producing. Flash, memory-efficient and math kernels have no such cost.

Gradients stay off during inference through :func:`inference_context`: ``torch.inference_mode``,
except under autocast, where it is ``torch.no_grad``. Autocast keeps the half-precision copy of
each weight for the whole context, so a weight is cast once an ``encode`` call, but PyTorch skips
that cache in inference mode and casts every weight again for every batch (a few percent of a
bf16 CPU encode of all-MiniLM-L6-v2 in batches of 64).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from functools import lru_cache
from pathlib import Path

import torch

__all__ = [
    "autocast_dtype",
    "compute_context",
    "cpu_flags",
    "cpu_has_native_bf16",
    "inference_context",
    "resolve_compute_dtype",
]

#: Names accepted for ``compute_dtype`` (and the torch dtypes themselves).
_COMPUTE_DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "float32": torch.float32,
    "fp16": torch.float16,
    "float16": torch.float16,
    "half": torch.float16,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
}
_HALF_DTYPES = (torch.float16, torch.bfloat16)
_SHORT_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


#: CPU feature flags (as Linux's ``/proc/cpuinfo`` names them) of native bf16 arithmetic: x86's
#: AVX-512 BF16 and AMX (Intel Cooper Lake and later, AMD Zen 4 and later), Arm's BF16 (Graviton3,
#: Neoverse V1/N2, ...).
_NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})
_CPUINFO = Path("/proc/cpuinfo")


@lru_cache(maxsize=1)
def cpu_flags(cpuinfo: Path = _CPUINFO) -> frozenset[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (x86 ``flags``, Arm ``Features``); empty
    where that file does not exist (macOS, Windows)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            flags.update(value.split())
    return frozenset(flags)


def cpu_has_native_bf16(flags: frozenset[str] | set[str] | None = None) -> bool:
    """Whether the CPU computes bf16 natively (one of ``_NATIVE_BF16_FLAGS``; ``flags``
    defaults to ``cpu_flags``). Without it PyTorch emulates bf16 matrix products, usually
    slower than fp32, so ``"auto"`` keeps fp32 there."""
    return bool(_NATIVE_BF16_FLAGS & (cpu_flags() if flags is None else set(flags)))


def auto_compute_dtype(
    device: torch.device | str,
    capability: tuple[int, int] | None = None,
    native_bf16: bool | None = None,
) -> torch.dtype:
    """``compute_dtype="auto"``: on CUDA, bf16 from compute capability 8.0, fp16 below; on a CPU,
    bf16 where :func:`cpu_has_native_bf16`, else fp32; fp32 on any other device.
    ``capability`` and ``native_bf16`` default to the hardware's own (given in tests)."""
    dev = torch.device(device)
    if dev.type == "cpu":
        native = cpu_has_native_bf16() if native_bf16 is None else native_bf16
        return torch.bfloat16 if native else torch.float32
    if dev.type != "cuda":
        return torch.float32
    if capability is None:
        capability = torch.cuda.get_device_capability(dev)
    return torch.bfloat16 if tuple(capability) >= (8, 0) else torch.float16


def resolve_compute_dtype(
    setting: str | torch.dtype | None,
    device: torch.device | str,
    capability: tuple[int, int] | None = None,
    native_bf16: bool | None = None,
) -> torch.dtype | None:
    """``compute_dtype`` as a torch dtype; ``None`` stays ``None`` (the weights' own dtype).

    Raises:
        ValueError: an unknown name or dtype (the message lists the accepted ones).
    """
    if setting is None:
        return None
    if isinstance(setting, torch.dtype):
        if setting in _SHORT_NAMES:
            return setting
    elif isinstance(setting, str):
        key = setting.strip().lower()
        if key == "auto":
            return auto_compute_dtype(device, capability, native_bf16)
        if key in _COMPUTE_DTYPES:
            return _COMPUTE_DTYPES[key]
    raise ValueError(
        f"compute_dtype={setting!r} is not a compute precision; use 'auto', 'fp32', 'fp16', "
        "'bf16' or torch.float32/float16/bfloat16 (sentence-transformers' precision= is about "
        "quantising the output, not this)"
    )


def autocast_dtype(
    compute: torch.dtype | None, weights: torch.dtype, explicit: bool = True
) -> torch.dtype | None:
    """The dtype to autocast to, or ``None`` to run the weights as they are.

    Half precision over fp32 weights autocasts. A request equal to the weights' dtype needs
    nothing. Weights already in half precision cannot be computed in another precision by
    autocast: an explicit request is an error that says what to do; ``"auto"`` keeps them.
    """
    if compute is None or compute == weights:
        return None
    if weights != torch.float32:
        if not explicit:
            return None
        raise ValueError(
            f"the model's weights are {weights}; compute_dtype={_SHORT_NAMES.get(compute, compute)} "
            "needs float32 weights (call encoder.float() first, or leave compute_dtype unset to "
            "run in the weights' own precision)"
        )
    return compute if compute in _HALF_DTYPES else None


def avoid_cudnn_attention(device: torch.device | str, dtype: torch.dtype | None) -> bool:
    """True on CUDA under fp16/bf16, where cuDNN attention's per-shape plans cost most."""
    return torch.device(device).type == "cuda" and dtype in _HALF_DTYPES


@contextmanager
def _sdpa_without_cudnn() -> Iterator[None]:
    """Scaled-dot-product attention without the cuDNN kernel (flash, memory-efficient, math).

    The backend switches are process-wide in torch, so this holds for every thread while active;
    a torch without :mod:`torch.nn.attention` (< 2.3) is left as it is.
    """
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # pragma: no cover - torch < 2.3
        yield
        return
    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    with sdpa_kernel(backends):
        yield


@contextmanager
def compute_context(
    device: torch.device | str,
    autocast_to: torch.dtype | None,
    weights: torch.dtype = torch.float32,
    cudnn_attention: bool | None = None,
) -> Iterator[None]:
    """Autocast to ``autocast_to`` (``None``: none) on ``device``'s type; on CUDA, when the
    arithmetic is fp16/bf16 (autocast, or half-precision weights), attention without cuDNN unless
    ``cudnn_attention=True``."""
    dev = torch.device(device)
    effective = autocast_to if autocast_to is not None else weights
    if cudnn_attention is None:
        cudnn_attention = not avoid_cudnn_attention(dev, effective)
    with ExitStack() as stack:
        if autocast_to is not None:
            stack.enter_context(torch.autocast(device_type=dev.type, dtype=autocast_to))
        if not cudnn_attention:
            stack.enter_context(_sdpa_without_cudnn())
        yield


def inference_context(autocast_to: torch.dtype | None) -> AbstractContextManager[None]:
    """Gradients off for a forward pass under :func:`compute_context`: ``torch.no_grad()`` when
    ``autocast_to`` is set, so autocast's cache casts each weight once for the whole context
    (inference mode disables that cache), else ``torch.inference_mode()``. Enter it *before*
    :func:`compute_context`."""
    if autocast_to is not None:
        return torch.no_grad()
    return torch.inference_mode()


@contextmanager
def full_precision(device: torch.device | str) -> Iterator[None]:
    """Autocast off inside a :func:`compute_context` (pooling, dense layers): fp32 arithmetic,
    while the weight casts autocast cached for the transformer stay cached."""
    with torch.autocast(device_type=torch.device(device).type, enabled=False):
        yield
