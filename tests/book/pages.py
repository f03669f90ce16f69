"""The code a chapter defines on its page, for the tests: a chapter that writes an analysis in
its notebook (not in the book layer) keeps its hand-worked check here, run on exactly the code
the reader sees."""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["page_functions"]


def page_functions(chapter: str, *names: str) -> dict:
    """The functions ``names`` as chapter ``chapter`` (``book/<chapter>.ipynb``) defines them on
    its page, with every import of the page (a cell that is not Python, such as the install
    cell's ``%pip``, is skipped)."""
    cells = json.loads((ROOT / "book" / f"{chapter}.ipynb").read_text(encoding="utf-8"))["cells"]
    imports, definitions = [], {}
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imports.append(node)
            elif isinstance(node, ast.FunctionDef) and node.name in names:
                definitions[node.name] = node
    missing = set(names) - set(definitions)
    assert not missing, f"{chapter} defines no {sorted(missing)} on its page"
    scope: dict = {}
    module = ast.Module(body=[*imports, *definitions.values()], type_ignores=[])
    exec(compile(module, f"book/{chapter}.ipynb", "exec"), scope)  # noqa: S102 - the page's code
    return scope
