"""The chapters' tables show whole sentences and provenance (pandas cuts text cells at 50 chars)."""

import pandas as pd

import sbert_tutor.book as book


def test_tables_show_whole_sentences_and_cut_only_passages():
    sentence = (
        "Two women are embracing while holding to go packages, outside a coffee shop at noon."
    )
    provenance = (
        "nli/snli_dev.tsv: 6d30a61d2197; nli/snli_test.tsv: 0c1d2e3f4a5b; stsb/sts-test.tsv"
    )
    passage = "word " * 100  # 500 characters, as long as an MS MARCO passage
    table = pd.DataFrame({"text": [sentence, provenance, passage]})
    html = table._repr_html_()  # what a notebook shows
    assert len(sentence) > 50 and sentence in html and provenance in html
    assert passage not in html and passage[: book.TEXT_COLUMN_WIDTH - 10] in html
    assert "...</td>" in html  # the cut is marked
