"""How the chapters' tables show text: whole sentences, run labels and provenance.

pandas cuts every text cell at 50 characters by default ("Two women are embracing while
holding to go pa..."). A chapter calls :func:`show_whole_text` once, in its setup cell, to widen
that to :data:`TEXT_COLUMN_WIDTH` for its own session; importing the book layer changes no
setting. Longer texts (MS MARCO passages, chapter 12's notes on its training data) still end in
"...".

A chapter's Colab edition (``book/colab/``) shows its prose with this run's numbers through
:func:`glue` and :func:`show_markdown`: Colab cannot read MyST's glue roles.
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

TEXT_COLUMN_WIDTH = 300
"""Characters of a text cell that a chapter's table shows before pandas cuts it with "..."."""


def show_whole_text(width: int = TEXT_COLUMN_WIDTH) -> None:
    """Let this session's tables show text cells of up to ``width`` characters
    (pandas' ``display.max_colwidth``)."""
    pd.set_option("display.max_colwidth", width)


#: A glue role in a chapter's Markdown, as MyST-NB writes it: the role ``{glue:text}`` (or
#: ``{glue}``) and, in backticks, a glued name with an optional format spec (``name:.2f``).
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)(?::([^`]*))?`")

GLUED: dict[str, Any] = {}
"""The values this session has glued (name -> value), for :func:`show_markdown`."""

_SHOWN: list[tuple[str, Any]] = []  # (template, display handle) of each show_markdown call


def glue(name: str, variable: Any, display: bool = True) -> None:
    """Record ``variable`` under ``name`` for :func:`show_markdown`, then glue it as MyST-NB's
    ``glue`` does (when MyST-NB is installed; else show it when ``display`` asks).

    A chapter's Colab edition (``book/colab/``) imports this ``glue`` instead of MyST-NB's:
    Colab cannot read MyST's glue roles, so the edition shows the chapter's Markdown with the
    values this run glued. Prose shown before its value was glued (the prose of a chapter may
    come before the cell computing its numbers) is shown again with the value.
    """
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
    """The text a glue role shows for ``name``: the value formatted by ``spec`` when one is
    given (a number glued as text is read as a float first), else the value as text; a
    placeholder while no cell has glued it yet."""
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
    """Show ``template`` as Markdown with every glue role replaced by the value glued under its
    name (:func:`glue`); a chapter's Colab edition calls it for the prose holding numbers. A
    value glued later updates what this showed."""
    from IPython.display import display

    handle = display(_markdown(template), display_id=True)
    if handle is not None:
        _SHOWN.append((template, handle))
