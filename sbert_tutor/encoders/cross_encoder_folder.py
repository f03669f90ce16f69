"""Reading and writing sentence-transformers' CrossEncoder folders, every version of them.

A CrossEncoder folder is a Hugging Face ``AutoModelForSequenceClassification`` folder (weights,
``config.json`` with ``num_labels``, the tokenizer) plus the *activation* that
``CrossEncoder.predict`` puts on the logits, stored as a dotted class name such as
``"torch.nn.modules.activation.Sigmoid"``. Where that name lives changed between versions;
``read_cross_encoder_folder`` reads each:

==========================  ======================================================================
written by                  layout
==========================  ======================================================================
sentence-transformers < 4   ``config.json`` key ``sbert_ce_default_activation_function``
4.x - 5.x                   ``config.json`` key ``sentence_transformers``: ``{"activation_fn": ...,
                            "version": ...}``
6.x                         ``modules.json`` with one ``Transformer`` module (``"path": ""``,
                            ``transformer_task: "sequence-classification"`` in
                            ``sentence_bert_config.json``) and ``config_sentence_transformers.json``
                            with ``"model_type": "CrossEncoder"`` and ``"activation_fn"``
==========================  ======================================================================

No activation saved means sentence-transformers' default: sigmoid for one label, identity for
several. ``max_seq_length`` is the tokenizer's ``model_max_length`` (which ``CrossEncoder(...,
max_length=N)`` sets and saves), capped at the model's ``max_position_embeddings``; a
``max_seq_length`` in ``sentence_bert_config.json`` wins. A sentence-transformers *bi-encoder*
folder (``model_type`` ``SentenceTransformer``) loads as sentence-transformers 6.x loads it: its
transformer with a new, randomly initialised classification head.

``write_cross_encoder_config`` writes the 4.x-5.x key and the < 4 key into ``config.json``,
so the folder loads with its activation in sentence-transformers 2.x to 6.x.
"""

from __future__ import annotations

import importlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from sbert_tutor.encoders.dense import activation_name
from sbert_tutor.encoders.st_format import UnsupportedModelError, read_json, read_st_config

logger = logging.getLogger(__name__)

#: ``config_sentence_transformers.json``'s ``model_type`` of a cross-encoder.
_MODEL_TYPE = "CrossEncoder"
#: The ``config.json`` keys that hold the activation: 4.x-5.x, then < 4.
_CONFIG_KEY = "sentence_transformers"
_LEGACY_CONFIG_KEY = "sbert_ce_default_activation_function"
_TASK = "sequence-classification"


@dataclass(frozen=True)
class CrossEncoderFolder:
    """What a folder says beyond the Hugging Face model: where the transformer is, the saved
    activation's dotted name (``None``: the default), ``max_seq_length`` (``None``: the
    tokenizer's), keyword arguments for the tokenizer and the layout in words."""

    transformer_path: Path
    activation: str | None
    max_seq_length: int | None
    tokenizer_kwargs: dict[str, Any] = field(default_factory=dict)
    layout: str = "plain Hugging Face model"


def _config_activation(folder: Path) -> tuple[str | None, str | None]:
    """``(activation, layout)`` from ``config.json`` (the 4.x-5.x key, else the < 4 key)."""
    path = folder / "config.json"
    cfg = read_json(path) if path.is_file() else {}
    saved = cfg.get(_CONFIG_KEY)
    if isinstance(saved, dict) and saved.get("activation_fn"):
        return str(saved["activation_fn"]), "sentence-transformers 4.x-5.x CrossEncoder folder"
    if cfg.get(_LEGACY_CONFIG_KEY):
        return str(cfg[_LEGACY_CONFIG_KEY]), "sentence-transformers < 4 CrossEncoder folder"
    return None, None


def read_cross_encoder_folder(folder: Path) -> CrossEncoderFolder:
    """Parse a model folder as sentence-transformers' ``CrossEncoder`` does (module docstring).

    Raises:
        UnsupportedModelError: a 6.x folder whose pipeline is more than one sequence-classification
            transformer (e.g. a causal LM reranker with ``LogitScore``), or a folder of another
            model type (a sparse encoder ...); the message says to load it with
            sentence-transformers.
    """
    activation, layout = _config_activation(folder)
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return CrossEncoderFolder(
            folder, activation, None, {}, layout or "plain Hugging Face model"
        )
    st_file = folder / "config_sentence_transformers.json"
    st_config = read_json(st_file) if st_file.is_file() else {}
    kind = st_config.get("model_type", "SentenceTransformer")
    if kind == "SentenceTransformer":
        transformer = read_st_config(folder, pooling="mean").transformer_path  # pooling unread
        return CrossEncoderFolder(
            transformer,
            None,
            None,
            {},
            "sentence-transformers bi-encoder folder (its transformer, a new classification head)",
        )
    if kind != _MODEL_TYPE:
        raise UnsupportedModelError(
            f"{st_file} says this is a {kind}, not a CrossEncoder; load it with "
            f"sentence-transformers' {kind}."
        )
    modules = read_json(modules_file)
    types = [str(m.get("type", "")) for m in modules] if isinstance(modules, list) else []
    if len(types) != 1 or not types[0].endswith(".Transformer") or modules[0].get("path", ""):
        raise UnsupportedModelError(
            f"{modules_file} lists the modules {types}; sbert_tutor runs a CrossEncoder that is "
            "one sequence-classification transformer at the folder's root. Load this model with "
            "sentence-transformers' CrossEncoder instead."
        )
    module_file = folder / "sentence_bert_config.json"
    module_config = read_json(module_file) if module_file.is_file() else {}
    task = module_config.get("transformer_task", _TASK)
    if task != _TASK:
        raise UnsupportedModelError(
            f"{module_file} asks for transformer_task={task!r}; sbert_tutor's CrossEncoder runs "
            f"{_TASK!r} models only. Load this model with sentence-transformers instead."
        )
    tokenizer_kwargs = dict(
        module_config.get("processor_kwargs") or module_config.get("tokenizer_args") or {}
    )
    tokenizer_kwargs.pop("trust_remote_code", None)
    return CrossEncoderFolder(
        folder,
        st_config.get("activation_fn") or activation,
        module_config.get("max_seq_length"),
        tokenizer_kwargs,
        "sentence-transformers 6.x CrossEncoder folder",
    )


def _default_activation(num_labels: int) -> nn.Module:
    """sentence-transformers' default: :math:`\\sigma(z) = 1 / (1 + e^{-z})` for one label (a
    score in (0, 1)), the identity (raw logits) for several."""
    return nn.Sigmoid() if num_labels == 1 else nn.Identity()


def load_activation(name: str | None, num_labels: int) -> nn.Module:
    """The activation a folder names, built with no arguments; the default for ``None``.

    Only classes under ``torch.`` are built (as sentence-transformers does without
    ``trust_remote_code``); any other name is logged and replaced by the default.
    """
    if name is None:
        return _default_activation(num_labels)
    module_name, _, class_name = name.rpartition(".")
    if not name.startswith("torch.") or not module_name:
        logger.warning(
            "activation %r is not a torch class; using the default (%s) instead. Pass "
            "activation_fn=... to from_pretrained to choose one.",
            name,
            type(_default_activation(num_labels)).__name__,
        )
        return _default_activation(num_labels)
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        raise ValueError(
            f"the folder names the activation {name!r}, which this torch does not have; pass "
            "activation_fn=torch.nn.Sigmoid() (or another) to from_pretrained"
        ) from None
    return cls()


def write_cross_encoder_config(folder: Path, activation: Any) -> None:
    """Add the activation to ``folder/config.json`` (written by ``save_pretrained``) under the
    4.x-5.x key and the < 4 key, which sentence-transformers 2.x to 6.x read."""
    path = folder / "config.json"
    cfg = read_json(path)
    name = activation_name(activation)
    cfg[_CONFIG_KEY] = {"activation_fn": name}
    cfg[_LEGACY_CONFIG_KEY] = name
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")


__all__ = ["CrossEncoderFolder"]
