r"""The transformer of a :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder` run by OpenVINO on a CPU.

:func:`to_openvino` converts an encoder's transformer with OpenVINO (``pip install
"sbert-tutor[openvino]"``; Intel's inference runtime, made for CPUs) and returns a new encoder
whose :meth:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder.encode` runs it: the same tokenizer, smart
batching, pooling, dense layers and normalisation, only the transformer's forward pass
:math:`H = \mathrm{BERT}(x)` is OpenVINO's. Nothing else changes, so the embeddings are the torch
encoder's up to the rounding of the precision chosen:

* ``"fp32"``: the same arithmetic as torch's fp32 (differences of about :math:`10^{-6}`);
* ``"bf16"``: matrix products in bfloat16, which CPUs with native bf16 instructions run about
  twice as fast (:func:`sbert_tutor.runtime.precision.cpu_has_native_bf16`);
* ``"auto"``: bf16 where the CPU has native bf16 instructions, fp32 elsewhere (as
  ``compute_dtype="auto"``);
* ``"int8"``: static int8 quantisation by NNCF (Intel's compression library for OpenVINO,
  installed with the extra), which CPUs with int8 dot-product instructions (VNNI, AMX) run fastest.
  Every matrix product :math:`XW` becomes one of 8-bit integers,

  .. math::

     XW \approx s_X s_W \, (Q_X Q_W),

     Q_W = \mathrm{round}(W / s_W), \quad Q_X = \mathrm{round}(X / s_X),

  with one scale :math:`s_W` per output column of :math:`W` and one :math:`s_X` per activation
  tensor, read from the ranges the activations take on ``calibration`` sentences. Before that,
  SmoothQuant (Xiao et al., 2023) moves the activations' outlier channels into the weights,
  :math:`XW = (X\,\mathrm{diag}(c)^{-1})(\mathrm{diag}(c)\,W)`, so that one :math:`s_X` fits
  every channel. The other operations (softmax, layer norm) run as ``"auto"`` does. Unlike bf16,
  int8 moves the embeddings by more than rounding, and by how much depends on the calibration
  sentences, so measure the task metric on held-out data before serving it
  (``benchmarks/cpu_encode.py`` does on STSb); calibrate on sentences like those to be encoded,
  never on the test set.

The converted model is for inference: it has no gradients (train the torch encoder, then
convert it) and cannot be saved (save the torch encoder; converting takes seconds).

Example:
    >>> fast = to_openvino(SentenceEncoder.from_pretrained("sentence-transformers/all-MiniLM-L6-v2"))  # doctest: +SKIP
    >>> fast.encode(["A man is playing a guitar."]).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import torch
from torch import nn

from sbert_tutor.encoders.sentence_encoder import quiet_transformers
from sbert_tutor.runtime.modes import eval_mode
from sbert_tutor.runtime.precision import cpu_has_native_bf16

if TYPE_CHECKING:
    from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

#: ``precision`` names and OpenVINO's ``INFERENCE_PRECISION_HINT`` for each (``"int8"``: for the
#: operations left unquantised, set by :func:`to_openvino` as ``"auto"`` would).
PRECISIONS = {"fp32": "f32", "bf16": "bf16", "int8": None}
_INSTALL = 'pip install "sbert-tutor[openvino]"'
#: Sentences a calibration batch holds (``int8``).
_CALIBRATION_BATCH = 16


def openvino_precision(precision: str = "auto", native_bf16: bool | None = None) -> str:
    """``precision`` as ``"fp32"``, ``"bf16"`` or ``"int8"``: ``"auto"`` is bf16 where the CPU
    computes bf16 natively (``native_bf16`` defaults to
    :func:`~sbert_tutor.runtime.precision.cpu_has_native_bf16`), else fp32.

    Raises:
        ValueError: an unknown name (the message lists the accepted ones).
    """
    key = str(precision).strip().lower()
    if key == "auto":
        native = cpu_has_native_bf16() if native_bf16 is None else native_bf16
        return "bf16" if native else "fp32"
    if key not in PRECISIONS:
        raise ValueError(
            f"precision={precision!r} is not an OpenVINO precision; use 'auto', 'fp32', 'bf16' "
            "or 'int8'"
        )
    return key


class OpenVINOTransformer(nn.Module):
    """A compiled OpenVINO model in the place of a Hugging Face transformer: called with the
    tokenizer's tensors, it returns an object with ``last_hidden_state`` (a float32 CPU tensor),
    as the transformer it replaces does.

    Args:
        compiled: an ``openvino.CompiledModel`` of the transformer.
        config: the transformer's configuration (``hidden_size``, ...), kept for the encoder.
        inputs: the input names the model was converted with (``input_ids``, ``attention_mask``,
            ``token_type_ids``).
        precision: ``"fp32"``, ``"bf16"`` or ``"int8"`` (in words, for
            :meth:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder.describe`).
    """

    def __init__(self, compiled: Any, config: Any, inputs: list[str], precision: str) -> None:
        super().__init__()
        self.compiled = compiled
        self.config = config
        self.inputs = list(inputs)
        self.precision = precision
        # no weights live in torch; this empty tensor tells the encoder the device (the CPU) and
        # that its arguments are float32
        self.anchor = nn.Parameter(torch.zeros(0), requires_grad=False)
        self.requests = compiled.create_infer_request()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> SimpleNamespace:
        """The transformer's ``last_hidden_state`` for one batch, computed by OpenVINO (no
        gradients). ``token_type_ids`` are all zeros when the model takes them and none are
        given; any other keyword is a ``TypeError``."""
        tensors = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            tensors["token_type_ids"] = token_type_ids
        if torch.is_grad_enabled():
            raise RuntimeError(
                "an OpenVINO model has no gradients: train the torch encoder, then convert it "
                "with to_openvino()"
            )
        missing = [name for name in self.inputs if name not in tensors]
        if missing == ["token_type_ids"]:  # a tokenizer that does not make them: all zeros
            tensors = {**tensors, "token_type_ids": torch.zeros_like(tensors["input_ids"])}
        elif missing:
            raise ValueError(f"the OpenVINO model needs inputs {missing}")
        feed = {name: tensors[name].cpu().numpy() for name in self.inputs}
        hidden = self.requests.infer(feed)[self.compiled.output(0)]
        return SimpleNamespace(last_hidden_state=torch.from_numpy(np.asarray(hidden, np.float32)))

    def save_pretrained(self, folder: str | os.PathLike[str]) -> NoReturn:
        """Always a ``TypeError``: the encoder's ``save`` reaches here (``folder`` is where it
        would write), and an OpenVINO model has no Hugging Face folder to write."""
        raise TypeError(
            "an OpenVINO model cannot be saved as a Hugging Face folder: save the torch "
            "encoder it was converted from"
        )


def to_openvino(
    encoder: SentenceEncoder,
    precision: str = "auto",
    threads: int | None = None,
    calibration: Sequence[str] | None = None,
) -> SentenceEncoder:
    """A new encoder whose transformer runs in OpenVINO on the CPU (see the module docstring).

    Args:
        encoder: the torch encoder (on any device; it is converted from the CPU, unchanged).
        precision: ``"auto"``, ``"fp32"``, ``"bf16"`` or ``"int8"`` (``openvino_precision``).
        threads: CPU threads for inference; ``None``: torch's (``torch.get_num_threads()``), so
            that a comparison with torch runs on the same cores.
        calibration: for ``"int8"`` only, and needed there: sentences like those the encoder
            will see (a few hundred; training data, never the test set), whose activation ranges
            set the int8 scales :math:`s_X`.

    Raises:
        ImportError: OpenVINO (or, for int8, NNCF) is not installed (the message says how).
        ValueError: ``"int8"`` without ``calibration`` sentences, or ``calibration`` given for
            another precision.
    """
    try:
        import openvino as ov
    except ImportError as exc:  # pragma: no cover - only without the optional extra
        raise ImportError(f"to_openvino needs OpenVINO: {_INSTALL}") from exc
    chosen = openvino_precision(precision)
    sentences = check_calibration(chosen, calibration)
    model = encoder.model
    home = next(model.parameters()).device
    example = encoder.tokenizer(
        ["an example", "a second, longer example"], padding=True, return_tensors="pt"
    )
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in example]
    try:
        with eval_mode(model), torch.no_grad(), quiet_transformers(), warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)  # tracing's notes on `if`s
            warnings.simplefilter("ignore", FutureWarning)  # transformers' renames, seen by tracing
            warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.trace, OpenVINO's route
            converted = ov.convert_model(
                model.to("cpu"), example_input={n: example[n] for n in names}
            )
    finally:
        model.to(home)
    rest = chosen
    if chosen == "int8":
        converted = quantize_int8(converted, encoder, names, sentences)
        rest = openvino_precision("auto")
    settings = {
        "INFERENCE_PRECISION_HINT": PRECISIONS[rest],
        "INFERENCE_NUM_THREADS": str(threads or torch.get_num_threads()),
        "PERFORMANCE_HINT": "LATENCY",
    }
    compiled = ov.Core().compile_model(converted, "CPU", settings)
    fast = encoder.with_pooling(encoder.pooling)
    fast.model = OpenVINOTransformer(compiled, model.config, names, chosen)
    fast.compute_dtype = None
    version = ov.__version__.split("-")[0]
    detail = (
        chosen if chosen != "int8" else f"int8 by NNCF, calibrated on {len(sentences)} sentences"
    )
    fast.source = f"{encoder.source}; transformer run by OpenVINO {version} ({detail})"
    return fast


def check_calibration(precision: str, calibration: Sequence[str] | None) -> list[str]:
    """The calibration sentences as a list: required (non-empty strings) for ``"int8"``,
    refused for the other precisions, which have nothing to calibrate.

    Raises:
        ValueError: what is missing or misplaced, and what to pass instead.
    """
    if precision != "int8":
        if calibration is not None:
            raise ValueError(
                f"calibration sentences are for precision='int8'; {precision} has no scales to "
                "calibrate: drop calibration=..."
            )
        return []
    if calibration is None or isinstance(calibration, str):
        raise ValueError(
            "precision='int8' needs calibration sentences: pass calibration=[...] with a few "
            "hundred sentences like those you will encode (training data, not the test set)"
        )
    sentences = [str(t) for t in calibration if str(t).strip()]
    if not sentences:
        raise ValueError("calibration holds no non-empty sentence; pass a few hundred sentences")
    return sentences


def quantize_int8(
    converted: Any, encoder: SentenceEncoder, names: list[str], sentences: list[str]
) -> Any:
    """``converted`` (an OpenVINO model of ``encoder``'s transformer) with int8 matrix products:
    NNCF's post-training quantisation for transformers (SmoothQuant, then per-channel weight and
    per-tensor activation scales from ``sentences``, in batches of ``_CALIBRATION_BATCH``)."""
    try:
        import nncf
    except ImportError as exc:  # pragma: no cover - only without the optional extra
        raise ImportError(f"precision='int8' needs NNCF: {_INSTALL}") from exc
    batches = []
    for start in range(0, len(sentences), _CALIBRATION_BATCH):
        tokens = encoder.tokenizer(
            sentences[start : start + _CALIBRATION_BATCH],
            padding=True,
            truncation=True,
            max_length=encoder.max_seq_length,
            return_tensors="np",
        )
        batches.append({n: tokens[n] for n in names})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nncf.quantize(
            converted,
            nncf.Dataset(batches),
            model_type=nncf.ModelType.TRANSFORMER,
            subset_size=len(batches),
        )


__all__ = ["to_openvino"]
