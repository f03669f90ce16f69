"""The library never depends on the book layer: every module of ``sbert_tutor`` outside
``sbert_tutor/book/`` is read with ``ast`` and none of its imports (at module level or inside a
function) may name ``sbert_tutor.book``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import sbert_tutor

PACKAGE = Path(sbert_tutor.__file__).resolve().parent
BOOK = "sbert_tutor.book"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``source``, wherever it stands.

    Relative imports are resolved against ``module``; ``from pkg import name`` also yields
    ``pkg.name`` (the name may be a submodule). ``importlib.import_module("...")`` and
    ``__import__("...")`` with a literal name count too.
    """
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.append((node.lineno, first.value))
    return found


def book_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """The imports of ``source`` that reach into the book layer, as ``"line N: name"``."""
    return [
        f"line {line}: {name}"
        for line, name in imported_modules(source, module, is_package)
        if name == BOOK or name.startswith(BOOK + ".")
    ]


def core_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "book" not in p.relative_to(PACKAGE).parts)


def test_the_core_never_imports_the_book_layer():
    modules = core_modules()
    assert len(modules) > 30 and (PACKAGE / "book" / "__init__.py").is_file()
    offenders = {
        module_name(path): hits
        for path in modules
        if (
            hits := book_imports(
                path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py"
            )
        )
    }
    assert not offenders, f"core modules import the book layer: {offenders}"


@pytest.mark.parametrize(
    ("source", "module", "is_package"),
    [
        ("from sbert_tutor.book import plots\n", "sbert_tutor.encoders.sentence_encoder", False),
        ("import sbert_tutor.book.sizes as sizes\n", "sbert_tutor.cli", False),
        (
            "def f():\n    from sbert_tutor.book.published import SBERT\n",
            "sbert_tutor.metrics",
            False,
        ),
        ("def f():\n    from ..book import runs\n", "sbert_tutor.training.recipe", False),
        ("from . import book\n", "sbert_tutor", True),
        (
            "import importlib\nimportlib.import_module('sbert_tutor.book.cost')\n",
            "sbert_tutor.x",
            False,
        ),
    ],
)
def test_the_check_finds_every_kind_of_import(source, module, is_package):
    assert book_imports(source, module, is_package)


def test_the_check_ignores_other_imports():
    source = "from sbert_tutor import books_helper\nfrom .bookkeeping import x\nimport sbert_tutor.booking\n"
    assert book_imports(source, "sbert_tutor.training.recipe") == []


def _requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_the_core_install_does_not_pull_the_plots():
    """``pip install sbert-tutor`` installs what the core imports; matplotlib (and its stack) comes
    with the ``plots`` extra, which ``colab`` and ``book`` include, because only the book layer
    draws."""
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    core = {_requirement_name(r) for r in project["project"]["dependencies"]}
    extras = project["project"]["optional-dependencies"]
    assert "matplotlib" not in core
    assert extras["plots"] == ["matplotlib>=3.7"]
    assert "sbert-tutor[plots]" in extras["colab"] and "sbert-tutor[plots]" in extras["book"]
    offenders = {
        module_name(path): [f"line {line}: {name}" for line, name in hits]
        for path in core_modules()
        if (
            hits := [
                (line, name)
                for line, name in imported_modules(
                    path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py"
                )
                if name.split(".")[0] == "matplotlib"
            ]
        )
    }
    assert not offenders, f"core modules import matplotlib: {offenders}"


#: The folders are the architecture: each part may import only its own level and the levels below
#: (README, "Layout"). A part is a root module or a sub-package.
LEVELS = {
    "settings": 0,
    "validation": 0,
    "similarity": 0,
    "stats": 0,
    "results": 0,
    "metrics": 0,
    "runtime": 1,
    "provenance": 1,
    "search": 1,
    "data": 1,
    "losses": 1,
    "encoders": 2,
    "evaluation": 3,
    "training": 4,
    "commands": 5,
    "cli": 5,
    "": 5,  # sbert_tutor/__init__.py: the entry points
    "book": 6,
}
MAX_ROOT_MODULES = 10


def part_of(module: str) -> str:
    """``sbert_tutor.search.ann`` -> ``search``; ``sbert_tutor.cli`` -> ``cli``; the package -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in its code). ``from pkg import sub``
    counts as an import of ``pkg.sub`` alone when ``sub`` is a module: Python runs ``pkg``'s
    ``__init__`` first in any case, so that is no edge of the module's own."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        found = [
            name
            for _, name in imported_modules(
                path.read_text(encoding="utf-8"), module, path.name == "__init__.py"
            )
            if name in paths and name != module
        ]
        graph[module] = {n for n in found if not any(other.startswith(n + ".") for other in found)}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as ``[a, b, ..., a]``, or ``None``."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if not state.get(nxt) and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if not state.get(node) and (cycle := visit(node)):
            return cycle
    return None


def test_at_most_ten_modules_at_the_package_root():
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def test_every_part_has_a_level_and_a_docstring_with_its_rule():
    parts = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    parts |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert parts == set(LEVELS) - {""}
    for folder in (p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "Rule" in doc, f"{folder.name}/__init__.py states no rule for its folder"


def test_no_import_runs_back_up_and_there_is_no_cycle():
    graph = import_graph()
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if LEVELS[part_of(target)] > LEVELS[part_of(module)]
    )
    assert not upward, f"imports that run back up: {upward}"
    assert find_cycle(graph) is None, f"import cycle: {find_cycle(graph)}"


def test_the_cycle_check_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
