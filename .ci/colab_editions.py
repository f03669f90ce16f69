"""Write the Colab edition of every chapter: its MyST markup turned into Markdown Colab shows.

Colab shows MyST markup raw: ``{glue:text}`` roles lose the numbers and verdicts of the prose,
``{term}``, ``{py:func}`` and ``{cite}`` roles, ``:::{admonition}`` fences and ``(label)=``
targets read as noise. For every chapter in ``_toc.yml`` this writes ``book/colab/<name>.ipynb``
(the badges open it, see ``.ci/publishing.py``):

* a Markdown cell without glue roles becomes plain Markdown: a term or a cross-reference its
  text, a Python role its name in backticks (``~a.b.c``: ``c``), a citation "Authors (year)" or
  "(Authors, year)" from ``book/references.bib``, an admonition a blockquote under its title in
  bold (a dropdown stays open), a link to another page of the book a link to that page on
  GitHub at the release; labels of targets and equations are dropped;
* a Markdown cell with glue roles becomes a code cell that shows the same Markdown with this
  run's values: ``show_markdown(...)`` of :mod:`sbert_tutor.book.display`, whose ``glue`` the
  edition imports instead of MyST-NB's (it records the value, then glues it as before);
* code cells stay as they are (the badge already opens the edition); outputs are not kept.

Usage (from the repository root)::

    python .ci/colab_editions.py           # write the editions, list what changed
    python .ci/colab_editions.py --check   # list stale or missing editions; exit 1 if any

``tests/test_colab_editions.py`` runs the check.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / ".ci"))  # publishing.py, beside this script

import publishing  # noqa: E402

from sbert_tutor.book import display  # noqa: E402
from sbert_tutor.settings import RELEASE_REF, REPOSITORY_URL  # noqa: E402

__all__ = [
    "Context",
    "cite_text",
    "convert_markdown",
    "edition",
    "main",
    "parse_bib",
    "toc_chapters",
]

EDITIONS = ROOT / publishing.COLAB_EDITIONS
#: The line that replaces MyST-NB's ``glue`` import in an edition (made from the functions, so a
#: rename there breaks this script, not the editions on Colab).
SHIM_IMPORT = (
    f"from {display.__name__} import {display.glue.__name__}, {display.show_markdown.__name__}"
)
MYST_GLUE_IMPORT = re.compile(r"^(\s*)from myst_nb import glue\s*$", re.M)

ROLE = re.compile(r"\{([a-z][\w:-]*)\}`([^`]*)`")
TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)
FENCE_OPEN = re.compile(r"^(\s*)(:{3,}|`{3,})\{([\w:-]+)\}[ \t]*(.*?)\s*$")
LABEL_LINE = re.compile(r"^\s*\([\w.:-]+\)=\s*$")
EQUATION_LABEL = re.compile(r"(\$\$)[ \t]*\([\w.:-]+\)[ \t]*$", re.M)
LOCAL_LINK = re.compile(r"\[([^\]]*)\]\(((?!\w+:)[\w./-]+\.(?:ipynb|md))(#[\w-]+)?\)")
HEADING = re.compile(r"^#+\s+(.*?)\s*$", re.M)


# ---- the bibliography ------------------------------------------------------------------------


def _braced(text: str, start: int) -> tuple[str, int]:
    """The text of the ``{...}`` group opening at ``text[start]`` and the index after it."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1 : i], i + 1
    raise ValueError(f"unbalanced braces from {text[start : start + 40]!r}")


def _latex(text: str) -> str:
    """Plain text of a bib value: accents like ``{\\"a}`` become letters, braces go."""
    accents = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "~": "\u0303", "^": "\u0302"}
    text = re.sub(r"\{?\\([\"'`~^])\{?(\w)\}?\}?", lambda m: m.group(2) + accents[m.group(1)], text)
    text = re.sub(r"\{?\\o\}?", "\u00f8", text)
    return unicodedata.normalize("NFC", re.sub(r"[{}]", "", text)).strip()


def parse_bib(text: str) -> dict[str, dict[str, str]]:
    """Entries of a BibTeX file: key -> field (lower case) -> raw value (braces kept)."""
    entries: dict[str, dict[str, str]] = {}
    for match in re.finditer(r"@(\w+)\s*\{\s*([^,\s]+)\s*,", text):
        if match.group(1).lower() in {"comment", "string", "preamble"}:
            continue
        fields: dict[str, str] = {}
        i = match.end()
        while True:
            field = re.compile(r"\s*(\w+)\s*=\s*").match(text, i)
            if not field:
                break
            i = field.end()
            if text[i] == "{":
                value, i = _braced(text, i)
            elif text[i] == '"':
                end = text.index('"', i + 1)
                value, i = text[i + 1 : end], end + 1
            else:
                bare = re.compile(r"[^,}\s]+").match(text, i)
                assert bare, text[i : i + 40]
                value, i = bare.group(0), bare.end()
            fields[field.group(1).lower()] = value
            comma = re.compile(r"\s*,").match(text, i)
            if not comma:
                break
            i = comma.end()
        entries[match.group(2)] = fields
    return entries


def _last_names(author: str) -> list[str]:
    """Each author's last name ("Last, First" or "First Last"; ``{Org}`` kept whole)."""
    names = []
    for name in re.split(r"\s+and\s+", author.strip()):
        if name.startswith("{") and name.endswith("}") and "," not in name:
            names.append(_latex(name))
        elif "," in name:
            names.append(_latex(name.split(",")[0]))
        else:
            names.append(_latex(name.split()[-1]))
    return names


def cite_text(keys: str, bib: dict[str, dict[str, str]], textual: bool) -> str:
    """A citation as the book shows it: "Authors (year)" (``textual``) or "(Authors, year)";
    "A and B" for two authors, "A et al." for more; several keys joined by "; "."""
    parts = []
    for key in (k.strip() for k in keys.split(",")):
        if key not in bib:
            raise KeyError(f"citation {key!r} is not in book/references.bib")
        names = _last_names(bib[key].get("author") or bib[key].get("editor", key))
        who = " and ".join(names) if len(names) <= 2 else f"{names[0]} et al."
        year = _latex(bib[key].get("year", "n.d."))
        parts.append(f"{who} ({year})" if textual else f"{who}, {year}")
    return "; ".join(parts) if textual else f"({'; '.join(parts)})"


# ---- the markup ------------------------------------------------------------------------------


class Context:
    """What a conversion needs from the whole book: the bibliography, the chapters' titles and
    the labelled sections (label -> (heading, notebook))."""

    def __init__(
        self,
        bib: dict[str, dict[str, str]],
        titles: dict[str, str] | None = None,
        labels: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        self.bib = bib
        self.titles = titles or {}
        self.labels = labels or {}

    @classmethod
    def of_book(cls, root: Path = ROOT) -> Context:
        """The context of the book at ``root``: its bibliography, titles and labels."""
        bib = parse_bib((root / "book" / "references.bib").read_text(encoding="utf-8"))
        titles: dict[str, str] = {}
        labels: dict[str, tuple[str, str]] = {}
        for path in sorted((root / "book").glob("*.ipynb")) + sorted((root / "book").glob("*.md")):
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".ipynb":
                cells = json.loads(text)["cells"]
                text = "\n\n".join(_source(c) for c in cells if c["cell_type"] == "markdown")
            heading = HEADING.search(text)
            titles[path.name] = heading.group(1) if heading else path.stem
            for label in re.finditer(r"^\(([\w.:-]+)\)=\s*\n#+\s+(.*?)\s*$", text, re.M):
                labels[label.group(1)] = (label.group(2), path.name)
        return cls(bib, titles, labels)

    def page_url(self, name: str) -> str:
        """Where a reader on Colab opens another page of the book: a chapter's Colab edition, any
        other page (notation, glossary) on GitHub at the release."""
        if name.endswith(".ipynb"):
            return publishing.colab_url(name)
        return f"{REPOSITORY_URL}/blob/{RELEASE_REF}/book/{name}"


def _role(role: str, content: str, context: Context) -> str:
    """Plain Markdown for one MyST role (glue roles are left to :func:`sbert_tutor.book.display`)."""
    titled = TITLED.match(content)
    text, target = (titled.group(1), titled.group(2)) if titled else (None, content)
    if role.startswith("glue"):
        return f"{{{role}}}`{content}`"
    if role == "term":
        return text or target
    if role.startswith("py:"):
        if text:
            return f"`{text}`"
        return f"`{target[1:].rsplit('.', 1)[-1]}`" if target.startswith("~") else f"`{target}`"
    if role.startswith("cite"):
        return cite_text(content, context.bib, textual=role == "cite:t")
    if role in {"ref", "numref"}:
        if target in context.labels:
            heading, page = context.labels[target]
            return f"[{text or heading}]({context.page_url(page)})"
        return text or ("that section" if role == "ref" else "that figure")
    if role == "doc":
        page = target.rsplit("/", 1)[-1]
        page += "" if page.endswith((".md", ".ipynb")) else ".ipynb"
        return f"[{text or context.titles.get(page, page)}]({context.page_url(page)})"
    if role == "eq":
        return text or "that equation"
    return text or target  # any other role: its text


def _roles(text: str, context: Context) -> str:
    """Every MyST role of ``text`` as plain Markdown; local links point where Colab can go."""
    text = ROLE.sub(lambda m: _role(m.group(1), m.group(2), context), text)

    def link(match: re.Match[str]) -> str:
        page = match.group(2).rsplit("/", 1)[-1]
        return f"[{match.group(1) or context.titles.get(page, page)}]({context.page_url(page)})"

    return LOCAL_LINK.sub(link, text)


def _fences(lines: list[str]) -> list[str]:
    """Admonition fences (``:::{name} title`` ... ``:::``, or with backticks) as blockquotes
    with the title in bold; fences nest when the outer one is longer."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        opened = FENCE_OPEN.match(lines[i])
        if not opened:
            out.append(lines[i])
            i += 1
            continue
        indent, fence, name, title = opened.groups()
        close = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        body = lines[i + 1 : j]
        while body and re.match(r"^\s*:[\w-]+:", body[0]):  # options (:class: dropdown)
            body = body[1:]
        while body and not body[0].strip():
            body = body[1:]
        title = title or name.split(":")[-1].replace("-", " ").capitalize()
        quoted = [f"**{title}**", ""] + _fences(body)
        out += [f"{indent}> {line}".rstrip() for line in quoted]
        i = j + 1
    return out


def convert_markdown(text: str, context: Context) -> str:
    """A Markdown cell's MyST as Markdown Colab shows; glue roles stay for ``show_markdown``."""
    lines = [line for line in text.split("\n") if not LABEL_LINE.match(line)]
    text = "\n".join(_fences(lines))
    text = EQUATION_LABEL.sub(r"\1", text)
    return _roles(text, context).strip("\n")


# ---- the notebooks ---------------------------------------------------------------------------


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _python_string(text: str) -> str:
    """``text`` as a Python literal that reads well: a raw triple-quoted string when it can be."""
    if '"""' not in text and not text.endswith("\\") and "\r" not in text:
        return f'r"""\n{text}\n"""'
    return repr(text)


def _code_cell(source: str, cell_id: str | None) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": "code", "execution_count": None, "metadata": {}}
    if cell_id:
        cell["id"] = cell_id
    cell.update(outputs=[], source=_lines(source))
    return cell


def edition(notebook: dict[str, Any], context: Context) -> dict[str, Any]:
    """The Colab edition of a chapter (a notebook as nbformat's JSON)."""
    new = copy.deepcopy(notebook)
    cells: list[dict[str, Any]] = []
    needs_shim = False
    for index, cell in enumerate(new["cells"]):
        source = _source(cell)
        if cell["cell_type"] == "markdown" and index != publishing.BADGE_CELL:
            converted = convert_markdown(source, context)
            if display.GLUE_ROLE.search(converted):
                needs_shim = True
                call = f"{display.show_markdown.__name__}({_python_string(converted)})"
                cells.append(_code_cell(call, cell.get("id")))
                continue
            cell["source"] = _lines(converted)
        elif cell["cell_type"] == "code":
            cell["source"] = _lines(MYST_GLUE_IMPORT.sub(rf"\g<1>{SHIM_IMPORT}", source))
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    if needs_shim:
        shim = _code_cell(
            "# Colab edition: the prose's numbers are glued by this run and shown by\n"
            f"# {display.show_markdown.__name__}() (Colab cannot read MyST's glue roles).\n"
            + SHIM_IMPORT,
            "colab-glue",
        )
        cells.insert(publishing.INSTALL_CELL + 1, shim)
    new["cells"] = cells
    return new


def toc_chapters(root: Path = ROOT) -> list[Path]:
    """The notebooks ``_toc.yml`` names, in its order (a small reader: ``- file: x`` lines)."""
    toc = (root / "_toc.yml").read_text(encoding="utf-8")
    files = re.findall(r"^\s*(?:-\s*)?(?:file|root):\s*(\S+)\s*$", toc, re.M)
    paths = [root / f"{f}.ipynb" for f in files]
    return [p for p in paths if p.exists()]


def _dump(notebook: dict[str, Any]) -> str:
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def _expected(root: Path) -> dict[Path, str]:
    context = Context.of_book(root)
    out = root / publishing.COLAB_EDITIONS
    return {
        out / path.name: _dump(edition(json.loads(path.read_text(encoding="utf-8")), context))
        for path in toc_chapters(root)
    }


def stale(root: Path = ROOT) -> list[str]:
    """Editions that are missing, out of date, or of no chapter (empty: all in sync)."""
    expected = _expected(root)
    found = [
        f"{p.relative_to(root)}: {'missing' if not p.exists() else 'stale'}"
        for p, text in expected.items()
        if not p.exists() or p.read_text(encoding="utf-8") != text
    ]
    extra = set((root / publishing.COLAB_EDITIONS).glob("*.ipynb")) - set(expected)
    return found + [f"{p.relative_to(root)}: of no chapter in _toc.yml" for p in sorted(extra)]


def write(root: Path = ROOT) -> list[str]:
    """Write every edition that differs (and remove those of no chapter); what changed."""
    expected = _expected(root)
    changed = []
    (root / publishing.COLAB_EDITIONS).mkdir(parents=True, exist_ok=True)
    for path, text in expected.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(f"wrote {path.relative_to(root)}")
    for path in sorted(set((root / publishing.COLAB_EDITIONS).glob("*.ipynb")) - set(expected)):
        path.unlink()
        changed.append(f"removed {path.relative_to(root)}")
    return changed


def main(argv: list[str] | None = None) -> int:
    """The command line: write the editions, or ``--check`` them."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only list stale editions")
    parser.add_argument("--root", default=str(ROOT))
    args = parser.parse_args(argv)
    root = Path(args.root)
    action: Callable[[Path], list[str]] = stale if args.check else write
    found = action(root)
    print("\n".join(found) or "all Colab editions are in sync")
    return 1 if args.check and found else 0


if __name__ == "__main__":
    sys.exit(main())
