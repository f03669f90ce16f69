"""Sphinx extension of the book: how the Python references of the chapters and the API pages resolve.

The API reference (``book/api.md``, ``book/api_book.md``) documents every object of
``sbert_tutor`` once, in the module that defines it. This extension makes that work:

* **Re-exported names.** The library also exports many objects from a package
  (``from sbert_tutor.losses import triplet``), and the chapters and docstrings refer to them by
  that name. When the Python domain finds no object of a name in ``sbert_tutor`` (full, or relative
  to the docstring's module), the name is imported and the reference goes to the documented object
  that *is* the same Python object (same last name, same identity).
* **Names outside the library** (``torch.Tensor``, ``numpy.ndarray``, ``UserWarning``; a base
  class that ``show-inheritance`` names) have no page to link to: the book is built offline,
  without intersphinx. They are shown as code, not as references, so that what remains a reference
  without a link is a reference into ``sbert_tutor`` that does not resolve: the build reports it
  (``nitpicky``) and ``.ci/check_pages.py`` fails the page that shows it.
* **Attribute docstrings** (``#:`` comments, dataclass fields) are left as written: napoleon would
  read the text before a first colon as the attribute's *type* ("The study's own margins (Rygaard
  et al., ...): ..."). The Google-style sections of functions and classes still go through it.
* **Plain classes** are shown without ``Bases: object``.
* **Values that name the build machine's folders** (``ID_DIR = Path(__file__).parent / "ids"``)
  are not shown after a data or attribute name; its docstring says what it is.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import importlib.util
import typing
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.ext import autodoc
from sphinx.util.nodes import make_refnode

PACKAGE = "sbert_tutor"
_MISSING = object()


@functools.cache
def _import(dotted: str) -> Any:
    """The object a dotted name denotes (the longest importable module, then attributes)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except (ImportError, ValueError, TypeError):  # not a module, or not a name at all
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name, _MISSING)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


def _in_package(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _documented_as(env: Any, target: str) -> str | None:
    """The documented full name of the object that `target` denotes, if exactly one."""
    obj = _import(target)
    if obj is _MISSING:
        return None
    last = target.rsplit(".", 1)[-1]
    same = [
        name
        for name, entry in env.get_domain("py").objects.items()
        if not entry.aliased  # a class's `:canonical:` name, already a link to it
        and _in_package(name)
        and name.rsplit(".", 1)[-1] == last
        and _import(name) is obj
    ]
    return same[0] if len(same) == 1 else None


def _candidates(node: Any) -> list[str]:
    """Full names a reference may mean: itself, or relative to its class and module."""
    target = node.get("reftarget", "").lstrip("~")
    if _in_package(target):
        return [target]
    module = node.get("py:module") or ""
    cls = node.get("py:class") or ""
    bare = target.lstrip(".")
    if not _in_package(module):
        return []
    return [f"{module}.{cls}.{bare}", f"{module}.{bare}"] if cls else [f"{module}.{bare}"]


@functools.cache
def _bindings(module: str) -> dict[str, str]:
    """How a module binds its top-level names: the module a name is imported from, or ``""`` for
    a name it defines itself (def, class, assignment). Imports under ``if TYPE_CHECKING:`` count.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return {}
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                out[(alias.asname or alias.name).split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:  # relative: from the package of `module`
                base = module.rsplit(".", node.level)[0]
                source = f"{base}.{source}" if source else base
            for alias in node.names:
                out[alias.asname or alias.name] = source
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.setdefault(node.name, "")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, "")
        elif isinstance(node, (ast.If, ast.Try)):
            todo.extend(node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                todo.extend(handler.body)
    return out


def _is_external(node: Any) -> bool:
    """A name outside sbert_tutor: a builtin or typing name, a name the docstring's module
    imports from another package (``Tensor``, ``np.ndarray``), or a dotted name into another
    importable package (``torch.autocast``)."""
    target = node.get("reftarget", "").lstrip("~")
    if target.startswith(".") or _in_package(target):
        return False
    if hasattr(builtins, target) or target in typing.__all__:
        return True
    head = target.split(".", 1)[0]
    module = node.get("py:module") or ""
    if _in_package(module):
        source = _bindings(module).get(head)
        if source is not None:
            return source != "" and not _in_package(source)
    return "." in target and _import(head) is not _MISSING


def resolve(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """`missing-reference`: a re-exported name links to its documentation; a name outside the
    library becomes plain code; anything else stays unresolved (and is reported)."""
    if node.get("refdomain") != "py":
        return None
    for name in _candidates(node):
        documented = _documented_as(env, name)
        if documented:
            # straight to the entry: a type annotation naming a data alias (``Evaluator``) is a
            # `class` reference, which the domain's own lookup would not match with `data`
            entry = env.get_domain("py").objects[documented]
            return make_refnode(
                app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, documented
            )
    if _is_external(node):
        if isinstance(contnode, nodes.Element):  # a role's literal; annotations are plain Text
            contnode["classes"] = [c for c in contnode["classes"] if c != "xref"]
        return contnode
    return None


_ATTRIBUTE_KINDS = ("attribute", "data", "property")
_as_written: dict[tuple[str, str], list[str]] = {}


def keep_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list) -> None:
    """Before napoleon (priority 400): remember an attribute docstring as written."""
    if what in _ATTRIBUTE_KINDS:
        _as_written[what, name] = list(lines)


def restore_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list) -> None:
    """After napoleon (priority 600): put the attribute docstring back as written."""
    kept = _as_written.pop((what, name), None)
    if kept is not None:
        lines[:] = kept


class DataDocumenter(autodoc.DataDocumenter):
    """Module data as autodoc shows it, except a value that names a folder of the machine that
    built the book (``ID_DIR = Path(__file__).parent / "ids"``): its docstring says what it is."""

    def should_suppress_value_header(self) -> bool:
        return super().should_suppress_value_header() or _names_a_folder(self.object)


class AttributeDocumenter(autodoc.AttributeDocumenter):
    """Class attributes as autodoc shows them, with the same exception as module data."""

    def should_suppress_value_header(self) -> bool:
        return super().should_suppress_value_header() or _names_a_folder(self.object)


def _names_a_folder(value: Any) -> bool:
    root = str(Path(importlib.import_module(PACKAGE).__file__).resolve().parents[1])
    try:
        return root in repr(value)
    except Exception:  # a value without a usable repr: autodoc copes with it
        return False


class ClassDocumenter(autodoc.ClassDocumenter):
    """Classes as autodoc shows them, without ``Bases: object`` under every plain class."""

    def add_directive_header(self, sig: str) -> None:
        if getattr(self.object, "__bases__", None) != (object,) or "show-inheritance" not in (
            self.options
        ):
            super().add_directive_header(sig)
            return
        # the options are shared by every member of the automodule: hide, then restore
        shown = self.options.pop("show-inheritance")
        try:
            super().add_directive_header(sig)
        finally:
            self.options["show-inheritance"] = shown


def setup(app: Any) -> dict[str, Any]:
    app.setup_extension("sphinx.ext.autodoc")
    app.add_autodocumenter(ClassDocumenter, override=True)
    app.add_autodocumenter(DataDocumenter, override=True)
    app.add_autodocumenter(AttributeDocumenter, override=True)
    # before the Python domain's builtin_resolver (900), which leaves builtins as unlinked xrefs
    app.connect("missing-reference", resolve, priority=400)
    app.connect("autodoc-process-docstring", keep_docstring, priority=400)
    app.connect("autodoc-process-docstring", restore_docstring, priority=600)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
