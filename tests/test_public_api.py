"""What is public is stated: every module of ``sbert_tutor`` has an ``__all__``, and the API reference
(``book/api.md``, ``book/api_book.md``: autodoc's ``:members:`` documents exactly ``__all__``)
covers every cross-reference the book makes.

1. Every module has ``__all__``: a list of distinct names that all exist in the module.
2. Every Python cross-reference role (``{py:func}`...``` in a notebook's markdown,
   ``:func:`...``` in a docstring or ``#:`` comment of the library) that names an object of
   ``sbert_tutor`` names a module, a name in its module's ``__all__``, or a member of a class so
   listed. A reference to anything else would not resolve in the ``-W`` (nitpicky) build.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

import sbert_tutor

PACKAGE = Path(sbert_tutor.__file__).resolve().parent
BOOK = PACKAGE.parent / "book"
ROLES = "func|class|mod|meth|attr|data|obj|exc|const"
NOTEBOOK_ROLE = re.compile(r"\{(?:py:)?(" + ROLES + r")\}`([^`]+)`")
DOCSTRING_ROLE = re.compile(r"(?<![\w}]):(?:py:)?(" + ROLES + r"):`([^`]+)`")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(module_name(p) for p in PACKAGE.rglob("*.py"))


def load(name: str) -> ModuleType:
    if name == "sbert_tutor.book" or name.startswith("sbert_tutor.book."):
        pytest.importorskip("matplotlib")  # the book layer's extra
    return importlib.import_module(name)


@pytest.mark.parametrize("name", MODULES)
def test_module_states_all(name):
    module = load(name)
    assert "__all__" in vars(module), f"{name} has no __all__"
    public = module.__all__
    assert isinstance(public, list | tuple), f"{name}.__all__ is a {type(public).__name__}"
    assert all(isinstance(n, str) for n in public), f"{name}.__all__ holds a non-string"
    duplicates = sorted({n for n in public if public.count(n) > 1})
    assert not duplicates, f"{name}.__all__ lists {duplicates} more than once"
    missing = [n for n in public if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ lists {missing}, which the module does not have"
    namespace: dict = {}
    exec(f"from {name} import *", namespace)  # noqa: S102 - the star import works
    assert set(public) <= set(namespace)


def _target(text: str) -> str | None:
    """The target of a role's text (``title <target>``, ``~a.b``), or None for ``!a.b``."""
    match = re.search(r"<([^<>]+)>\s*$", text)
    target = (match.group(1) if match else text).strip()
    if target.startswith("!"):
        return None
    return target.lstrip("~").removesuffix("()")


def _lookup(dotted: str) -> tuple[ModuleType, list[str]] | None:
    """The longest importable ``sbert_tutor`` module prefix of ``dotted`` and the rest, if the rest
    exists as attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        if name not in MODULES:
            continue
        module = load(name)
        obj: object = module
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return None
            obj = getattr(obj, attr)
        return module, parts[cut:]
    return None


@functools.cache
def _published() -> dict[str, list[object]]:
    """Every name of every module's ``__all__`` -> the objects it denotes there."""
    out: dict[str, list[object]] = {}
    for name in MODULES:
        module = load(name)
        for public in getattr(module, "__all__", ()):
            out.setdefault(public, []).append(getattr(module, public))
    return out


def _public(module: ModuleType, rest: list[str]) -> bool | None:
    """A module itself, an object some module lists in ``__all__`` under its name (the reference
    goes to where it is documented, book/_ext/pyrefs.py), or a member of a class so listed.
    None: the name leads out of the library (``torch`` imported by a module)."""
    if not rest:
        return True
    head = getattr(module, rest[0])
    if inspect.ismodule(head):
        if head.__name__ not in MODULES:
            return None
        return _public(head, rest[1:])
    if len(rest) > 1 and not inspect.isclass(head):
        return False
    return any(obj is head for obj in _published().get(rest[0], ()))


def _resolve(target: str, module: str, cls: str | None) -> list[str]:
    """The ``sbert_tutor`` objects a target may name, as the Python domain searches: absolute,
    then relative to the current class and module (and, for ``.name``, any object so ending)."""
    if target.startswith("sbert_tutor"):
        return [target]
    bare = target.lstrip(".")
    scopes = ([f"{module}.{cls}"] if cls else []) + [module]
    candidates = [f"{scope}.{bare}" for scope in scopes]
    if target.startswith("."):
        candidates += [f"{m}.{bare}" for m in MODULES] + [
            m for m in MODULES if m.endswith(f".{bare}")
        ]
    return [c for c in candidates if _lookup(c) is not None]


def _notebook_references():
    for path in sorted(BOOK.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate(cells):
            if cell["cell_type"] != "markdown":
                continue
            for role, text in NOTEBOOK_ROLE.findall("".join(cell["source"])):
                target = _target(text)
                if target and target.startswith("sbert_tutor"):
                    yield f"{path.name} cell {number}: {{py:{role}}}`{text}`", target, None, None


def _docstring_references():
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        source = path.read_text(encoding="utf-8")
        classes = [
            (node.lineno, node.end_lineno, node.name)
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ClassDef)
        ]
        for match in DOCSTRING_ROLE.finditer(source):
            role, text = match.groups()
            target = _target(text)
            if not target:
                continue
            line = source.count("\n", 0, match.start()) + 1
            inside = [c for c in classes if c[0] <= line <= c[1]]
            cls = max(inside)[2] if inside else None  # the innermost (latest-starting) class
            where = f"{path.relative_to(PACKAGE.parent)}:{line}: :{role}:`{text}`"
            yield where, target, module, cls


def _unpublished(references) -> list[str]:
    wrong = []
    for where, target, module, cls in references:
        found = _resolve(target, module, cls) if module else [target]
        found = [c for c in found if _lookup(c) is not None]
        if not found:
            if target.startswith("sbert_tutor") or target.startswith("."):
                wrong.append(f"{where}: names nothing in sbert_tutor")
            continue  # a name outside the library (torch.Tensor): shown as code
        verdicts = [_public(*_lookup(c)) for c in found]
        if None in verdicts:
            continue  # through a module outside the library (torch.autocast): shown as code
        if not any(verdicts):
            wrong.append(f"{where}: {found[0]} is not in its module's __all__")
    return wrong


def test_notebook_references_are_public():
    references = list(_notebook_references())
    assert references, "no {py:...} role found in the notebooks: is the pattern stale?"
    wrong = _unpublished(references)
    assert not wrong, "\n".join(wrong)


def test_docstring_references_are_public():
    references = list(_docstring_references())
    assert references, "no :func: role found in the docstrings: is the pattern stale?"
    wrong = _unpublished(references)
    assert not wrong, "\n".join(wrong)


CORE_PUBLIC_LIMIT = 300


def _core_public() -> dict[str, list[str]]:
    """Core module -> its ``__all__`` (packages' ``__init__`` only hand names on)."""
    return {
        name: list(load(name).__all__)
        for name in MODULES
        if not name.startswith("sbert_tutor.book")
        and not PACKAGE.joinpath(*name.split(".")[1:], "__init__.py").is_file()
        and name != "sbert_tutor"
    }


def test_the_core_means_at_most_300_public_names():
    """What a user may rely on is what ``__all__`` lists and the API reference documents; a name a
    module shares with another inside the library, or with its tests, is left out of it."""
    public = _core_public()
    assert len(public) > 60
    total = sum(len(names) for names in public.values())
    assert total <= CORE_PUBLIC_LIMIT, f"{total} public names in the core"


def test_every_public_name_of_the_core_is_documented():
    """autodoc's ``:members:`` leaves out an object without a docstring (or a ``#:`` comment for a
    constant): every listed name must have one, or the API reference would not list it."""
    undocumented = []
    for name, public in _core_public().items():
        path = PACKAGE.joinpath(*name.split(".")[1:]).with_suffix(".py")
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        lines = source.splitlines()
        for index, node in enumerate(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name in public and not ast.get_docstring(node):
                    undocumented.append(f"{name}.{node.name}")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                after = tree.body[index + 1] if index + 1 < len(tree.body) else None
                documented = lines[node.lineno - 2].lstrip().startswith("#:") or (
                    isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                )
                undocumented += [
                    f"{name}.{t.id}"
                    for t in targets
                    if isinstance(t, ast.Name) and t.id in public and not documented
                ]
    assert not undocumented, undocumented
