r"""The transformer of a :class:`~sbert_tutor.encoder.SentenceEncoder` run by OpenVINO on a CPU.

:func:`to_openvino` converts an encoder's transformer with OpenVINO (``pip install
"sbert-tutor[openvino]"``; Intel's inference runtime, made for CPUs) and returns a new encoder
whose :meth:`~sbert_tutor.encoder.SentenceEncoder.encode` runs it: the same tokenizer, smart
batching, pooling, dense layers and normalisation, only the transformer's forward pass
:math:`H = \mathrm{BERT}(x)` is OpenVINO's. Nothing else changes, so the embeddings are the torch
encoder's up to the rounding of the precision chosen:

* ``"fp32"``: the same arithmetic as torch's fp32 (differences of about :math:`10^{-6}`);
* ``"bf16"``: matrix products in bfloat16, which CPUs with native bf16 instructions run about
  twice as fast (:func:`sbert_tutor.compute.cpu_has_native_bf16`);
* ``"auto"``: bf16 where the CPU has native bf16 instructions, fp32 elsewhere (as
  ``compute_dtype="auto"``).

The converted model is for inference: it has no gradients (train the torch encoder, then
convert it) and cannot be saved (save the torch encoder; converting takes seconds).

Example:
    >>> fast = to_openvino(SentenceEncoder.from_pretrained("sentence-transformers/all-MiniLM-L6-v2"))  # doctest: +SKIP
    >>> fast.encode(["A man is playing a guitar."]).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from sbert_tutor.compute import cpu_has_native_bf16
from sbert_tutor.encoder import quiet_transformers

if TYPE_CHECKING:
    from sbert_tutor.encoder import SentenceEncoder

#: ``precision`` names and OpenVINO's ``INFERENCE_PRECISION_HINT`` for each.
PRECISIONS = {"fp32": "f32", "bf16": "bf16"}
INSTALL = 'pip install "sbert-tutor[openvino]"'


def openvino_precision(precision: str = "auto", native_bf16: bool | None = None) -> str:
    """``precision`` as ``"fp32"`` or ``"bf16"``: ``"auto"`` is bf16 where the CPU computes bf16
    natively (``native_bf16`` defaults to :func:`~sbert_tutor.compute.cpu_has_native_bf16`).

    Raises:
        ValueError: an unknown name (the message lists the accepted ones).
    """
    key = str(precision).strip().lower()
    if key == "auto":
        native = cpu_has_native_bf16() if native_bf16 is None else native_bf16
        return "bf16" if native else "fp32"
    if key not in PRECISIONS:
        raise ValueError(
            f"precision={precision!r} is not an OpenVINO precision; use 'auto', 'fp32' or 'bf16'"
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
        precision: ``"fp32"`` or ``"bf16"`` (in words, for :meth:`~sbert_tutor.encoder.SentenceEncoder.describe`).
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

    def forward(self, **tensors: torch.Tensor) -> SimpleNamespace:
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

    def save_pretrained(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "an OpenVINO model cannot be saved as a Hugging Face folder: save the torch "
            "encoder it was converted from"
        )


def to_openvino(
    encoder: SentenceEncoder, precision: str = "auto", threads: int | None = None
) -> SentenceEncoder:
    """A new encoder whose transformer runs in OpenVINO on the CPU (see the module docstring).

    Args:
        encoder: the torch encoder (on any device; it is converted from the CPU, unchanged).
        precision: ``"auto"``, ``"fp32"`` or ``"bf16"`` (:func:`openvino_precision`).
        threads: CPU threads for inference; ``None``: torch's (``torch.get_num_threads()``), so
            that a comparison with torch runs on the same cores.

    Raises:
        ImportError: OpenVINO is not installed (the message says how to install it).
    """
    try:
        import openvino as ov
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ImportError(f"to_openvino needs OpenVINO: {INSTALL}") from exc
    chosen = openvino_precision(precision)
    model = encoder.model
    home = next(model.parameters()).device
    example = encoder.tokenizer(
        ["an example", "a second, longer example"], padding=True, return_tensors="pt"
    )
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in example]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), quiet_transformers(), warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)  # tracing's notes on `if`s
            warnings.simplefilter("ignore", FutureWarning)  # transformers' renames, seen by tracing
            warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.trace, OpenVINO's route
            converted = ov.convert_model(
                model.to("cpu"), example_input={n: example[n] for n in names}
            )
    finally:
        model.to(home)
        model.train(was_training)
    settings = {
        "INFERENCE_PRECISION_HINT": PRECISIONS[chosen],
        "INFERENCE_NUM_THREADS": str(threads or torch.get_num_threads()),
        "PERFORMANCE_HINT": "LATENCY",
    }
    compiled = ov.Core().compile_model(converted, "CPU", settings)
    fast = encoder.with_pooling(encoder.pooling)
    fast.model = OpenVINOTransformer(compiled, model.config, names, chosen)
    fast.compute_dtype = None
    version = ov.__version__.split("-")[0]
    fast.source = f"{encoder.source}; transformer run by OpenVINO {version} ({chosen})"
    return fast
