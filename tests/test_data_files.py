"""Broken data files are refused with the file, the line and what to do (never loaded in part)."""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import pytest

from sbert_tutor.data import (
    load_bm25_candidates,
    load_msmarco,
    load_nli,
    load_sts,
)
from sbert_tutor.data.files import (
    KNOWN_ROWS,
    DataFileError,
    local_root,
    read_data_file,
    read_table,
)
from sbert_tutor.data.nli import load_nli_train
from sbert_tutor.data.senteval import load_transfer
from tests.conftest import needs_data, shared_data

HEADER = "genre\tfilename\tyear\tsid\tscore\tsentence1\tsentence2\n"
GOOD = "main-news\tx\t2012\t0001\t4.5\tA man plays.\tA man is playing.\n"


def _stsb(tmp_path, monkeypatch, text: str | bytes, sizes: bool = False) -> Path:
    """Write ``stsb/sts-test.tsv`` with ``text`` and point the data setting at it."""
    path = tmp_path / "stsb" / "sts-test.tsv"
    path.parent.mkdir(parents=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(tmp_path))
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "1" if sizes else "0")
    return path


CASES = {
    "cut inside the last column": (
        HEADER + GOOD + GOOD[:40],
        r"sts-test.tsv:3: the last line does not end with a newline, so the file was probably "
        r"cut off mid-line: copy or download it again",
    ),
    "too few fields": (
        HEADER + GOOD + "main-news\tx\t2012\t0002\t3.0\tonly one sentence\n",
        r"sts-test.tsv:3: 6 fields, but the header \(line 1\) has 7 columns: a tab inside a text, "
        r"a missing field or a line broken in two",
    ),
    "too many fields": (
        HEADER + GOOD + GOOD[:-1] + "\tsource\tlicence\n",
        r"sts-test.tsv:3: 9 fields, but the header \(line 1\) has 7 columns",
    ),
    "an empty line": (
        HEADER + GOOD + "\n" + GOOD,
        r"sts-test.tsv:3: an empty line, but the header",
    ),
    "empty file": ("", r"sts-test.tsv:1: the file is empty \(0 bytes\)"),
    "header only": (HEADER, r"sts-test.tsv:2: a header \(line 1\) but no data rows"),
    "invalid UTF-8": (
        (HEADER + GOOD).encode() + "main-news\tx\t2012\t0002\t3.0\tcaf\xe9\tb\n".encode("latin-1"),
        r"sts-test.tsv:3: byte b'\\xe9' at column 30 is not UTF-8.*iconv",
    ),
    "score not a number": (
        HEADER + GOOD + GOOD.replace("4.5", "high"),
        r"sts-test.tsv:3: score is 'high', which is not a number. Fix or remove that line",
    ),
    "score off the scale": (
        HEADER + GOOD.replace("4.5", "45"),
        r"sts-test.tsv:2: score is '45', outside the data set's scale \[0, 5\]",
    ),
    "wrong header": (
        HEADER.replace("sentence1", "text_a") + GOOD,
        r"sts-test.tsv:1: the header has columns .* needs \['score', 'sentence1', 'sentence2'\] "
        r"\(missing \['sentence1'\]\)",
    ),
    "an empty sentence": (
        HEADER + GOOD + GOOD.replace("A man plays.", " "),
        r"sts-test.tsv:3: sentence1 is empty",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_broken_file_is_refused_with_file_and_line(tmp_path, monkeypatch, case):
    text, message = CASES[case]
    _stsb(tmp_path, monkeypatch, text)
    with pytest.raises(DataFileError, match=message):
        load_sts("stsb", "test")


def test_a_count_off_the_published_size_is_refused(tmp_path, monkeypatch):
    _stsb(tmp_path, monkeypatch, HEADER + GOOD * 3, sizes=True)
    with pytest.raises(
        DataFileError,
        match=r"sts-test.tsv: 3 data rows \(lines 2-4\), but STSb test has 1,379: the file is "
        r"incomplete .* set SBERT_TUTOR_CHECK_SIZES=0",
    ):
        load_sts("stsb", "test")


def test_crlf_and_bom_are_read_as_text(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_bytes("\ufeffa\tb\r\n1\tx\r\n".encode())
    table = read_table(path, ("a", "b"))
    assert table.header == ("a", "b") and table.rows == [["1", "x"]]


def test_nli_label_names_file_and_line(tmp_path, monkeypatch):
    path = tmp_path / "nli" / "snli_dev.tsv"
    path.parent.mkdir(parents=True)
    path.write_text("premise\thypothesis\tlabel\np\th\tentailment\np\th\tmaybe\n")
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(tmp_path))
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")
    with pytest.raises(ValueError, match=r"snli_dev.tsv:3: label = 'maybe' is not an NLI label"):
        load_nli("snli", "dev")


def test_qrels_grade_names_file_and_line(tmp_path, monkeypatch):
    folder = tmp_path / "msmarco" / "dev_small_subset"
    folder.mkdir(parents=True)
    (folder / "queries.tsv").write_text("qid\tquery\n1\tq\n")
    (folder / "qrels.tsv").write_text("qid\tpid\trelevance\n1\t10\t1\n1\t11\tyes\n")
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(tmp_path))
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")
    with pytest.raises(DataFileError, match=r"qrels.tsv:3: relevance is 'yes', which is not a"):
        load_msmarco("msmarco-dev-subset")


# ------------------------------------------------------------------ truncated copies of real files


def _mirror(real: Path, tmp: Path, relative: str) -> Path:
    """``tmp`` laid out like the data folder: links to every real file but ``relative``'s path."""
    parts = Path(relative).parts
    here_real, here_tmp = real, tmp
    for depth, part in enumerate(parts):
        here_tmp.mkdir(parents=True, exist_ok=True)
        for entry in here_real.iterdir():
            if entry.name != part:
                os.symlink(entry, here_tmp / entry.name)
        here_real, here_tmp = here_real / part, here_tmp / part
        if depth == len(parts) - 1:
            return here_tmp
    raise AssertionError(relative)


def _cut(data: bytes, how: str, gz: bool) -> bytes:
    if how == "mid-line":  # for .gz: the compressed stream itself is cut
        return data[: len(data) * 3 // 5]
    text = gzip.decompress(data) if gz else data
    text = text[: text.rstrip(b"\n").rfind(b"\n") + 1]  # the last line dropped, cleanly
    return gzip.compress(text) if gz else text


LOADERS = {
    "stsb/sts-test.tsv": lambda: load_sts("stsb", "test"),
    "sick/SICK_test.tsv": lambda: load_sts("sickr", "test"),
    "sts/raw/STS12/MSRpar.tsv": lambda: load_sts("sts12"),
    "sts/senteval_tok/STS16/headlines.tsv": lambda: load_sts("sts16", variant="senteval_tok"),
    "nli/snli_dev.tsv": lambda: load_nli("snli", "dev"),
    "sick/SICK_train.tsv": lambda: load_nli("sick", "train"),
    "nli/snli_test.tsv": load_nli_train,
    "msmarco/dev_small_subset/queries.tsv": lambda: load_msmarco("msmarco-dev-subset"),
    "msmarco/dev_small_subset/qrels.tsv": lambda: load_msmarco("msmarco-dev-subset"),
    "msmarco/corpus_mini.tsv": lambda: load_msmarco("trec-dl19"),
    "msmarco/trec_dl2019/qrels.tsv": lambda: load_msmarco("trec-dl19"),
    "msmarco/dev_small_subset/bm25_candidates.tsv": load_bm25_candidates,
    "msmarco/train_triples_toy.tsv.gz": lambda: _gz_triples(),
    "senteval/MR/rt-polarity.neg": lambda: load_transfer("mr"),
    "senteval/CR/custrev.pos": lambda: load_transfer("cr"),
    "senteval/SUBJ/subj.subjective": lambda: load_transfer("subj"),
    "senteval/MPQA/mpqa.neg": lambda: load_transfer("mpqa"),
    "senteval/SST/binary/sentiment-dev": lambda: load_transfer("sst2"),
    "senteval/TREC/TREC_10.label": lambda: load_transfer("trec"),
    "senteval/MRPC/msr_paraphrase_test.txt": lambda: load_transfer("mrpc"),
}
#: Published without a final newline: a cut copy is told by its count instead.
NO_FINAL_NEWLINE = {"senteval/MRPC/msr_paraphrase_test.txt"}


def _gz_triples():
    """The gzipped reader on the toy triples (no loader reads them; the reader is kept for gz)."""
    return read_data_file(local_root(), "msmarco/train_triples_toy.tsv.gz")


@needs_data
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("how", ["mid-line", "at a line end"])
@pytest.mark.parametrize("relative", list(LOADERS))
def test_every_loader_refuses_a_truncated_real_file(tmp_path, monkeypatch, relative, how):
    assert relative in KNOWN_ROWS
    real = shared_data()
    target = _mirror(real, tmp_path, relative)
    gz = relative.endswith(".gz")
    target.write_bytes(_cut((real / relative).read_bytes(), how, gz))
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(tmp_path))
    monkeypatch.delenv("SBERT_TUTOR_CHECK_SIZES", raising=False)
    if gz and how == "mid-line":
        expected = " is not a complete gzip file"
    elif how == "mid-line" and relative not in NO_FINAL_NEWLINE:
        expected = r":\d+: the last line does not end with a newline"
    else:  # the last line dropped cleanly, or (no final newline) cut at 3/5 of the file
        expected = rf": ([\d,]+) data rows .* has {KNOWN_ROWS[relative]:,}"
    with pytest.raises(DataFileError, match=rf"{Path(relative).name}{expected}") as caught:
        LOADERS[relative]()
    if "data rows" in expected:  # fewer rows than published (CR ends with an empty item line)
        found = re.search(expected, str(caught.value))
        assert found and int(found.group(1).replace(",", "")) < KNOWN_ROWS[relative]


@needs_data
def test_a_missing_sts_subset_is_refused(tmp_path, monkeypatch):
    real = shared_data()
    _mirror(real, tmp_path, "sts/raw/STS13/FNWN.tsv")  # every file of STS13 but FNWN
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(tmp_path))
    with pytest.raises(DataFileError, match=r"STS13 lacks FNWN.tsv: STS13 has 3 subsets"):
        load_sts("sts13")
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")  # a subset on purpose
    assert len(load_sts("sts13")) == 750 + 561


def test_truncated_gzip_written_here(tmp_path, monkeypatch):
    path = tmp_path / "msmarco" / "train_triples_toy.tsv.gz"
    path.parent.mkdir(parents=True)
    data = gzip.compress(b"query\tpositive\tnegative\n" + b"q\tp\tn\n" * 200)
    path.write_bytes(data[:-10])
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(tmp_path))
    with pytest.raises(DataFileError, match=r"train_triples_toy.tsv.gz is not a complete gzip"):
        _gz_triples()
