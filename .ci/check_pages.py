r"""Load every page of a built book in headless Chromium and check what a reader sees.

usage: python .ci/check_pages.py BUILD_DIR [--width 1200] [--height 800] [--expect-outputs]

BUILD_DIR is a jupyter-book/sphinx HTML folder (`bash .ci/task check-pages` builds one whose
MathJax is a local copy under `_static/mathjax`). It is served on 127.0.0.1 by Python's http.server;
the browser may load nothing from anywhere else (other requests are aborted and listed).

Pages are measured at a 1200 px wide window: there sphinx-book-theme shows both sidebars and its
text column is at its narrowest on a desktop screen (624 px), so what fits there fits on any
wider window.

A page fails on
  math      MathJax did not load or start, a formula with a MathJax error (`mjx-merror`), math
            left untypeset, TeX left as text in the prose (`$$`, `\[`, `\frac`, stray `$` around
            a formula), or prose typeset as math (an unbalanced `$`);
  wide      a display equation wider than the text column, or an inline one sticking out of its
            paragraph;
  image     an <img> from the site that did not load, or fewer figures in the page's cell outputs
            than image outputs in its notebook (`_sources/*.ipynb`);
  link      an internal link to a missing file, or to an #anchor that the target page lacks;
  code      a <pre> block whose lines are clipped (wider than its box);
  load      a same-site request that failed (4xx/5xx), or an uncaught JavaScript error (bar the
            known upstream ones in KNOWN_JS_ERRORS);
  outputs   (with --expect-outputs) a notebook page with no cell output at all;
  pyref     a Python reference that did not resolve: a chapter's {py:func}`...` (or a docstring's
            :func:`...` on the API pages) that Sphinx left as <code class="xref py ..."> outside
            a link. A resolved one sits in <a class="reference internal" href=...>. Names outside
            the library (torch.Tensor) are shown as code without the `xref` class and not counted
            (book/_ext/pyrefs.py).
Notes, not failures: external images (not fetched), cell-output tables that scroll sideways.

Prints one line per page (PASS/FAIL, counts) with each problem below it, then the notes and a
summary line with the Python references resolved and unresolved over all pages; exits 1 if any
page fails. Needs the Python package `playwright` and a Chromium
binary (Debian's `chromium`); Playwright's own browser downloads are never used.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

CHROMIUM = "/usr/bin/chromium"
# Known to work as root on a machine whose only network is the package registries: the
# background-networking flags stop Chromium from calling home (those connections are refused).
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Uncaught JavaScript errors that are known, upstream and harmless; any other one fails the page.
# jupyter-book 1.x (Sphinx 7) writes sphinx-thebe's inline config <script> twice; the second copy
# re-declares its `const`s and throws, the first has already set them (thebe is off in this book).
KNOWN_JS_ERRORS = ("Identifier 'THEBE_JS_URL' has already been declared",)
SKIP_DIRS = {"_static", "_sources", "_images", "_downloads"}
REMOVED_OUTPUT_TAGS = {"remove-output", "remove-cell", "remove_output", "remove_cell"}
IMAGE_MIME = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")

# Runs in the page after `load`. Waits for MathJax's startup promise (initial typesetting), then
# measures. Returns plain data; the Python side decides what fails.
PAGE_PROBE = r"""
async ({mathTimeoutMs}) => {
  const out = {mathjax: 'none', merrors: [], untypeset: 0, texText: [], display: 0, inline: 0,
               wide: [], images: [], pres: [], links: [], outputs: 0, outputImages: 0};
  const MJ = window.MathJax;
  const hasScript = [...document.scripts].some(s => /mathjax/i.test(s.src || ''));
  const mathEls = [...document.querySelectorAll('.math')];
  if (hasScript || mathEls.length) {
    if (!MJ || !MJ.startup || !MJ.startup.promise) {
      out.mathjax = 'MathJax did not load (script missing, or not MathJax 3)';
    } else {
      const timeout = new Promise((_, reject) =>
        setTimeout(() => reject(new Error('no result after ' + mathTimeoutMs + ' ms')), mathTimeoutMs));
      try { await Promise.race([MJ.startup.promise, timeout]); out.mathjax = 'ok'; }
      catch (e) { out.mathjax = 'MathJax startup failed: ' + e; }
    }
  }
  const texOf = (el) => {  // the TeX source of a typeset mjx-container
    try {
      for (const item of MJ.startup.document.math)
        if (item.typesetRoot === el) return item.math.trim().replace(/\s+/g, ' ');
    } catch (e) { /* fall through */ }
    return el.textContent.trim().slice(0, 80);
  };
  for (const e of document.querySelectorAll('mjx-merror')) {
    const c = e.closest('mjx-container');
    out.merrors.push({message: e.getAttribute('data-mjx-error') || e.textContent,
                      tex: c ? texOf(c) : ''});
  }
  out.untypeset = mathEls.filter(e => !e.querySelector('mjx-container')).length;
  // TeX that never became math: delimiters left in the prose (code blocks excluded).
  const main = document.querySelector('main, article') || document.body;
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement.closest('pre, code, script, style, mjx-container, .math')) continue;
    const m = n.nodeValue.match(/\$\$|\\\[|\\\(|\\[a-zA-Z]{2,}/);
    if (m) out.texText.push(n.nodeValue.trim().slice(0, 100));
  }
  // `$$ ... $$` inside a paragraph is parsed as `$` + inline math + `$`: stray dollars.
  for (const e of mathEls) {
    const before = e.previousSibling, after = e.nextSibling;
    if ((before && before.nodeType === 3 && /\$\s*$/.test(before.nodeValue)) ||
        (after && after.nodeType === 3 && /^\s*\$/.test(after.nodeValue)))
      out.texText.push('$ ' + texOf(e.querySelector('mjx-container') || e).slice(0, 80) +
                       ' $ (a $$ equation inside a ' +
                       'paragraph? give it blank lines around)');
  }
  // prose typeset as math: an unbalanced `$` pairs with the next one across the words between
  for (const item of (MJ && MJ.startup && MJ.startup.document ? MJ.startup.document.math : [])) {
    const bare = item.math.replace(/\\[a-zA-Z]+\s*\{[^{}]*\}/g, ' ');
    if (/[a-zA-Z]{3,}\s+[a-zA-Z]{3,}\s+[a-zA-Z]{3,}/.test(bare))
      out.texText.push('prose inside math (an unbalanced $?): $' + item.math.trim().slice(0, 80) + '$');
  }
  for (const c of document.querySelectorAll('mjx-container')) {
    const display = c.getAttribute('display') === 'true';
    const m = c.querySelector('mjx-math');
    if (display) out.display++; else out.inline++;
    if (!m || c.getClientRects().length === 0) continue;  // not rendered (hidden)
    if (display) {
      const width = m.getBoundingClientRect().width;
      if (width > c.clientWidth + 1)
        out.wide.push({tex: texOf(c), width: Math.round(width), column: c.clientWidth});
    } else {
      // inline math: must not stick out of the block (paragraph, list item) it sits in
      const block = c.closest('p, li, dd, dt, td, th, figcaption, div');
      if (!block || block.clientWidth === 0) continue;
      const b = block.getBoundingClientRect(), r = m.getBoundingClientRect();
      const style = getComputedStyle(block);
      const right = b.right - parseFloat(style.paddingRight || '0') - parseFloat(style.borderRightWidth || '0');
      if (r.right > right + 1)
        out.wide.push({tex: texOf(c), width: Math.round(r.width),
                       column: Math.round(right - b.left), inline: true});
    }
  }
  for (const img of document.images) {
    if (img.loading === 'lazy') img.loading = 'eager';
  }
  await Promise.all([...document.images].map(i => i.decode().catch(() => null)));
  for (const img of document.images) {
    out.images.push({src: img.currentSrc || img.src, ok: img.complete && img.naturalWidth > 0,
                     alt: img.alt || ''});
  }
  for (const p of document.querySelectorAll('pre')) {
    if (p.clientWidth === 0 || p.scrollWidth <= p.clientWidth + 1) continue;
    const lines = p.textContent.split('\n');
    const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
    out.pres.push({width: p.scrollWidth, box: p.clientWidth, line: longest.trim().slice(0, 100)});
  }
  // cell outputs (tables) wider than the column scroll sideways: reported, not failed
  out.wideOutputs = [];
  for (const o of document.querySelectorAll('div.cell_output div.output')) {
    if (o.clientWidth > 0 && o.scrollWidth > o.clientWidth + 1 && !o.querySelector('pre'))
      out.wideOutputs.push({width: o.scrollWidth, box: o.clientWidth,
                            what: o.querySelector('table') ? 'table' : 'output'});
  }
  out.links = [...new Set([...document.querySelectorAll('a[href]')].map(a => a.href))];
  out.outputs = document.querySelectorAll('div.cell_output').length;
  out.outputImages = document.querySelectorAll('div.cell_output img').length;
  // Python references in the page's text (not the navigation's copies of its headings): Sphinx
  // marks each with `xref py`; a resolved one is inside a link, an unresolved one is bare code
  out.pyrefs = {resolved: 0, unresolved: []};
  for (const c of (document.querySelector('article') || main).querySelectorAll('code.xref.py')) {
    const a = c.closest('a[href]');
    if (a && a.classList.contains('reference')) out.pyrefs.resolved++;
    else out.pyrefs.unresolved.push(c.textContent.trim().replace(/\s+/g, ' ').slice(0, 100));
  }
  return out;
}
"""


@dataclass
class PageReport:
    """What one page showed: counts, and every problem as (kind, detail)."""

    page: str
    problems: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


class _Ids(HTMLParser):
    """Collects the anchors a page offers (every id, and <a name=...>) and a meta refresh."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refresh: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key, value in attrs:
            if value is not None and (key == "id" or (tag == "a" and key == "name")):
                self.ids.add(value)
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "refresh":
            content = a.get("content") or ""
            self.refresh = content.split("url=", 1)[1].strip() if "url=" in content else ""


@functools.cache
def _parse(path: Path) -> _Ids:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def _anchors(path: Path) -> frozenset[str]:
    return frozenset(_parse(path).ids)


def pages_of(root: Path) -> list[Path]:
    """Every HTML page of the build, outside sphinx's asset folders."""
    return sorted(
        p for p in root.rglob("*.html") if not (set(p.relative_to(root).parts[:-1]) & SKIP_DIRS)
    )


def resolve_link(root: Path, base: str, href: str) -> str | None:
    """Return why an internal link is broken, or None when it resolves (external links: None).

    `href` is absolute (the browser resolved it); it is internal when it starts with `base`.
    """
    if not href.startswith(base):
        return None
    parts = urlsplit(href)
    rel = unquote(parts.path).lstrip("/")
    target = root / rel
    if rel == "" or rel.endswith("/") or target.is_dir():
        target = target / "index.html"
    if not target.is_file():
        return f"{rel or '/'}: no such file"
    fragment = unquote(parts.fragment)
    if fragment and target.suffix == ".html" and fragment not in _anchors(target):
        return f"{rel}#{fragment}: no element with that id on the target page"
    return None


def notebook_images(root: Path, page: Path) -> int | None:
    """Image outputs in the notebook behind `page` (from `_sources`), or None if it has none."""
    rel = page.relative_to(root).with_suffix(".ipynb")
    source = root / "_sources" / rel
    if not source.is_file():
        return None
    notebook = json.loads(source.read_text(encoding="utf-8"))
    count = 0
    for cell in notebook.get("cells", []):
        if set(cell.get("metadata", {}).get("tags", [])) & REMOVED_OUTPUT_TAGS:
            continue  # the book leaves these outputs out on purpose
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {})
            if any(mime in data for mime in IMAGE_MIME):
                count += 1
    return count


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve `root` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _judge(
    root: Path, page: Path, base: str, probe: dict, events: dict, expect_outputs: bool
) -> PageReport:
    report = PageReport(page.relative_to(root).as_posix())
    add = report.problems.append
    if probe["mathjax"] not in ("ok", "none"):
        add(("math", probe["mathjax"]))
    for err in probe["merrors"]:
        add(("math", f"MathJax error: {err['message']} in: {err['tex'][:120]}"))
    if probe["untypeset"]:
        add(("math", f"{probe['untypeset']} math element(s) not typeset"))
    for text in probe["texText"]:
        add(("math", f"TeX left as text: {text!r}"))
    for eq in probe["wide"]:
        what = "inline equation" if eq.get("inline") else "display equation"
        add(
            ("wide", f"{what} {eq['width']}px wide in a {eq['column']}px column: {eq['tex'][:120]}")
        )
    for img in probe["images"]:
        if not img["src"].startswith(base):
            report.notes.append(f"external image, not loaded by the check: {img['src']}")
        elif not img["ok"]:
            add(("image", f"image did not load: {img['src'][len(base) :]} (alt {img['alt']!r})"))
    expected = notebook_images(root, page)
    if expected is not None and probe["outputImages"] < expected:
        add(
            (
                "image",
                f"{probe['outputImages']} figure(s) in the cell outputs, but the notebook "
                f"has {expected} image output(s)",
            )
        )
    if (
        expect_outputs
        and (root / "_sources" / page.relative_to(root)).with_suffix(".ipynb").is_file()
        and probe["outputs"] == 0
    ):
        add(("outputs", "a notebook page with no cell output: were the notebooks executed?"))
    internal = 0
    for href in probe["links"]:
        if href.startswith(base):
            internal += 1
        why = resolve_link(root, base, href)
        if why:
            add(("link", f"broken link: {why}"))
    for ref in probe["pyrefs"]["unresolved"]:
        add(("pyref", f"unresolved Python reference: {ref}"))
    for pre in probe["pres"]:
        add(("code", f"code clipped ({pre['width']}px in a {pre['box']}px box): {pre['line']!r}"))
    for wide in probe["wideOutputs"]:
        report.notes.append(
            f"a cell output {wide['what']} scrolls sideways ({wide['width']}px in {wide['box']}px)"
        )
    for failure in events["failed"]:
        add(("load", failure))
    for error in events["errors"]:
        if any(known in error for known in KNOWN_JS_ERRORS):
            report.notes.append(f"known upstream JavaScript error: {error}")
        else:
            add(("load", f"JavaScript error: {error}"))
    for url in sorted(set(events["external"])):
        if not any(url == img["src"] for img in probe["images"]):
            report.notes.append(f"external request aborted: {url}")
    report.counts = {
        "display": probe["display"],
        "inline": probe["inline"],
        "images": len(probe["images"]),
        "figures": probe["outputImages"],
        "links": internal,
        "pyrefs": probe["pyrefs"]["resolved"],
        "pyrefs_unresolved": len(probe["pyrefs"]["unresolved"]),
    }
    return report


def check_site(
    root: Path,
    *,
    width: int = 1200,
    height: int = 800,
    chromium: str = CHROMIUM,
    expect_outputs: bool = False,
    pages: Sequence[Path] | None = None,
    math_timeout_s: float = 30.0,
) -> list[PageReport]:
    """Load every page of the HTML folder `root` in headless Chromium and judge it (see module doc)."""
    from playwright.sync_api import sync_playwright

    root = Path(root).resolve()
    pages = list(pages) if pages is not None else pages_of(root)
    if not pages:
        raise SystemExit(f"check_pages: no HTML pages under {root}: build the book first")
    if not Path(chromium).is_file():
        raise SystemExit(
            f"check_pages: no Chromium at {chromium}: `apt-get install chromium` (Debian), "
            "or pass --chromium PATH"
        )
    reports = []
    with serve(root) as base, sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": width, "height": height},
        )
        events: dict[str, list[str]] = {}

        def route(r) -> None:
            if r.request.url.startswith(base):
                r.continue_()
            else:
                events["external"].append(r.request.url)
                r.abort()

        context.route("**/*", route)
        for page_path in pages:
            url = base + page_path.relative_to(root).as_posix()
            redirect = _parse(page_path).refresh
            if (
                redirect is not None
            ):  # a redirect stub (the book's top index.html): check its target
                report = PageReport(page_path.relative_to(root).as_posix())
                why = resolve_link(root, base, urljoin(url, redirect))
                if why:
                    report.problems.append(("link", f"redirect to a missing page: {why}"))
                report.notes.append(f"redirects to {redirect}")
                report.counts = dict.fromkeys(
                    ("display", "inline", "images", "figures", "pyrefs", "pyrefs_unresolved"), 0
                )
                report.counts["links"] = 1
                reports.append(report)
                continue
            events.update(failed=[], errors=[], external=[])
            page = context.new_page()
            page.on("pageerror", lambda e: events["errors"].append(str(e)))
            page.on(
                "response",
                lambda r: (
                    events["failed"].append(f"HTTP {r.status}: {r.url[len(base) :]}")
                    if r.url.startswith(base) and r.status >= 400
                    else None
                ),
            )
            page.on(
                "requestfailed",
                lambda r: (
                    events["failed"].append(f"request failed: {r.url[len(base) :]}")
                    if r.url.startswith(base)
                    else None
                ),
            )
            page.goto(url, wait_until="load", timeout=120_000)
            probe = page.evaluate(PAGE_PROBE, {"mathTimeoutMs": int(math_timeout_s * 1000)})
            page.close()
            reports.append(_judge(root, page_path, base, probe, events, expect_outputs))
        context.close()
    return reports


def print_reports(reports: Sequence[PageReport], out=None) -> None:
    """One line per page, its problems and notes below, then a summary line."""
    out = out or sys.stdout
    for r in reports:
        c = r.counts
        print(
            f"{'PASS' if r.ok else 'FAIL'} {r.page}: {c['display']} display + {c['inline']} inline "
            f"equations, {c['images']} images ({c['figures']} figures), {c['links']} internal links"
            f", {c['pyrefs']} Python references ({c['pyrefs_unresolved']} unresolved)"
            + (f"; {len(r.problems)} problem(s)" if r.problems else ""),
            file=out,
        )
        for kind, detail in r.problems:
            print(f"    [{kind}] {detail}", file=out)
    notes: dict[str, list[str]] = {}
    for r in reports:
        for note in set(r.notes):
            notes.setdefault(note, []).append(r.page)
    for note, where in sorted(notes.items()):
        pages = where[0] if len(where) == 1 else f"{len(where)} pages"
        print(f"(note, {pages}) {note}", file=out)
    failed = sum(not r.ok for r in reports)
    kinds: dict[str, int] = {}
    for r in reports:
        for kind, _ in r.problems:
            kinds[kind] = kinds.get(kind, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "no problems"
    resolved = sum(r.counts["pyrefs"] for r in reports)
    unresolved = sum(r.counts["pyrefs_unresolved"] for r in reports)
    print(
        f"check_pages: {len(reports)} pages, {len(reports) - failed} passed, {failed} failed "
        f"({summary}); Python references: {resolved} resolved, {unresolved} unresolved",
        file=out,
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir", type=Path, help="the HTML folder, e.g. _build/html")
    ap.add_argument("--width", type=int, default=1200, help="viewport width in px (1200)")
    ap.add_argument("--height", type=int, default=800, help="viewport height in px (800)")
    ap.add_argument("--chromium", default=CHROMIUM, help=f"Chromium binary ({CHROMIUM})")
    ap.add_argument(
        "--expect-outputs",
        action="store_true",
        help="fail a notebook page that has no cell output (unexecuted notebooks)",
    )
    args = ap.parse_args(argv)
    reports = check_site(
        args.build_dir,
        width=args.width,
        height=args.height,
        chromium=args.chromium,
        expect_outputs=args.expect_outputs,
    )
    print_reports(reports)
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
