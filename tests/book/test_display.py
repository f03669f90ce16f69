"""The chapters' tables show whole sentences and provenance once a chapter asks for it, and
importing the book layer changes no global setting."""

import json
import subprocess
import sys
from html import escape

import pandas as pd

from sbert_tutor.book.display import TEXT_COLUMN_WIDTH, show_whole_text
from tests.conftest import needs_data

SETTINGS = (
    "import json, pandas as pd, matplotlib as mpl;"
    "print(json.dumps({'pandas': {k: str(pd.get_option(k)) for k in "
    "['display.max_colwidth', 'display.max_rows', 'display.max_columns', 'display.precision',"
    " 'display.width', 'display.float_format']},"
    " 'mpl': {k: str(v) for k, v in mpl.rcParams.items()}}))"
)


def _settings(imports: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", imports + SETTINGS], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_every_book_module_changes_no_global_setting():
    import pkgutil

    import sbert_tutor.book as book
    import sbert_tutor.book.chapters as chapters

    names = [f"sbert_tutor.book.{m.name}" for m in pkgutil.iter_modules(book.__path__)]
    names += [
        f"sbert_tutor.book.chapters.{m.name}" for m in pkgutil.iter_modules(chapters.__path__)
    ]
    imports = "".join(f"import {name};" for name in names)
    assert _settings(imports) == _settings("")


@needs_data
def test_a_chapter_table_shows_whole_sentences_and_cuts_only_passages():
    from sbert_tutor.data import load_msmarco, load_sts

    stsb = load_sts("stsb", "test").to_frame().head(50)
    sentence = max(stsb["sentence1"], key=len)  # the longest of these STSb sentences
    passage = max(load_msmarco("msmarco-dev-subset").corpus.values(), key=len)
    assert 50 < len(sentence) < TEXT_COLUMN_WIDTH < len(passage)
    table = pd.DataFrame({"text": [sentence, passage]})
    with pd.option_context("display.max_colwidth", 50):  # pandas' default: both are cut
        assert sentence not in table._repr_html_()
        show_whole_text()
        html = table._repr_html_()  # what a notebook shows
    assert escape(sentence, quote=False) in html and escape(passage, quote=False) not in html
    assert escape(passage[: TEXT_COLUMN_WIDTH - 10], quote=False) in html and "...</td>" in html
