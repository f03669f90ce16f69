"""Loads the project's scripts (``benchmarks/*.py``, ``.ci/*.py``), which are not a package, as
modules for the tests: one loader for every test that checks a script's functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

__all__ = ["REPO", "load_script"]

#: the repository's root
REPO = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    """The script at ``REPO / relative`` (e.g. ``"benchmarks/rerank_study.py"``) as a module
    named after its file. Its folder is on ``sys.path`` while it loads, so a script's own
    ``from encode import ...`` of a sibling resolves as when it runs."""
    path = REPO / relative
    if not path.is_file():
        raise FileNotFoundError(f"no script {path}; name one relative to {REPO}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(path.parent))
        spec.loader.exec_module(module)
    return module
