"""How the chapters' tables show text, and their prose with this run's numbers on Colab.

pandas cuts every text cell at 50 characters by default; a chapter calls
:func:`show_whole_text` once, in its setup cell, to widen that to :data:`TEXT_COLUMN_WIDTH` for
its own session (importing the book layer changes no setting). A chapter's Colab edition
(``book/colab/``) shows its prose with this run's numbers through :func:`glue` and
:func:`show_markdown`: Colab cannot read MyST's glue roles.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

__all__ = [
    "GLUED",
    "GLUE_ROLE",
    "TEXT_COLUMN_WIDTH",
    "glue",
    "glued_text",
    "show_markdown",
    "show_whole_text",
]

#: Characters of a text cell that a chapter's table shows before pandas cuts it with "...".
TEXT_COLUMN_WIDTH = 300


def show_whole_text(width: int = TEXT_COLUMN_WIDTH) -> None:
    """Let this session's tables show text cells of up to ``width`` characters
    (pandas' ``display.max_colwidth``)."""
    pd.set_option("display.max_colwidth", width)


#: A glue role in a chapter's Markdown, as MyST-NB writes it: the role ``{glue:text}`` (or
#: ``{glue}``) and, in backticks, a glued name with an optional format spec (``name:.2f``).
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)(?::([^`]*))?`")

#: The values this session has glued (name -> value), for :func:`show_markdown`.
GLUED: dict[str, Any] = {}

_SHOWN: list[tuple[str, Any]] = []  # (template, display handle) of each show_markdown call


def glue(name: str, variable: Any, display: bool = True) -> None:
    """Record ``variable`` under ``name`` for :func:`show_markdown` (prose already shown with the
    name is shown again with the value), then glue it as MyST-NB's ``glue`` does (when MyST-NB is
    installed; else show it when ``display`` asks)."""
    GLUED[name] = variable
    for template, handle in _SHOWN:
        if name in {m.group(1) for m in GLUE_ROLE.finditer(template)}:
            handle.update(_markdown(template))
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        if display:
            from IPython.display import display as show

            show(variable)
        return
    myst_glue(name, variable, display=display)


def glued_text(name: str, spec: str | None = None) -> str:
    """The text a glue role shows for ``name``: the value formatted by ``spec`` (a number glued as
    text read as a float first), or a placeholder while no cell has glued it yet."""
    if name not in GLUED:
        return f"[{name}: computed by a cell below]"
    value = GLUED[name]
    if not spec:
        return str(value)
    try:
        return format(float(value) if isinstance(value, str) else value, spec)
    except ValueError:
        return str(value)


def _markdown(template: str) -> Any:
    from IPython.display import Markdown

    return Markdown(GLUE_ROLE.sub(lambda m: glued_text(m.group(1), m.group(2)), template))


def show_markdown(template: str) -> None:
    """Show ``template`` as Markdown, each glue role replaced by the value glued under its name
    (:func:`glue`; a value glued later updates what this showed)."""
    from IPython.display import display

    handle = display(_markdown(template), display_id=True)
    if handle is not None:
        _SHOWN.append((template, handle))
