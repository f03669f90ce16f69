"""Code on the page: show_source renders the library's own lines, and every chapter's
show_source(...) names an object that exists."""

from __future__ import annotations

import ast
import json
import pkgutil
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from sbert_tutor.book.source import show_source, source_lines
from sbert_tutor.losses import cosine_regression

ROOT = Path(__file__).resolve().parents[2]


def test_source_is_the_function_as_written_and_can_drop_its_docstring():
    import inspect

    whole = source_lines(cosine_regression)
    assert whole == inspect.getsource(cosine_regression).rstrip() + "\n"
    bare = source_lines(cosine_regression, docstring=False)
    assert cosine_regression.__doc__.strip().splitlines()[0] not in bare
    assert bare.startswith("def cosine_regression(") and bare.rstrip().endswith(
        whole.rstrip().splitlines()[-1].strip()
    )
    html = show_source(cosine_regression)._repr_html_()
    assert "sbert_tutor/losses/regression.py" in html and "cosine_regression" in html


def test_a_class_without_its_docstring_leaves_no_blank_line_behind():
    from sbert_tutor.losses import SoftmaxClassifier

    lines = source_lines(SoftmaxClassifier, docstring=False).splitlines()
    assert lines[0].startswith("class SoftmaxClassifier(") and lines[1].strip().startswith("def ")


def test_show_source_refuses_what_is_not_code():
    with pytest.raises(TypeError, match="function, class or method"):
        show_source(42)


def _shown_names(path: Path) -> list[tuple[str, str]]:
    """``(imports so far, name)`` for every ``show_source(name...)`` call in a notebook: the
    import lines of that cell and of every code cell before it, as the kernel has them."""
    found, imports = [], []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse(TransformerManager().transform_cell("".join(cell["source"])))
        imports += [
            ast.unparse(node)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "show_source":
                found.append(("\n".join(imports), ast.unparse(node.args[0])))
    return found


@pytest.mark.parametrize("notebook", sorted(ROOT.glob("book/*.ipynb")), ids=lambda p: p.stem)
def test_every_shown_block_names_an_existing_object(notebook):
    """Resolves each name through the imports the notebook has run so far, as the chapter would."""
    for imports, name in _shown_names(notebook):
        scope: dict = {}
        exec(imports, scope)  # noqa: S102 - the notebook's own import lines
        obj = eval(name, scope)  # noqa: S307 - a dotted name from the notebook
        if isinstance(obj, str):  # shown by its dotted name (a private helper)
            obj = pkgutil.resolve_name(obj)
        assert source_lines(obj), (notebook.name, name)


def test_a_private_helper_is_shown_by_its_dotted_name():
    from sbert_tutor.losses import ranking
    from sbert_tutor.training import Trainer

    by_name = show_source("sbert_tutor.losses.ranking._diagonal_cross_entropy", docstring=False)
    assert by_name.data == show_source(ranking._diagonal_cross_entropy, docstring=False).data
    by_method = show_source("sbert_tutor.training.Trainer.train_step")
    assert by_method.data == show_source(Trainer.train_step).data
    with pytest.raises(ValueError, match="cannot resolve 'sbert_tutor.losses.ranking.nope'.*nope"):
        show_source("sbert_tutor.losses.ranking.nope")
    with pytest.raises(ValueError, match="cannot resolve 'not_a_module.thing'.*not_a_module"):
        show_source("not_a_module.thing")
