"""The chapters' Colab editions (``book/colab/``) show no raw MyST, glue only values their code
glues, and are in sync with the chapters (``python .ci/colab_editions.py --check``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sbert_tutor.book import display
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


GENERATOR = load_script(".ci/colab_editions.py")
EDITIONS = [ROOT / "book/colab" / p.name for p in GENERATOR.toc_chapters(ROOT)]
#: Raw MyST that Colab would show as it is written.
MARKERS = {
    "glue": re.compile(r"\{glue"),
    "term": re.compile(r"\{term\}"),
    "py": re.compile(r"\{py:"),
    "cite": re.compile(r"\{cite"),
    "fence": re.compile(r":::"),
    "ref": re.compile(r"\{ref\}"),
    "numref": re.compile(r"\{numref\}"),
    "doc": re.compile(r"\{doc\}"),
    "eq": re.compile(r"\{eq\}"),
    "label": re.compile(r"^\s*\([\w.:-]+\)=\s*$", re.M),
    "equation label": re.compile(r"\$\$[ \t]*\([\w.:-]+\)"),
    "local link": re.compile(r"\]\((?!\w+:)[^)]*\.(?:ipynb|md)\b"),
}
#: ``glue("name", ...)`` or ``glue(f"name_{key}", ...)`` in a code cell.
GLUE_CALL = re.compile(r"\bglue\(\s*(f?)([\"'])(.*?)\2", re.S)


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def _templates(cells: list[dict]) -> list[str]:
    calls = (_source(c) for c in cells if c["cell_type"] == "code")
    return [s for s in calls if s.startswith(f"{display.show_markdown.__name__}(")]


def _glued_names(cells: list[dict]) -> list[re.Pattern[str]]:
    """Each name a code cell glues, as a pattern (an f-string's fields match any text)."""
    names = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        for match in GLUE_CALL.finditer(_source(cell)):
            name = re.escape(match.group(3))
            if match.group(1):
                name = re.sub(r"\\\{.*?\\\}", ".+", name)
            names.append(re.compile(name))
    return names


def test_the_editions_are_the_chapters_of_the_toc():
    assert len(EDITIONS) >= 18
    assert all(p.exists() for p in EDITIONS), [p.name for p in EDITIONS if not p.exists()]


@pytest.mark.parametrize("edition", EDITIONS, ids=lambda p: p.stem)
def test_no_raw_myst_and_every_glued_value_is_glued(edition):
    cells = _cells(edition)
    markdown = "\n".join(_source(c) for c in cells if c["cell_type"] == "markdown")
    found = {k: len(p.findall(markdown)) for k, p in MARKERS.items()}
    assert not any(found.values()), found
    templates = _templates(cells)
    for template in templates:  # outside their glue roles, templates are plain Markdown too
        plain = display.GLUE_ROLE.sub("", template)
        found = {k: len(p.findall(plain)) for k, p in MARKERS.items()}
        assert not any(found.values()), (found, template[:200])
    glued = _glued_names(cells)
    roles = [m.group(1) for t in templates for m in display.GLUE_ROLE.finditer(t)]
    unknown = [name for name in roles if not any(p.fullmatch(name) for p in glued)]
    assert not unknown, f"shown but never glued: {unknown}"
    source = json.loads((ROOT / "book" / edition.name).read_text(encoding="utf-8"))["cells"]
    has_roles = any(
        display.GLUE_ROLE.search(_source(c)) for c in source if c["cell_type"] == "markdown"
    )
    assert bool(templates) == has_roles
    code = "\n".join(_source(c) for c in cells if c["cell_type"] == "code")
    assert "myst_nb" not in code  # the shim's glue records, then calls MyST-NB's itself
    if templates:  # the shim comes before any glue or template
        first = next(i for i, c in enumerate(cells) if GENERATOR.SHIM_IMPORT in _source(c))
        later = [i for i, c in enumerate(cells) if GLUE_CALL.search(_source(c))]
        assert first < min(later + [len(cells)])


@pytest.mark.parametrize("edition", EDITIONS, ids=lambda p: p.stem)
def test_the_badge_opens_the_edition_and_the_install_cell_stays(edition):
    cells = _cells(edition)
    source = _cells(ROOT / "book" / edition.name)
    assert _source(cells[1]) == _source(source[1])
    assert _source(cells[1]).endswith(f"/book/colab/{edition.name})")
    assert _source(cells[2]) == _source(source[2])


@pytest.mark.parametrize("edition", EDITIONS, ids=lambda p: p.stem)
def test_the_editions_are_valid_notebooks(edition):
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.read(edition, as_version=4))


def test_the_editions_are_in_sync():
    assert GENERATOR.main(["--check"]) == 0, GENERATOR.stale()


BIB = GENERATOR.parse_bib(
    r"""
@article{one2020x, author = {Järv, Kal and Kek{\"a}l{\"a}inen, Jaana}, year = {2020}, title = {T}}
@misc{org2021, author = {{Sentence-Transformers}}, year = 2021}
@inproceedings{many2019, author = {van den Oord, Aaron and Li, Yazhe and Vinyals, Oriol},
  title = {A {BERT} title, with a comma}, year = {2019}}
"""
)
CONTEXT = GENERATOR.Context(
    BIB, {"02_x.ipynb": "2. X"}, {"step": ("How a step runs", "03a_training_loop.ipynb")}
)


def test_the_bib_parser_reads_names_accents_and_bare_years():
    assert BIB["many2019"]["title"] == "A {BERT} title, with a comma"
    assert GENERATOR.cite_text("one2020x", BIB, textual=True) == "Järv and Kekäläinen (2020)"
    assert GENERATOR.cite_text("many2019", BIB, textual=False) == "(van den Oord et al., 2019)"
    assert GENERATOR.cite_text("org2021,one2020x", BIB, textual=False) == (
        "(Sentence-Transformers, 2021; Järv and Kekäläinen, 2020)"
    )


def test_a_hand_made_chapter_converts_to_plain_markdown():
    markdown = "\n".join(
        [
            "(intro)=",
            "# Title",
            "",
            ":::{admonition} Hint",
            ":class: dropdown",
            "A {term}`bi-encoder` and {term}`profiles <profile>`: {py:func}`~a.b.c`, "
            "{py:class}`a.B`, {cite:t}`many2019`, {cite}`one2020x`.",
            ":::",
            "",
            "```{note}",
            "See {ref}`step` and [](02_x.ipynb).",
            "```",
            "",
            "$$",
            "x = 1",
            "$$ (eq-x)",
        ]
    )
    glued = "The loss fell to {glue:text}`ch_loss:.2f` ({glue:text}`ch_verdict`), {term}`MNRL`."
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": [markdown]},
            {"cell_type": "markdown", "metadata": {}, "source": ["[![Open in Colab](x)](y)"]},
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["%pip install x"]},
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1"]}],
                "execution_count": 3,
                "source": ["from myst_nb import glue\n", 'glue("ch_loss", 0.123, display=False)'],
            },
            {"cell_type": "markdown", "metadata": {}, "source": [glued]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    cells = GENERATOR.edition(notebook, CONTEXT)["cells"]
    text = _source(cells[0])
    assert "(intro)=" not in text and "$$ (eq-x)" not in text and text.endswith("$$")
    assert (
        "> **Hint**\n>\n> A bi-encoder and profiles: `c`, `a.B`, van den Oord et al. (2019)" in text
    )
    assert "(Järv and Kekäläinen, 2020)." in text
    assert "> **Note**" in text and "[How a step runs](https://colab.research.google.com/" in text
    assert "/book/colab/03a_training_loop.ipynb)" in text and "[2. X](" in text
    assert _source(cells[1]) == "[![Open in Colab](x)](y)"
    assert [c["cell_type"] for c in cells] == [
        "markdown",
        "markdown",
        "code",
        "code",
        "code",
        "code",
    ]
    assert GENERATOR.SHIM_IMPORT in _source(cells[3])
    assert _source(cells[4]).startswith(GENERATOR.SHIM_IMPORT + "\n")
    assert cells[4]["outputs"] == [] and cells[4]["execution_count"] is None
    shown = _source(cells[5])
    assert shown.startswith("show_markdown(") and "MNRL" in shown and "{term}" not in shown
    assert "{glue:text}`ch_loss:.2f`" in shown


def test_show_markdown_substitutes_glued_values_and_updates_what_came_first(monkeypatch):
    shown = []

    class Handle:
        def update(self, obj):
            shown.append(obj.data)

    def fake_display(obj, **kwargs):  # MyST-NB's glue displays through it too
        if isinstance(obj, IPython.display.Markdown):
            shown.append(obj.data)
        return Handle() if kwargs.get("display_id") else None

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", fake_display)
    monkeypatch.setattr(display, "GLUED", {})
    monkeypatch.setattr(display, "_SHOWN", [])
    display.glue("a", "0.12345", display=False)
    display.show_markdown("a = {glue:text}`a:.2f`, b = {glue:text}`b`.")
    assert shown[-1] == "a = 0.12, b = [b: computed by a cell below]."
    display.glue("b", "yes", display=False)
    assert shown[-1] == "a = 0.12, b = yes."
