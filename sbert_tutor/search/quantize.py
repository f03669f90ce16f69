r"""Quantised embeddings: fewer bits a coordinate, for cheaper storage and search.

The same five precisions as sentence-transformers' ``quantize_embeddings`` (and the same
numbers), for :meth:`sbert_tutor.encoders.sentence_encoder.SentenceEncoder.encode` ``precision=...``:

* ``float32``: unchanged.
* ``uint8`` / ``int8`` (scalar quantisation): each dimension :math:`j` is cut into 256 equal
  buckets between its minimum :math:`a_j` and maximum :math:`b_j` over a calibration set (by
  default the embeddings themselves, so at least two are needed):
  :math:`q_j = \mathrm{clip}(\lfloor (x_j - a_j) / s_j \rfloor, 0, 255)` with
  :math:`s_j = (b_j - a_j) / 255` (1 when :math:`a_j = b_j`); ``int8`` stores :math:`q_j - 128`.
* ``ubinary`` / ``binary``: one bit a dimension, :math:`[x_j > 0]`, packed 8 to a byte
  (``numpy.packbits``; the vector has :math:`\lceil d/8 \rceil` bytes); ``binary`` stores the byte
  minus 128 as ``int8``. Hamming distance between packed vectors approximates angle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["bytes_per_vector", "quantization_ranges", "quantize_embeddings"]

#: The precisions :func:`quantize_embeddings` accepts (described in the module docstring).
PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")


def check_precision(precision: str) -> str:
    """Return ``precision`` if known, else raise a ``ValueError`` listing the choices."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    return precision


def quantization_ranges(calibration: np.ndarray) -> np.ndarray:
    """``[2, d]``: per-dimension minimum and maximum of ``calibration`` (``[n, d]``, n >= 2)."""
    calibration = np.asarray(calibration, dtype=np.float32)
    if calibration.ndim != 2 or calibration.shape[0] < 2:
        raise ValueError(
            "int8/uint8 quantisation needs the range of every dimension, which one embedding "
            "cannot give: encode at least two sentences, or pass ranges= / calibration_embeddings= "
            "computed on a representative set"
        )
    return np.vstack((calibration.min(axis=0), calibration.max(axis=0)))


def quantize_embeddings(
    embeddings: Any,
    precision: str,
    ranges: np.ndarray | None = None,
    calibration_embeddings: np.ndarray | None = None,
) -> np.ndarray:
    """Quantise ``[n, d]`` float embeddings to ``precision`` (see the module docstring).

    Args:
        embeddings: float array (or tensor) ``[n, d]``.
        precision: one of ``PRECISIONS``.
        ranges: ``[2, d]`` minimum and maximum per dimension for ``int8``/``uint8``.
        calibration_embeddings: embeddings to take the ranges from instead (recommended: a
            representative sample, so that every batch is quantised on the same scale).
    """
    check_precision(precision)
    if hasattr(embeddings, "detach"):
        embeddings = embeddings.detach().cpu().numpy()
    x = np.asarray(embeddings)
    if x.dtype in (np.int8, np.uint8):
        raise TypeError("embeddings to quantise must be floats, not already-quantised integers")
    if precision == "float32":
        return x.astype(np.float32)
    if precision in ("int8", "uint8"):
        if ranges is None and calibration_embeddings is None and x.shape[0] == 0:
            ranges = np.zeros((2, x.shape[-1]), dtype=np.float32)  # no rows: nothing to scale
        if ranges is None:
            ranges = quantization_ranges(
                x if calibration_embeddings is None else calibration_embeddings
            )
        ranges = np.asarray(ranges, dtype=np.float32)
        starts = ranges[0]
        steps = (ranges[1] - starts) / 255
        steps = np.where(steps == 0, 1, steps)
        q = np.clip(np.floor((x - starts) / steps), 0, 255)
        return q.astype(np.uint8) if precision == "uint8" else (q - 128).astype(np.int8)
    bits = np.packbits(x > 0, axis=-1)
    return bits if precision == "ubinary" else (bits.astype(np.int16) - 128).astype(np.int8)


def bytes_per_vector(dim: int, precision: str) -> int:
    r"""Bytes one ``dim``-dimensional vector takes in ``precision``: :math:`4d`, :math:`d` or
    :math:`\lceil d/8 \rceil` (float32, int8/uint8, binary/ubinary)."""
    check_precision(precision)
    if precision == "float32":
        return 4 * dim
    if precision in ("int8", "uint8"):
        return dim
    return -(-dim // 8)
