"""STS loaders: counts from the data MANIFEST, quoting, errors, and the hub path (faked)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from sbert_tutor.data import DataNotFoundError, load_sts, sample_sts
from tests.conftest import fake_hub, needs_data

# Pair counts stated in shared/data/MANIFEST.md (SentEval sizes; STS13 without SMT).
COUNTS = {
    ("sts12", "test"): 3108,
    ("sts13", "test"): 1500,
    ("sts14", "test"): 3750,
    ("sts15", "test"): 3000,
    ("sts16", "test"): 1186,
    ("stsb", "train"): 5749,
    ("stsb", "dev"): 1500,
    ("stsb", "test"): 1379,
    ("sickr", "train"): 4500,
    ("sickr", "dev"): 500,
    ("sickr", "test"): 4927,
}
STS12_SUBSETS = {
    "MSRpar": 750,
    "MSRvid": 750,
    "SMTeuroparl": 459,
    "surprise.OnWN": 750,
    "surprise.SMTnews": 399,
}


@needs_data
@pytest.mark.parametrize("name, split", sorted(COUNTS))
def test_counts_match_manifest(name, split):
    data = load_sts(name, split)
    assert len(data) == COUNTS[name, split]
    low, high = data.score_range
    assert data.scores.min() >= low and data.scores.max() <= high
    assert all(isinstance(s, str) and s for s in data.sentences1 + data.sentences2)
    assert data.source == "SBERT_TUTOR_DATA folder" and data.files


@needs_data
def test_subsets_and_variants():
    raw = load_sts("sts12")
    tok = load_sts("sts12", variant="senteval_tok")
    assert {k: raw.subsets.count(k) for k in raw.subset_names} == STS12_SUBSETS
    np.testing.assert_array_equal(raw.scores, tok.scores)
    assert raw.sentences1 != tok.sentences1  # tokenised, lower-cased text


@needs_data
def test_quotes_are_text_and_sick_keeps_its_scale():
    stsb = load_sts("stsb", "train")
    assert any('"' in s for s in stsb.sentences1 + stsb.sentences2)
    sick = load_sts("SICK-R", "test")
    assert sick.name == "sickr" and sick.scores.min() >= 1.0 and sick.labels is not None
    assert set(sick.labels) == {"NEUTRAL", "ENTAILMENT", "CONTRADICTION"}


def test_unknown_task_lists_valid_names():
    with pytest.raises(ValueError, match="sts12, sts13, sts14, sts15, sts16, stsb, sickr"):
        load_sts("sts17")


def test_test_only_years():
    with pytest.raises(ValueError, match="test-only"):
        load_sts("sts12", "train")


def test_missing_file_names_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError, match="SBERT_TUTOR_DATA"):
        load_sts("stsb")


def test_offline_without_data_names_the_setting(monkeypatch):
    monkeypatch.delenv("SBERT_TUTOR_DATA", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match="SBERT_TUTOR_DATA=/path/to/data"):
        load_sts("stsb")


def _write_stsb(folder, rows, monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")  # a hand-made subset of STSb test
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(folder))
    (folder / "stsb").mkdir(parents=True)
    lines = ["genre\tfilename\tyear\tsid\tscore\tsentence1\tsentence2"]
    lines += [
        f"main-news\tx\t2012\t{i:04d}\t{score}\t{a}\t{b}" for i, (score, a, b) in enumerate(rows)
    ]
    (folder / "stsb" / "sts-test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_tiny_fixture_folder_keeps_quotes(tmp_path, monkeypatch):
    _write_stsb(
        tmp_path,
        [(4.5, 'He said "hi".', "He said hello."), (0.5, "'quoted", 'odd "quote')],
        monkeypatch,
    )
    data = load_sts("stsb")
    assert data.sentences1 == ['He said "hi".', "'quoted"] and data.sentences2[1] == 'odd "quote'
    np.testing.assert_array_equal(data.scores, [4.5, 0.5])


def test_nan_score_is_an_error(tmp_path, monkeypatch):
    _write_stsb(tmp_path, [(4.5, "a", "b"), ("nan", "c", "d")], monkeypatch)
    with pytest.raises(
        ValueError, match=r"stsb/sts-test.tsv:3: score is 'nan'; score must be a finite"
    ):
        load_sts("stsb")


def test_hub_path_stsb_rescales_to_0_5(monkeypatch):
    calls = []
    table = {"sentence1": ["a b", "c d"], "sentence2": ["a c", "e f"], "score": [0.9, 0.1]}
    fake_hub(monkeypatch, table, calls)
    data = load_sts("stsb", "dev")
    assert calls == [("sentence-transformers/stsb", "validation")]
    np.testing.assert_allclose(data.scores, [4.5, 0.5])
    assert data.source == "hub:sentence-transformers/stsb[validation]" and data.files == ()


def test_hub_path_sts_year_has_no_subsets(monkeypatch):
    calls = []
    fake_hub(monkeypatch, {"sentence1": ["x"], "sentence2": ["y"], "score": [3.2]}, calls)
    data = load_sts("sts14")
    assert calls == [("mteb/sts14-sts", "test")] and data.subsets == ["all"]


def test_hub_failure_names_the_setting(monkeypatch):
    def broken(dataset_id, split):
        raise ConnectionError("no route to host")

    fake_hub(monkeypatch, {}, [])
    sys.modules["datasets"].load_dataset = broken
    with pytest.raises(
        DataNotFoundError,
        match="SBERT_TUTOR_DATA.*no route to host|no route to host.*SBERT_TUTOR_DATA",
    ):
        load_sts("stsb")


@needs_data
def test_sample_sts_is_seeded_keeps_data_order_and_every_field_of_a_pair():
    full = load_sts("sickr", "test")  # SICK carries labels: the sample must keep them aligned
    assert sample_sts(full, None) is full and sample_sts(full, len(full) + 1) is full
    sample = sample_sts(full, 50, seed=0)
    assert len(sample) == 50 and sample.files == full.files and sample.source == full.source
    assert sample.meta["sample"] == f"50 of {len(full)} pairs, seed 0"

    # each sampled pair is a whole pair of the full data (both sentences, score, subset, label),
    # in data order: the sample's rows are a subsequence of the full data's rows
    def rows(d):
        return list(zip(d.sentences1, d.sentences2, d.scores, d.subsets, d.labels, strict=True))

    remaining = iter(rows(full))
    assert all(row in remaining for row in rows(sample))
    assert sample_sts(full, 50, seed=0).sentences1 == sample.sentences1
    assert sample_sts(full, 50, seed=1).sentences1 != sample.sentences1
    with pytest.raises(ValueError, match="at least 2"):
        sample_sts(full, 1)
