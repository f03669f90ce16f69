"""Reading and writing the sentence-transformers model-folder format, every version of it.

A sentence-transformers folder is a Hugging Face model plus a ``modules.json`` that lists the
pipeline, each module with its sub-folder: ``Transformer`` -> ``Pooling`` -> optional ``Dense``
layers -> optional ``Normalize``. What changed between versions, and what ``read_st_config``
reads:

==========================  ======================================================================
written by                  layout
==========================  ======================================================================
sentence-transformers < 2   the transformer in a sub-folder (``0_Transformer/``, or ``0_BERT/``
                            with type ``models.BERT`` before 0.3), its ``sentence_bert_config.json``
                            (or ``sentence_roberta_config.json`` ...) inside that sub-folder.
2.x - 5.x                   the transformer at the root (``"path": ""``); module types
                            ``sentence_transformers.models.*``; ``1_Pooling/config.json`` with
                            ``word_embedding_dimension`` and one boolean per mode
                            (``pooling_mode_mean_tokens`` ...; several true = concatenation);
                            ``sentence_bert_config.json`` with ``max_seq_length``.
6.x                         module types ``sentence_transformers.base.modules.transformer.
                            Transformer``, ``sentence_transformers.sentence_transformer.modules.
                            pooling.Pooling`` ...; ``1_Pooling/config.json`` is
                            ``{"embedding_dimension": d, "pooling_mode": "mean"}`` (a list for a
                            concatenation); ``max_seq_length`` is no longer written: it is the
                            tokenizer's ``model_max_length``.
==========================  ======================================================================

``max_seq_length`` follows sentence-transformers: the value in the module config when there is
one, else the tokenizer's ``model_max_length``, capped at the model's ``max_position_embeddings``
(the capping is done by :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder`). ``config_sentence_
transformers.json`` may name instruction ``prompts``, a ``default_prompt_name`` and the
``similarity_fn_name``.

Modules other than Transformer, Pooling, Dense and Normalize (CNN, LSTM, WordEmbeddings,
StaticEmbedding, Router, custom code) get a clear error: load such models with
sentence-transformers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sbert_tutor.encoders.pooling import check_pooling, pooling_modes
from sbert_tutor.similarity import SIMILARITY_FUNCTIONS

#: Old boolean pooling keys -> mode, in the order sentence-transformers concatenates them.
_LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
#: Names of the transformer module config, newest first (sentence-transformers tries them all).
_TRANSFORMER_CONFIG_FILES = (
    "sentence_bert_config.json",
    "sentence_roberta_config.json",
    "sentence_distilbert_config.json",
    "sentence_camembert_config.json",
    "sentence_albert_config.json",
    "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
)
#: Module class names that are a Hugging Face transformer (the last ones from before 0.3).
_TRANSFORMER_KINDS = {
    "Transformer",
    "BERT",
    "RoBERTa",
    "DistilBERT",
    "ALBERT",
    "CamemBERT",
    "XLMRoBERTa",
    "XLNet",
    "T5",
}
_SUPPORTED = "Transformer -> Pooling -> Dense (any number) -> Normalize"


class UnsupportedModelError(NotImplementedError):
    """A model folder asks for something sbert_tutor cannot run; the message says what to do."""


@dataclass(frozen=True)
class DenseEntry:
    """A Dense module of the pipeline: its folder (read by :meth:`sbert_tutor.encoders.dense.Dense.load`)."""

    path: Path


@dataclass(frozen=True)
class STFolderConfig:
    """What a sentence-transformers folder says about the pipeline around the transformer.

    ``pooling`` is ``None`` when the caller overrode it (the file is then not read);
    ``max_seq_length`` is ``None`` when the folder leaves it to the tokenizer.
    """

    transformer_path: Path
    pooling: str | None
    normalize: bool
    max_seq_length: int | None
    do_lower_case: bool
    include_prompt: bool = True
    dense: tuple[DenseEntry, ...] = ()
    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None
    tokenizer_kwargs: dict[str, Any] = field(default_factory=dict)
    layout: str = ""
    similarity_fn_name: str | None = None


def read_json(path: Path) -> Any:
    """The JSON in ``path``; a damaged file is a ``ValueError`` that says to copy the folder again."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); the model folder is "
            "damaged: download or copy it again"
        ) from None


def _module_kind(type_name: str, folder: Path) -> str:
    if not type_name.startswith("sentence_transformers."):
        raise UnsupportedModelError(
            f"{folder}/modules.json names custom code ({type_name!r}); sbert_tutor runs only the "
            f"pipeline {_SUPPORTED}. Load this model with sentence-transformers "
            "(trust_remote_code=True) instead."
        )
    kind = type_name.rsplit(".", 1)[-1]
    return "Transformer" if kind in _TRANSFORMER_KINDS else kind


def read_st_config(folder: Path, pooling: str | None = None) -> STFolderConfig | None:
    """Parse a sentence-transformers folder; ``None`` for a plain Hugging Face model folder.

    Args:
        folder: the model folder.
        pooling: an override; when given, the folder's pooling config is not read at all (so an
            override also rescues a folder whose pooling file sbert_tutor cannot parse).
    """
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return None
    modules = read_json(modules_file)
    if not isinstance(modules, list) or not modules:
        raise ValueError(f"{modules_file} must hold a non-empty list of modules")
    _check_model_type(folder)
    modules = sorted(modules, key=lambda m: int(m.get("idx", 0)))
    kinds = [_module_kind(str(m.get("type", "")), folder) for m in modules]
    _check_order(kinds, folder)

    transformer_path = folder / modules[0].get("path", "")
    found_pooling: str | None = None
    include_prompt = True
    dense: list[DenseEntry] = []
    normalize = False
    for module, kind in zip(modules[1:], kinds[1:], strict=True):
        path = folder / module.get("path", "")
        if kind == "Pooling" and pooling is None:
            found_pooling, include_prompt = _read_pooling_config(path / "config.json")
        elif kind == "Dense":
            dense.append(DenseEntry(path))
        elif kind == "Normalize":
            normalize = True
    if pooling is None and "Pooling" not in kinds:
        raise UnsupportedModelError(
            f"{folder} has no Pooling module, so it makes no sentence embedding by itself; pass "
            "pooling='mean' (or another mode) to choose one."
        )

    cfg: dict[str, Any] = {}
    cfg_file = None
    for candidate_folder in dict.fromkeys([transformer_path, folder]):
        for name in _TRANSFORMER_CONFIG_FILES:
            if (candidate_folder / name).is_file():
                cfg_file = candidate_folder / name
                cfg = read_json(cfg_file)
                break
        if cfg_file is not None:
            break
    _check_transformer_config(cfg, cfg_file)
    tokenizer_kwargs = dict(cfg.get("processor_kwargs") or cfg.get("tokenizer_args") or {})
    tokenizer_kwargs.pop("trust_remote_code", None)
    prompts, default_prompt = _read_prompts(folder)
    return STFolderConfig(
        transformer_path=transformer_path,
        pooling=found_pooling,
        normalize=normalize,
        max_seq_length=cfg.get("max_seq_length"),
        do_lower_case=bool(cfg.get("do_lower_case", False)),
        include_prompt=include_prompt,
        dense=tuple(dense),
        prompts=prompts,
        default_prompt_name=default_prompt,
        tokenizer_kwargs=tokenizer_kwargs,
        layout=_describe_layout(modules, transformer_path, folder),
        similarity_fn_name=_read_similarity_fn_name(folder),
    )


def _check_order(kinds: list[str], folder: Path) -> None:
    known = {"Transformer", "Pooling", "Dense", "Normalize"}
    unknown = [k for k in kinds if k not in known]
    if unknown:
        raise UnsupportedModelError(
            f"{folder} uses a {unknown[0]} module; sbert_tutor runs the SBERT pipeline "
            f"{_SUPPORTED} only. Load this model with sentence-transformers instead."
        )
    rank = {"Transformer": 0, "Pooling": 1, "Dense": 2, "Normalize": 3}
    ranks = [rank[k] for k in kinds]
    if (
        kinds[0] != "Transformer"
        or kinds.count("Transformer") != 1
        or kinds.count("Pooling") > 1
        or ranks != sorted(ranks)
    ):
        raise UnsupportedModelError(
            f"{folder}/modules.json orders its modules as {' -> '.join(kinds)}; sbert_tutor runs "
            f"{_SUPPORTED}. Load this model with sentence-transformers instead."
        )


def _check_model_type(folder: Path) -> None:
    path = folder / "config_sentence_transformers.json"
    if not path.is_file():
        return
    kind = read_json(path).get("model_type", "SentenceTransformer")
    if kind != "SentenceTransformer":
        raise UnsupportedModelError(
            f"{path} says this is a {kind}, not a dense sentence embedding model "
            "(SentenceTransformer); sbert_tutor encodes sentences into dense vectors only. "
            f"Load it with sentence-transformers' {kind} instead."
        )


def _check_transformer_config(cfg: dict[str, Any], path: Path | None) -> None:
    task = cfg.get("transformer_task", "feature-extraction")
    if task != "feature-extraction":
        raise UnsupportedModelError(
            f"{path} asks for transformer_task={task!r}; sbert_tutor runs feature-extraction "
            "encoders only. Load this model with sentence-transformers instead."
        )
    text = (cfg.get("modality_config") or {}).get("text", {})
    output = text.get("method_output_name", "last_hidden_state")
    if output != "last_hidden_state":
        raise UnsupportedModelError(
            f"{path} reads the transformer output {output!r}; sbert_tutor pools the last hidden "
            "state only. Load this model with sentence-transformers instead."
        )


def _read_prompts(folder: Path) -> tuple[dict[str, str], str | None]:
    path = folder / "config_sentence_transformers.json"
    if not path.is_file():
        return {}, None
    cfg = read_json(path)
    prompts = {str(k): str(v) for k, v in (cfg.get("prompts") or {}).items()}
    default = cfg.get("default_prompt_name")
    if default is not None and default not in prompts:
        raise ValueError(
            f"{path}: default_prompt_name {default!r} is not one of its prompts {list(prompts)}"
        )
    return prompts, default


def _read_similarity_fn_name(folder: Path) -> str | None:
    """The ``similarity_fn_name`` of ``config_sentence_transformers.json`` when it names one that
    sentence-transformers supports (it ignores others too), else ``None``."""
    path = folder / "config_sentence_transformers.json"
    if not path.is_file():
        return None
    name = read_json(path).get("similarity_fn_name")
    return name if name in SIMILARITY_FUNCTIONS else None


def _read_pooling_config(path: Path) -> tuple[str, bool]:
    """``(pooling, include_prompt)`` from a ``Pooling/config.json`` of any version.

    A 6.x config names ``pooling_mode`` (a string or a list); an older one sets one boolean per
    mode, and several true booleans concatenate in ``_LEGACY_POOLING_KEYS`` order. A config
    that names no mode (no ``pooling_mode`` and no true boolean) is refused with an
    :class:`UnsupportedModelError` naming the file, where sentence-transformers silently uses
    ``mean``: a damaged or hand-edited file should not choose the pooling by accident; pass
    ``pooling="mean"`` (or another mode) to choose one.
    """
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the folder's modules.json lists a Pooling module there. "
            "Copy the whole model folder again, or pass pooling=... to choose one."
        )
    cfg = read_json(path)
    if not isinstance(cfg, dict):
        raise UnsupportedModelError(
            f"{path} holds a {type(cfg).__name__}, not a pooling config (a JSON object); copy "
            "the model folder again, or pass pooling=... to choose one."
        )
    if "pooling_mode" in cfg:
        raw = cfg["pooling_mode"]
    else:
        raw = [mode for key, mode in _LEGACY_POOLING_KEYS.items() if cfg.get(key)]
    if raw in (None, "", []):
        keys = ", ".join(["pooling_mode", *_LEGACY_POOLING_KEYS])
        raise UnsupportedModelError(
            f"{path} names no pooling mode (none of {keys} is set), so it does not say how to "
            "make a sentence embedding (sentence-transformers would silently use mean pooling). "
            "Copy the model folder again, or pass pooling='mean' (or another mode) to choose one."
        )
    try:
        mode = check_pooling(raw)
    except ValueError as exc:
        raise UnsupportedModelError(
            f"{path} asks for pooling {raw!r}: {exc}. Pass pooling=... to override it."
        ) from None
    return mode, bool(cfg.get("include_prompt", True))


def _describe_layout(modules: list[dict[str, Any]], transformer_path: Path, folder: Path) -> str:
    types = " ".join(str(m.get("type", "")) for m in modules)
    era = "6.x" if "sentence_transformers.base." in types else "2.x-5.x"
    if transformer_path != folder:
        era = "< 2.0 (transformer in a sub-folder)"
    return f"sentence-transformers {era} folder"


def _legacy_pooling_config(pooling: str, dim: int, include_prompt: bool = True) -> dict[str, Any]:
    """The ``1_Pooling/config.json`` that every sentence-transformers version reads.

    The boolean form when it can express ``pooling`` (a single mode, or modes in the boolean
    order); otherwise the 6.x form ``pooling_mode: [...]``.
    """
    modes = pooling_modes(pooling)
    order = [m for m in _LEGACY_POOLING_KEYS.values() if m in modes]
    cfg: dict[str, Any] = {"word_embedding_dimension": dim}
    if list(modes) == order:
        cfg.update({key: mode in modes for key, mode in _LEGACY_POOLING_KEYS.items()})
    else:
        cfg = {"embedding_dimension": dim, "pooling_mode": list(modes)}
    if not include_prompt:
        cfg["include_prompt"] = False
    return cfg


def write_st_config(
    folder: Path,
    *,
    dim: int,
    pooling: str,
    normalize: bool,
    max_seq_length: int,
    do_lower_case: bool,
    dense: tuple[Any, ...] = (),
    include_prompt: bool = True,
    prompts: dict[str, str] | None = None,
    default_prompt_name: str | None = None,
    similarity_fn_name: str | None = None,
) -> None:
    """Write modules.json, ``1_Pooling``, ``N_Dense``, ``N_Normalize`` and the module configs.

    The module type names are the ``sentence_transformers.models.*`` ones, which versions 2.x to
    6.x all resolve, so the folder loads in each of them. ``dim`` is the transformer's hidden size.
    """
    entries = [("Transformer", "")]
    entries.append(("Pooling", "1_Pooling"))
    entries += [("Dense", f"{2 + i}_Dense") for i in range(len(dense))]
    if normalize:
        entries.append(("Normalize", f"{2 + len(dense)}_Normalize"))
    modules = [
        {"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
        for i, (kind, path) in enumerate(entries)
    ]
    (folder / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(_legacy_pooling_config(pooling, dim, include_prompt), indent=2), encoding="utf-8"
    )
    for layer, (_, path) in zip(dense, entries[2:], strict=False):
        layer.save(folder / path)
    if normalize:
        (folder / entries[-1][1]).mkdir(exist_ok=True)
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_seq_length, "do_lower_case": do_lower_case}, indent=2),
        encoding="utf-8",
    )
    if prompts or default_prompt_name or similarity_fn_name:
        config: dict[str, Any] = {
            "prompts": prompts or {},
            "default_prompt_name": default_prompt_name,
        }
        if similarity_fn_name:
            config["similarity_fn_name"] = similarity_fn_name
        (folder / "config_sentence_transformers.json").write_text(
            json.dumps(config), encoding="utf-8"
        )


__all__ = ["STFolderConfig", "UnsupportedModelError"]
