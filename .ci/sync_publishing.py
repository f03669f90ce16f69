"""Make every place that says where the project is published agree with the one setting.

The setting is ``sbert_tutor.settings.REPOSITORY_URL`` and ``RELEASE_REF``. From it this writes:

* cells 1 and 2 of every chapter (``book/*.ipynb``): the Colab badge (the chapter at the
  release) and the install cell (the library at the release); nothing else of a notebook;
* ``pyproject.toml``: ``[project.urls]`` Homepage and Repository;
* ``_config.yml``: ``repository.url`` and ``repository.branch`` (the launch buttons open the
  release, as the badges do);
* the install lines of ``README.md`` and ``book/index.md``.

Usage (from the repository root)::

    python .ci/sync_publishing.py           # rewrite what disagrees, list what changed
    python .ci/sync_publishing.py --check   # list what disagrees; exit 1 if anything does

``tests/test_publishing.py`` runs the check.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / ".ci"))  # publishing.py, beside this script

import publishing  # noqa: E402

from sbert_tutor.settings import RELEASE_REF, REPOSITORY_URL  # noqa: E402


def _urls(text: str) -> str:
    block = f'[project.urls]\nHomepage = "{REPOSITORY_URL}"\nRepository = "{REPOSITORY_URL}"\n'
    return re.sub(r"\[project\.urls\]\n(?:[^\[\n][^\n]*\n)*", block, text, count=1)


def _config(text: str) -> str:
    text = re.sub(
        r"(repository:\n  url: ).*\n(  branch: ).*\n",
        rf"\g<1>{REPOSITORY_URL}\n\g<2>{RELEASE_REF}\n",
        text,
        count=1,
    )
    return text


def _readme(text: str) -> str:
    line = f'`%pip install -q "{publishing.requirement()}"`'
    return re.sub(r'`%pip install -q "sbert-tutor\[colab\] @ git\+[^"`]*"`', line, text)


def _index(text: str) -> str:
    line = f'pip install "sbert-tutor @ git+{REPOSITORY_URL}@{RELEASE_REF}"'
    return re.sub(r'pip install "sbert-tutor @ git\+[^"]*"', line, text)


#: file -> how to make its text agree with the setting.
FILES: dict[str, Callable[[str], str]] = {
    "pyproject.toml": _urls,
    "_config.yml": _config,
    "README.md": _readme,
    "book/index.md": _index,
}


def problems(root: Path = ROOT) -> list[str]:
    """Every place that disagrees with the setting (empty: all agree)."""
    found = []
    for notebook in sorted((root / "book").glob("*.ipynb")):
        found += publishing.check_notebook(notebook)
    for name, fix in FILES.items():
        text = (root / name).read_text(encoding="utf-8")
        if fix(text) != text:
            found.append(f"{name}: does not say {REPOSITORY_URL} at {RELEASE_REF}")
    return found


def sync(root: Path = ROOT) -> list[str]:
    """Rewrite what disagrees; the names of the files changed."""
    changed = []
    for notebook in sorted((root / "book").glob("*.ipynb")):
        if publishing.sync_notebook(notebook):
            changed.append(str(notebook.relative_to(root)))
    for name, fix in FILES.items():
        path = root / name
        text = path.read_text(encoding="utf-8")
        if fix(text) != text:
            path.write_text(fix(text), encoding="utf-8")
            changed.append(name)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only list what disagrees")
    parser.add_argument("--root", default=str(ROOT))
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.check:
        found = problems(root)
        print("\n".join(found) or f"all agree: {REPOSITORY_URL} at {RELEASE_REF}")
        return 1 if found else 0
    changed = sync(root)
    print("\n".join(f"rewrote {c}" for c in changed) or "nothing to change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
