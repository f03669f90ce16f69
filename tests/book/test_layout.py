"""The book layer's shape: a ground floor the chapters share and one module per chapter above it;
every public name is used by a chapter or by another module (not only by tests)."""

from __future__ import annotations

import ast
import functools
import json
import pkgutil
from pathlib import Path

import pytest

import sbert_tutor
import sbert_tutor.book as book
import sbert_tutor.book.chapters as chapters

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(sbert_tutor.__file__).parent


def _names_used(tree: ast.AST) -> set[str]:
    """Every name a piece of code reads: bare names, attributes and imported names."""
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            used.update(alias.name for alias in node.names)
    return used


def _notebook_code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = ("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    # IPython magics (%pip ...) are not Python: each becomes a `pass` at its indentation
    return "\n".join(
        "\n".join(
            line[: len(line) - len(line.lstrip())] + "pass"
            if line.lstrip().startswith(("%", "!"))
            else line
            for line in cell.splitlines()
        )
        for cell in code
    )


def _public_definitions(path: Path) -> dict[str, ast.AST]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name):
                out[target.id] = node
    return {name: node for name, node in out.items() if not name.startswith("_")}


BOOK_MODULES = sorted(p for p in (PACKAGE / "book").rglob("*.py") if p.name != "__init__.py")
#: The repository's scripts (CI's, the benchmarks') use the book layer too.
SCRIPTS = sorted([*ROOT.glob(".ci/*.py"), *ROOT.glob("benchmarks/*.py")])
#: Names made for chapters whose notebooks do not call them yet (empty when every chapter
#: does). Remove a name here once a chapter uses it; the second test fails until then.
PENDING_CHAPTER_EDITS: set[str] = set()


@functools.cache
def _unused() -> tuple[str, ...]:
    """Public book names no chapter, script or other definition uses (computed once: both tests
    below read it)."""
    used_by_chapters = set().union(
        *(_names_used(ast.parse(_notebook_code(nb))) for nb in sorted(ROOT.glob("book/*.ipynb")))
    )
    used_by_scripts = set().union(
        *(_names_used(ast.parse(p.read_text(encoding="utf-8"))) for p in SCRIPTS)
    )
    library = {p: ast.parse(p.read_text(encoding="utf-8")) for p in PACKAGE.rglob("*.py")}
    names_in = {p: _names_used(t) for p, t in library.items()}
    unused = []
    for path in BOOK_MODULES:
        own = [(node, _names_used(node)) for node in library[path].body]
        elsewhere = set().union(*(names for p, names in names_in.items() if p != path))
        for name, node in _public_definitions(path).items():
            # used inside its own module by another definition (a helper of a used function)
            inside = set().union(*(names for other, names in own if other is not node))
            if name not in used_by_chapters | used_by_scripts | elsewhere | inside:
                unused.append(f"{path.relative_to(PACKAGE)}: {name}")
    return tuple(unused)


def test_every_public_book_name_is_used_by_a_chapter_or_another_module():
    unused = [name for name in _unused() if name not in PENDING_CHAPTER_EDITS]
    assert not unused, "public names used only by tests (or nothing): " + ", ".join(unused)


def test_names_waiting_for_their_chapters_are_still_waiting():
    done = PENDING_CHAPTER_EDITS - set(_unused())
    assert not done, f"now used by a chapter: remove from PENDING_CHAPTER_EDITS: {sorted(done)}"


#: The ground floor's modules and the chapters' modules, by their dotted names.
GROUND_FLOOR = {
    f"sbert_tutor.book.{p.stem}" for p in (PACKAGE / "book").glob("*.py") if p.name != "__init__.py"
}
CHAPTER_MODULES = {
    f"sbert_tutor.book.chapters.{m.name}" for m in pkgutil.iter_modules(chapters.__path__)
}


def _book_imports(source: str, package: str) -> set[str]:
    """The ``sbert_tutor.book`` modules a module imports, by their dotted names, in every form:
    ``import a.b``, ``from a.b import c`` (``a.b.c`` when ``c`` is a module, else ``a.b``) and
    relative imports (resolved against ``package``, the importing module's package)."""
    modules = GROUND_FLOOR | CHAPTER_MODULES | {"sbert_tutor.book.chapters"}
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = (
                ".".join(base + [node.module] if node.module else base)
                if node.level
                else node.module
            )
            for alias in node.names:
                found.add(
                    f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                )
    return {m for m in found if m == "sbert_tutor.book" or m.startswith("sbert_tutor.book.")}


def _package_of(path: Path) -> str:
    return ".".join(("sbert_tutor", *path.parent.relative_to(PACKAGE).parts))


@pytest.mark.parametrize("path", BOOK_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_chapters_stand_on_the_ground_floor_and_never_on_each_other(path):
    imports = _book_imports(path.read_text(encoding="utf-8"), _package_of(path))
    if path.parent.name == "chapters":
        # a chapter imports ground-floor modules and nothing else of the book layer
        assert imports <= GROUND_FLOOR, imports - GROUND_FLOOR
    else:  # the ground floor imports no chapter
        assert not imports & (CHAPTER_MODULES | {"sbert_tutor.book.chapters"}), imports


def test_the_import_reader_sees_every_form_of_import():
    """The layout test's control: a chapter on another chapter, however it is imported, is read
    as that chapter (and fails the chapter branch); a chapter on the ground floor passes it."""
    msmarco, sizes = "sbert_tutor.book.chapters.msmarco", "sbert_tutor.book.sizes"
    forms = {
        "import sbert_tutor.book.chapters.msmarco": {msmarco},
        "from sbert_tutor.book.chapters.msmarco import x": {msmarco},
        "from sbert_tutor.book.chapters import msmarco": {msmarco},
        "from . import msmarco": {msmarco},
        "from .msmarco import x": {msmarco},
        "from .. import sizes": {sizes},
        "from ..sizes import CHAPTERS": {sizes},
        "from sbert_tutor.book import sizes, published": {sizes, "sbert_tutor.book.published"},
        "from sbert_tutor.encoders.sentence_encoder import SentenceEncoder": set(),
    }
    for line, expected in forms.items():
        imports = _book_imports(line, "sbert_tutor.book.chapters")
        assert imports == expected, line
        assert (imports <= GROUND_FLOOR) == (msmarco not in expected), line
    # the ground floor on the chapters package
    ground = _book_imports("from sbert_tutor.book import chapters", "sbert_tutor.book")
    assert ground == {"sbert_tutor.book.chapters"}


def test_every_chapter_has_its_module_and_every_module_its_chapter():
    # the chapters (numbered); the appendices build on the ground floor and the library alone
    notebooks = {p.stem.split("_", 1)[1] for p in ROOT.glob("book/[0-9]*.ipynb")}
    modules = {m.name for m in pkgutil.iter_modules(chapters.__path__)}
    assert modules <= notebooks, modules - notebooks
    # chapter 1 builds on the ground floor and the library alone
    assert notebooks - modules == {"introduction"}
    assert book.__doc__ and all(m in book.__doc__ for m in modules)
