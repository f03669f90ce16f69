"""Tests of .ci/check_pages.py on small hand-written sites, in the same headless Chromium.

Run by `bash .ci/task check-pages` (which installs Chromium, MathJax 3 and playwright) before it
checks the book; not part of the unit-test run (`tests/`). The browser tests fail, never skip,
when Chromium or MathJax is missing: point SBERT_TUTOR_MATHJAX at MathJax's `es5` folder and
SBERT_TUTOR_CHROMIUM at the browser if they are not where the task puts them.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "check_pages", Path(__file__).with_name("check_pages.py")
)
check_pages = importlib.util.module_from_spec(_spec)
sys.modules["check_pages"] = check_pages
_spec.loader.exec_module(check_pages)

MATHJAX = Path(os.environ.get("SBERT_TUTOR_MATHJAX", ROOT / "_build/npm/node_modules/mathjax/es5"))
CHROMIUM = os.environ.get("SBERT_TUTOR_CHROMIUM", check_pages.CHROMIUM)
# A 2x2 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAwMDAAAANAAH/"
    "n1x3WQAAAABJRU5ErkJggg=="
)

HEAD = """<!DOCTYPE html><html><head><meta charset="utf-8">
<script>window.MathJax = {"options": {"processHtmlClass": "math"}}</script>
<script defer src="_static/mathjax/tex-mml-chtml.js"></script>
<style>body { margin: 0 } article { width: 600px; padding: 0 20px }</style>
</head><body class="tex2jax_ignore"><main><article>
"""
TAIL = "</article></main></body></html>\n"
WIDE_SUM = " + ".join(f"\\frac{{x_{{{i}}}}}{{y_{{{i}}} + z_{{{i}}}}}" for i in range(30))

GOOD = f"""{HEAD}
<h1 id="top">A clean page</h1>
<p>Inline <span class="math notranslate">\\(a^2 + b^2\\)</span> in prose.</p>
<div class="math notranslate">\\[ \\begin{{aligned}} a &= b + c, \\\\ d &= e. \\end{{aligned}} \\]</div>
<div class="cell_output"><img src="fig.png" alt="a figure"></div>
<img src="https://example.invalid/badge.svg" alt="external badge">
<p><a href="other.html#sec">other</a> <a href="#top">top</a> <a href="sub/">folder</a>
<a href="https://example.invalid/">external</a> <a href="mailto:a@b.invalid">mail</a></p>
<pre>short = "line"</pre>
<p>Python references as Sphinx writes them: resolved
<a class="reference internal" href="other.html#sec" title="pkg.f"><code class="xref py py-func docutils
literal notranslate"><span class="pre">f()</span></code></a> and
<a class="reference internal" href="#top"><code class="xref py py-mod docutils literal notranslate">
<span class="pre">pkg</span></code></a>; a name outside the library, shown as code and not counted:
<code class="py py-class docutils literal notranslate"><span class="pre">Tensor</span></code>.</p>
<script>const THEBE_JS_URL = "x";</script><script>const THEBE_JS_URL = "x";</script>
{TAIL}"""

BAD = f"""{HEAD}
<h1>A broken page</h1>
<div class="math notranslate">\\[ {WIDE_SUM} \\]</div>
<div class="math notranslate">\\[ \\frac{{a}} \\]</div>
<p>Stray dollars $<span class="math notranslate">\\(x + y\\)</span>$ around math.</p>
<p>Raw TeX \\frac{{1}}{{2}} in prose, and <span class="math notranslate">\\(;
the ideal order of the grades is\\)</span> prose typeset as math.</p>
<img src="missing.png" alt="gone">
<p><a href="missing.html">no page</a> <a href="other.html#nope">no anchor</a></p>
<p>An unresolved Python reference: <code class="xref py py-func docutils literal notranslate">
<span class="pre">pkg.moved_away()</span></code>, and a resolved one:
<a class="reference internal" href="other.html#sec"><code class="xref py py-class docutils literal
notranslate"><span class="pre">Kept</span></code></a>.</p>
<pre style="overflow: hidden; width: 200px">{"x = 1; " * 40}</pre>
<script>throw new Error("boom in the page");</script>
{TAIL}"""

NO_MATHJAX = """<!DOCTYPE html><html><head><meta charset="utf-8">
<script defer src="_static/nomathjax/tex-mml-chtml.js"></script></head><body><main>
<p>Math: <span class="math notranslate">\\(x\\)</span></p></main></body></html>
"""


def notebook(n_images: int) -> str:
    png = {
        "data": {"image/png": "iVBOR", "text/plain": ["<Figure>"]},
        "metadata": {},
        "output_type": "display_data",
    }
    cell = {
        "cell_type": "code",
        "metadata": {},
        "source": [],
        "execution_count": 1,
        "outputs": [png] * n_images,
    }
    # a figure the book removes on purpose (tag remove-output) is not expected on the page
    removed = dict(cell, metadata={"tags": ["remove-output"]}, outputs=[png])
    cells = [cell, removed]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    assert (MATHJAX / "tex-mml-chtml.js").is_file(), (
        f"MathJax 3 not found at {MATHJAX}: run `bash .ci/task check-pages` (it installs npm "
        "`mathjax@3`) or set SBERT_TUTOR_MATHJAX to its es5 folder"
    )
    root = tmp_path_factory.mktemp("site")
    (root / "_static").mkdir()
    (root / "_static/mathjax").symlink_to(MATHJAX, target_is_directory=True)
    (root / "fig.png").write_bytes(PNG)
    (root / "good.html").write_text(GOOD)
    (root / "bad.html").write_text(BAD)
    (root / "other.html").write_text('<html><body><h2 id="sec">Section</h2></body></html>')
    (root / "sub").mkdir()
    (root / "sub/index.html").write_text("<html><body>folder index</body></html>")
    (root / "nomathjax.html").write_text(NO_MATHJAX)
    (root / "redirect_ok.html").write_text(
        '<meta http-equiv="Refresh" content="0; url=good.html" />'
    )
    (root / "redirect_bad.html").write_text(
        '<meta http-equiv="Refresh" content="0; url=gone.html" />'
    )
    # notebooks behind pages: good.html shows its one figure, bad.html none of its two
    (root / "_sources").mkdir()
    (root / "_sources/good.ipynb").write_text(notebook(1))
    (root / "_sources/bad.ipynb").write_text(notebook(2))
    return root


@pytest.fixture(scope="module")
def reports(site) -> dict[str, check_pages.PageReport]:
    assert Path(CHROMIUM).is_file(), f"no Chromium at {CHROMIUM} (`apt-get install chromium`)"
    found = check_pages.check_site(site, chromium=CHROMIUM, expect_outputs=True, math_timeout_s=20)
    return {r.page: r for r in found}


def details(report: check_pages.PageReport, kind: str) -> list[str]:
    return [d for k, d in report.problems if k == kind]


def test_pages_are_every_html_outside_asset_folders(site):
    names = [p.relative_to(site).as_posix() for p in check_pages.pages_of(site)]
    assert names == [
        "bad.html",
        "good.html",
        "nomathjax.html",
        "other.html",
        "redirect_bad.html",
        "redirect_ok.html",
        "sub/index.html",
    ]


def test_resolve_link_files_folders_and_anchors(site):
    base = "http://127.0.0.1:1/"
    assert check_pages.resolve_link(site, base, base + "other.html#sec") is None
    assert check_pages.resolve_link(site, base, base + "sub/") is None
    assert check_pages.resolve_link(site, base, base + "fig.png") is None
    assert check_pages.resolve_link(site, base, "https://example.invalid/x.html") is None
    assert "no such file" in check_pages.resolve_link(site, base, base + "nope.html")
    assert "no element" in check_pages.resolve_link(site, base, base + "other.html#nope")
    assert "no element" in check_pages.resolve_link(site, base, base + "good.html#sec")


def test_notebook_images_counts_image_outputs(site):
    assert check_pages.notebook_images(site, site / "bad.html") == 2
    assert check_pages.notebook_images(site, site / "good.html") == 1
    assert check_pages.notebook_images(site, site / "other.html") is None


def test_clean_page_passes(reports):
    good = reports["good.html"]
    assert good.ok, good.problems
    assert good.counts["display"] == 1 and good.counts["inline"] == 1
    assert good.counts["figures"] == 1
    # two resolved Python references; the outside name (no `xref` class) is not one
    assert good.counts["pyrefs"] == 2 and good.counts["pyrefs_unresolved"] == 0
    # the external image is not fetched (no network) and is only noted; the known upstream
    # duplicate-script error is noted, not failed
    assert any("external image" in n for n in good.notes)
    assert any("THEBE_JS_URL" in n for n in good.notes)


def test_broken_page_fails_on_each_fault(reports):
    bad = reports["bad.html"]
    assert not bad.ok
    wide = details(bad, "wide")
    assert len(wide) == 1 and "\\frac{x_{0}}" in wide[0]
    math = details(bad, "math")
    assert any("MathJax error" in d and "\\frac{a}" in d for d in math), math
    assert any("TeX left as text" in d and "x + y" in d for d in math), math
    assert any("TeX left as text" in d and "\\frac{1}{2}" in d for d in math), math
    assert any("prose inside math" in d and "ideal order" in d for d in math), math
    image = details(bad, "image")
    assert any("missing.png" in d for d in image), image
    assert any("notebook has 2 image output" in d for d in image), image
    assert any(k == "outputs" for k, _ in bad.problems)  # --expect-outputs: no cell output
    links = details(bad, "link")
    assert sorted(links) == sorted(
        [
            "broken link: missing.html: no such file",
            "broken link: other.html#nope: no element with that id on the target page",
        ]
    )
    assert len(details(bad, "code")) == 1
    assert details(bad, "pyref") == ["unresolved Python reference: pkg.moved_away()"]
    assert bad.counts["pyrefs"] == 1 and bad.counts["pyrefs_unresolved"] == 1
    load = details(bad, "load")
    assert any("boom in the page" in d for d in load), load
    assert any("HTTP 404: missing.png" in d for d in load), load


def test_page_without_mathjax_fails(reports):
    page = reports["nomathjax.html"]
    math = details(page, "math")
    assert any("MathJax did not load" in d for d in math), math
    assert any("not typeset" in d for d in math), math
    assert any("HTTP 404" in d for d in details(page, "load"))


def test_redirect_stubs(reports):
    assert reports["redirect_ok.html"].ok
    assert details(reports["redirect_bad.html"], "link") == [
        "redirect to a missing page: gone.html: no such file"
    ]


def test_report_prints_a_summary(reports, capsys):
    check_pages.print_reports(list(reports.values()))
    out = capsys.readouterr().out
    assert "FAIL bad.html" in out and "PASS good.html" in out
    assert "2 Python references (0 unresolved)" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("check_pages: 7 pages, 4 passed, 3 failed")
    assert last.endswith("; Python references: 3 resolved, 1 unresolved")


def test_main_exit_code(site):
    assert check_pages.main([str(site / "sub"), "--chromium", CHROMIUM]) == 0
    assert check_pages.main([str(site), "--chromium", CHROMIUM]) == 1
