"""Reading and writing the sentence-transformers model-folder format.

A sentence-transformers folder is a Hugging Face model plus a ``modules.json`` that lists the
pipeline: ``Transformer`` -> ``Pooling`` (``1_Pooling/config.json``) -> optional ``Normalize``.
``sentence_bert_config.json`` holds ``max_seq_length`` and ``do_lower_case``. Only that pipeline is
supported: it is what SBERT is. A folder with other modules (Dense, ...) gets a clear error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

_POOLING_KEYS = {
    "mean": "pooling_mode_mean_tokens",
    "max": "pooling_mode_max_tokens",
    "cls": "pooling_mode_cls_token",
}
_OTHER_POOLING_KEYS = (
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)


@dataclass(frozen=True)
class STFolderConfig:
    """What a sentence-transformers folder says about the pipeline around the transformer."""

    transformer_path: Path
    pooling: str | None
    normalize: bool
    max_seq_length: int | None
    do_lower_case: bool


def read_st_config(folder: Path) -> STFolderConfig | None:
    """Parse a sentence-transformers folder; ``None`` for a plain Hugging Face model folder."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return None
    modules = json.loads(modules_file.read_text())
    transformer_path, pooling, normalize = folder, None, False
    for module in modules:
        kind = module["type"].rsplit(".", 1)[-1]
        path = folder / module.get("path", "")
        if kind == "Transformer":
            transformer_path = path
        elif kind == "Pooling":
            pooling = _pooling_mode(path / "config.json")
        elif kind == "Normalize":
            normalize = True
        else:
            raise NotImplementedError(
                f"{folder} uses a {kind} module; sbert_tutor supports the SBERT pipeline "
                "Transformer -> Pooling -> Normalize only. Load it with sentence-transformers instead."
            )
    max_seq_length, do_lower_case = None, False
    for candidate in (
        transformer_path / "sentence_bert_config.json",
        folder / "sentence_bert_config.json",
    ):
        if candidate.is_file():
            cfg = json.loads(candidate.read_text())
            max_seq_length = cfg.get("max_seq_length")
            do_lower_case = bool(cfg.get("do_lower_case", False))
            break
    return STFolderConfig(transformer_path, pooling, normalize, max_seq_length, do_lower_case)


def _pooling_mode(config_file: Path) -> str:
    cfg = json.loads(config_file.read_text())
    modes = [mode for mode, key in _POOLING_KEYS.items() if cfg.get(key)]
    others = [key for key in _OTHER_POOLING_KEYS if cfg.get(key)]
    if others or len(modes) != 1:
        raise NotImplementedError(
            f"{config_file} asks for pooling {modes + others}; sbert_tutor supports exactly one of "
            "mean, max, cls. Pass pooling=... to override."
        )
    return modes[0]


def write_st_config(
    folder: Path,
    *,
    dim: int,
    pooling: str,
    normalize: bool,
    max_seq_length: int,
    do_lower_case: bool,
) -> None:
    """Write modules.json, 1_Pooling/config.json, 2_Normalize and sentence_bert_config.json."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    if normalize:
        modules.append(
            {
                "idx": 2,
                "name": "2",
                "path": "2_Normalize",
                "type": "sentence_transformers.models.Normalize",
            }
        )
        (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "modules.json").write_text(json.dumps(modules, indent=2))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    pooling_cfg = {"word_embedding_dimension": dim}
    pooling_cfg.update({key: mode == pooling for mode, key in _POOLING_KEYS.items()})
    pooling_cfg.update({key: False for key in _OTHER_POOLING_KEYS})
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling_cfg, indent=2))
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_seq_length, "do_lower_case": do_lower_case}, indent=2)
    )
