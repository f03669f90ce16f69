"""Where the book is published, as its chapters say it: the Colab badge and the install cell.

Used by ``sync_publishing.py`` (writes them) and ``colab_editions.py`` (the badges' address);
no chapter imports it.

Both are made from one setting, :data:`sbert_tutor.settings.REPOSITORY_URL` and
:data:`~sbert_tutor.settings.RELEASE_REF`: the badge opens the chapter's Colab edition
(``book/colab/``, its MyST markup made plain Markdown) *at the release*, and the
install cell installs the library *at the same release*, so a reader on Colab runs the notebook
with the library it was written for. ``python .ci/sync_publishing.py`` writes them into cells 1
and 2 of every chapter (and the URLs into ``pyproject.toml``, ``_config.yml``, ``README.md``
and ``book/index.md``); :func:`check_notebook` says what disagrees.

The install cell installs only when ``sbert_tutor`` is missing. pip keeps what is installed
when it satisfies the requirement (``torch>=2.1``): Colab's own CUDA build of torch stays.
Before a release is tagged, a wheel uploaded next to the notebook (``python -m build`` makes
``dist/sbert_tutor-<version>-py3-none-any.whl``) is installed instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sbert_tutor.settings import RELEASE_REF, REPOSITORY_URL

__all__ = [
    "BADGE_CELL",
    "BADGE_IMAGE",
    "COLAB",
    "COLAB_EDITIONS",
    "INSTALL_CELL",
    "badge_source",
    "check_notebook",
    "colab_url",
    "github_repository",
    "install_source",
    "requirement",
    "sync_notebook",
]

COLAB = "https://colab.research.google.com"
BADGE_IMAGE = f"{COLAB}/assets/colab-badge.svg"
#: The positions of the two cells in every chapter: 0 is the title, 1 the badge, 2 the install.
BADGE_CELL, INSTALL_CELL = 1, 2


def github_repository(url: str = REPOSITORY_URL) -> str:
    """``owner/name`` of a ``https://github.com/owner/name`` URL (Colab opens GitHub only)."""
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?", url)
    if not match:
        raise ValueError(f"REPOSITORY_URL must be https://github.com/<owner>/<name>, got {url!r}")
    return f"{match.group(1)}/{match.group(2)}"


def requirement(extra: str = "colab", url: str = REPOSITORY_URL, ref: str = RELEASE_REF) -> str:
    """The pip requirement of the library at the release: ``sbert-tutor[colab] @ git+URL@REF``."""
    return f"sbert-tutor[{extra}] @ git+{url}@{ref}"


#: Where a chapter's Colab edition lives (``.ci/colab_editions.py`` writes it): the chapter with
#: its MyST markup turned into Markdown that Colab shows; the badges open it.
COLAB_EDITIONS = "book/colab"


def colab_url(notebook: str, url: str = REPOSITORY_URL, ref: str = RELEASE_REF) -> str:
    """The Colab address of the chapter's Colab edition, ``book/colab/<notebook>``, at the
    release."""
    return f"{COLAB}/github/{github_repository(url)}/blob/{ref}/{COLAB_EDITIONS}/{notebook}"


def badge_source(notebook: str, url: str = REPOSITORY_URL, ref: str = RELEASE_REF) -> str:
    """Cell 1 of a chapter: the "Open in Colab" badge (markdown)."""
    return f"[![Open in Colab]({BADGE_IMAGE})]({colab_url(notebook, url, ref)})"


def install_source(url: str = REPOSITORY_URL, ref: str = RELEASE_REF) -> str:
    """Cell 2 of a chapter: install the library at the release when it is missing (or an
    uploaded wheel before the release exists), leaving an installed torch alone."""
    return (
        f"# Colab or a fresh environment: install the library at the release this book was\n"
        f"# written for ({ref}). pip keeps the torch already installed (Colab's CUDA build).\n"
        f"# Before a release, upload the wheel `python -m build` makes (sbert_tutor-*.whl) next\n"
        f"# to this notebook: it is installed instead.\n"
        f"import glob\n"
        f"import importlib.util\n"
        f"\n"
        f'if importlib.util.find_spec("sbert_tutor") is None:\n'
        f'    wheels = sorted(glob.glob("sbert_tutor-*.whl"))\n'
        f"    if wheels:\n"
        f'        %pip install -q "{{wheels[-1]}}[colab]"\n'
        f"    else:\n"
        f'        %pip install -q "{requirement("colab", url, ref)}"'
    )


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _lines(text: str) -> list[str]:
    """A cell's source as nbformat stores it: lines keeping their newline, the last without."""
    return text.splitlines(keepends=True)


def check_notebook(path: str | Path) -> list[str]:
    """What in a chapter's cells 1-2 disagrees with the setting (empty: all agrees)."""
    path = Path(path)
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    problems = []
    if len(cells) <= INSTALL_CELL:
        return [f"{path.name}: fewer than {INSTALL_CELL + 1} cells"]
    badge, install = cells[BADGE_CELL], cells[INSTALL_CELL]
    if badge["cell_type"] != "markdown" or _source(badge) != badge_source(path.name):
        problems.append(f"{path.name}: cell {BADGE_CELL} is not the badge {colab_url(path.name)}")
    if install["cell_type"] != "code" or _source(install) != install_source():
        problems.append(
            f"{path.name}: cell {INSTALL_CELL} is not the install cell of {RELEASE_REF}"
        )
    others = [
        i
        for i, c in enumerate(cells)
        if i not in (BADGE_CELL, INSTALL_CELL)
        and ("pip install" in _source(c) or "colab-badge" in _source(c))
    ]
    if others:
        problems.append(f"{path.name}: another badge or install in cells {others}")
    return problems


def sync_notebook(path: str | Path) -> bool:
    """Rewrite cells 1-2 of a chapter from the setting (nothing else); ``True`` if it changed.

    Raises:
        ValueError: cell 1 is not a Colab badge or cell 2 not an install cell (the chapter's
            layout is not the one this rewrites; nothing is written).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    notebook = json.loads(text)
    cells = notebook["cells"]
    badge, install = cells[BADGE_CELL], cells[INSTALL_CELL]
    if badge["cell_type"] != "markdown" or "colab-badge" not in _source(badge):
        raise ValueError(f"{path.name}: cell {BADGE_CELL} is not a Colab badge")
    if install["cell_type"] != "code" or "pip install" not in _source(install):
        raise ValueError(f"{path.name}: cell {INSTALL_CELL} is not an install cell")
    badge["source"] = _lines(badge_source(path.name))
    install["source"] = _lines(install_source())
    tags = install.setdefault("metadata", {}).setdefault("tags", [])
    if "hide-cell" not in tags:
        tags.append("hide-cell")
    new = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True
