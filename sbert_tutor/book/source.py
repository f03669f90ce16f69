"""The library's own lines on the page: a chapter shows the code that implements what it just
derived, read from the installed source when the page is built, so the two cannot drift.

``show_source(multiple_negatives_ranking, docstring=False)`` returns the function's source,
without its docstring, as highlighted code (an :class:`IPython.display.Code`: a notebook, Colab
and the built book render it); a private helper is shown by its dotted name
(``show_source("sbert_tutor.losses.ranking._diagonal_cross_entropy")``).
"""

from __future__ import annotations

import ast
import inspect
import pkgutil
import textwrap
from typing import Any

from IPython.display import Code

__all__ = ["show_source", "source_lines"]


def source_lines(obj: Any, docstring: bool = True) -> str:
    """The source of a function, class or method of the library, dedented; without its docstring
    when ``docstring`` is ``False``. A name that is not a function, class or method is refused."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)):
        raise TypeError(
            f"show_source needs a function, class or method of the library, got "
            f"{type(obj).__name__}: import the object itself (e.g. "
            f"`from sbert_tutor.losses import supmpn`)"
        )
    text = textwrap.dedent(inspect.getsource(obj))
    if docstring:
        return text.rstrip() + "\n"
    node = ast.parse(text).body[0]
    if ast.get_docstring(node, clean=False) is not None:
        lines = text.splitlines()
        start, end = node.body[0].lineno - 1, node.body[0].end_lineno
        while end < len(lines) and not lines[end].strip():  # the blank line a class leaves
            end += 1
        text = "\n".join(lines[:start] + lines[end:])
    return text.rstrip() + "\n"


def show_source(obj: Any, docstring: bool = True) -> Code:
    """``obj``'s source as highlighted Python, titled with where it lives
    (``# sbert_tutor/losses/ranking.py``). ``obj`` may be the object or its dotted name (the way
    to show a private helper without importing it), read by :func:`pkgutil.resolve_name`."""
    if isinstance(obj, str):
        try:
            obj = pkgutil.resolve_name(obj)
        except (ImportError, AttributeError, ValueError) as err:
            raise ValueError(
                f"show_source: cannot resolve {obj!r} ({err}); give a dotted name such as "
                "'sbert_tutor.losses.ranking.multiple_negatives_ranking'"
            ) from err
    module = inspect.getmodule(obj)
    path = (module.__name__ if module else "?").replace(".", "/") + ".py"
    return Code(f"# {path}\n" + source_lines(obj, docstring), language="python")
