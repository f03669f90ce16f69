"""How chapters report how a run was made: one line, the record folded under it."""

from __future__ import annotations


def test_folded_provenance_is_one_line_with_the_record_under_it():
    from sbert_tutor.book.reporting import folded_provenance

    record = {
        "git": {"sha": "0123456789abcdef0123", "dirty": True},
        "profile": "quick",
        "hardware": {"device": "cpu", "cpu_count": 2, "torch_threads": 2, "cpu": "x86_64"},
        "data_files": {"a.tsv": "ff" * 32, "b.tsv": "ee" * 32},
        "timestamp": "2026-11-27T20:00:00+00:00",
        "note": "<b>not markup</b>",
    }
    folded = folded_provenance(record)
    assert folded.line == (
        "git 0123456789ab (dirty); quick profile; cpu, 2 cores, 2 torch threads; x86_64, model "
        "and instruction sets not recorded; 2 data file(s) with their sha256; "
        "2026-11-27T20:00:00+00:00"
    )
    page = folded._repr_html_()
    assert page.startswith("<details><summary>How this was made: git 0123456789ab")
    assert "&lt;b&gt;not markup&lt;/b&gt;" in page and "<b>" not in page  # escaped
    assert "ffffffff" in page and "ffffffff" in repr(folded)  # the whole record, folded
    # a record of named runs: the line is the first run's, and it says how many
    both = folded_provenance({"training": record, "evaluation": {**record, "profile": "t4"}})
    assert both.line.startswith("git 0123456789ab (dirty); quick profile")
    assert both.line.endswith("2 records: training, evaluation")
