"""SentEval transfer-task loaders: sizes and class balance of the real files, SentEval's parsing,
errors that name file and line, stratified subsamples, and the hub path (faked)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from sbert_tutor.data import DataNotFoundError
from sbert_tutor.data.senteval import (
    HUB_DATASETS,
    TRANSFER_TASKS,
    check_transfer_task,
    load_transfer,
    parse_transfer_tasks,
    subsample,
)
from tests.conftest import fake_hub, needs_data

# Sizes and class counts stated in shared/data/MANIFEST.md (SentEval's sizes); labels in
# SentEval's numbering (MR/CR/MPQA/SST2: 1 = positive; SUBJ: 1 = objective; MRPC: 1 = paraphrase;
# TREC: ABBR, DESC, ENTY, HUM, LOC, NUM).
CLASS_COUNTS = {
    ("mr", "all"): {0: 5331, 1: 5331},
    ("cr", "all"): {0: 1368, 1: 2407},
    ("subj", "all"): {0: 5000, 1: 5000},
    ("mpqa", "all"): {0: 7294, 1: 3312},
    ("sst2", "train"): {0: 29780, 1: 37569},
    ("sst2", "dev"): {0: 428, 1: 444},
    ("sst2", "test"): {0: 912, 1: 909},
    ("trec", "train"): {0: 86, 1: 1162, 2: 1250, 3: 1223, 4: 835, 5: 896},
    ("trec", "test"): {0: 9, 1: 138, 2: 94, 3: 65, 4: 81, 5: 113},
    ("mrpc", "train"): {0: 1323, 1: 2753},
    ("mrpc", "test"): {0: 578, 1: 1147},
}
SIZES = {
    "mr": {"all": 10662},
    "cr": {"all": 3775},
    "subj": {"all": 10000},
    "mpqa": {"all": 10606},
    "sst2": {"train": 67349, "dev": 872, "test": 1821},
    "trec": {"train": 5452, "test": 500},
    "mrpc": {"train": 4076, "test": 1725},
}


@needs_data
@pytest.mark.parametrize("name", TRANSFER_TASKS)
def test_sizes_and_class_balance_match_the_manifest(name):
    task = load_transfer(name)
    assert task.sizes() == SIZES[name]
    for split, data in task.splits.items():
        assert data.class_counts() == CLASS_COUNTS[name, split]
    assert task.source == "SBERT_TUTOR_DATA folder" and task.files and task.note == ""
    assert task.is_pair_task == (name == "mrpc")


@needs_data
def test_lines_are_read_as_senteval_reads_them():
    mr = load_transfer("mr").splits["all"]
    # byte 0x85 stays inside its line (str.splitlines would cut it) and, as whitespace, splits words
    assert "preciously interwoven [the film] addresses" in " ".join(mr.sentences)
    assert not any("\x85" in s for s in mr.sentences)
    assert all(s == " ".join(s.split()) for s in mr.sentences)
    # empty lines are items with their label (SentEval keeps them): CR 4, MPQA 3
    cr = load_transfer("cr").splits["all"]
    assert [int(y) for s, y in zip(cr.sentences, cr.labels, strict=True) if not s] == [1, 1, 0, 0]
    assert sum(not s for s in load_transfer("mpqa").splits["all"].sentences) == 3
    # TREC: the coarse class is the label, the fine label is dropped, latin-1 text kept
    trec = load_transfer("trec").splits["train"]
    assert trec.sentences[0] == "How did serfdom develop in and then leave Russia ?"
    assert trec.labels[0] == 1  # DESC
    assert any("sisterðcity" in s for s in trec.sentences)
    # MRPC: header and BOM skipped, (quality, #1, #2) read from their columns
    mrpc = load_transfer("mrpc").splits["train"]
    assert mrpc.sentences[0].startswith("Amrozi accused his brother")
    assert mrpc.sentences2[0].startswith("Referring to him as only")
    assert mrpc.labels[0] == 1


def _senteval_folder(root, files):
    for relative, content in files.items():
        path = root / "senteval" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


@pytest.mark.parametrize(
    "task, files, message",
    [
        (
            "sst2",
            {
                "SST/binary/sentiment-train": "good film\t1\nbad film 0\n",
                "SST/binary/sentiment-dev": "x\t1\n",
                "SST/binary/sentiment-test": "y\t0\n",
            },
            r"sentiment-train:2: expected 'sentence<TAB>label'",
        ),
        (
            "sst2",
            {
                "SST/binary/sentiment-train": "good film\t1\n",
                "SST/binary/sentiment-dev": b"caf\xe9\t1\n",
                "SST/binary/sentiment-test": "y\t0\n",
            },
            r"sentiment-dev:1: not utf-8 text",
        ),
        (
            "trec",
            {
                "TREC/train_5500.label": "DESC:manner How ?\nFOO:bar What ?\n",
                "TREC/TREC_10.label": "NUM:date When ?\n",
            },
            r"train_5500.label:2: expected 'COARSE:fine question'",
        ),
        (
            "mrpc",
            {
                "MRPC/msr_paraphrase_train.txt": "Quality\tA\tB\n1\t1\t2\ta\tb\n",
                "MRPC/msr_paraphrase_test.txt": "",
            },
            r"msr_paraphrase_train.txt:1: expected the MRPC header",
        ),
        (
            "mrpc",
            {
                "MRPC/msr_paraphrase_train.txt": "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                "1\t1\t2\ta\tb\n2\t3\t4\tc\td\n",
                "MRPC/msr_paraphrase_test.txt": "x",
            },
            r"msr_paraphrase_train.txt:3: expected 5 tab-separated fields \(quality 0 or 1",
        ),
        ("cr", {"CR/custrev.pos": "fine\n", "CR/custrev.neg": "\n"}, r"custrev.neg is empty"),
    ],
)
def test_broken_files_are_refused_with_file_and_line(tmp_path, monkeypatch, task, files, message):
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(_senteval_folder(tmp_path, files)))
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")  # a few lines, not the published counts
    with pytest.raises(ValueError, match=message):
        load_transfer(task)


def test_missing_file_names_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(_senteval_folder(tmp_path, {"MR/x": "y"})))
    with pytest.raises(DataNotFoundError, match=r"rt-polarity.pos.*SBERT_TUTOR_DATA"):
        load_transfer("MR")


def test_small_folder_is_parsed_like_senteval(tmp_path, monkeypatch):
    files = {
        "MR/rt-polarity.pos": b"a  fine\tfilm \x85 really\n\nlast\n",
        "MR/rt-polarity.neg": b"dull\r\n",
        "MRPC/msr_paraphrase_train.txt": "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "0\t1\t2\tOne  sentence .\tAnother one .\n",
        "MRPC/msr_paraphrase_test.txt": "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t3\t4\tx\ty\n",
    }
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(_senteval_folder(tmp_path, files)))
    monkeypatch.setenv("SBERT_TUTOR_CHECK_SIZES", "0")  # a few lines, not the published counts
    mr = load_transfer("mr").splits["all"]
    assert mr.sentences == ["a fine film really", "", "last", "dull"]
    assert mr.labels.tolist() == [1, 1, 1, 0]
    mrpc = load_transfer("mrpc")
    assert mrpc.splits["train"].sentences == ["One sentence ."]
    assert mrpc.splits["train"].sentences2 == ["Another one ."]
    assert mrpc.splits["test"].labels.tolist() == [1]
    assert set(mrpc.to_frame().columns) == {"split", "sentence", "sentence2", "label", "class"}


def test_task_names():
    assert check_transfer_task("SST-2") == "sst2" and check_transfer_task("Trec") == "trec"
    assert parse_transfer_tasks("all") == list(TRANSFER_TASKS)
    assert parse_transfer_tasks("mr, MR,trec") == ["mr", "trec"]
    with pytest.raises(ValueError, match="Did you mean 'subj'"):
        check_transfer_task("subk")
    with pytest.raises(ValueError, match="no task given"):
        parse_transfer_tasks(" , ")


@needs_data
def test_subsample_keeps_class_shares_and_is_seeded():
    trec = load_transfer("trec")
    small = subsample(trec, 300, seed=3)
    assert small.sizes() == {"train": 300, "test": 300}
    counts = small.splits["train"].class_counts()
    full = trec.splits["train"].class_counts()
    for label, n in full.items():  # largest-remainder rounding: within one item of the share
        assert abs(counts[label] - n * 300 / 5452) < 1
    again = subsample(trec, 300, seed=3).splits["train"].sentences
    assert again == small.splits["train"].sentences
    assert subsample(trec, 300, seed=4).splits["train"].sentences != again
    assert set(again) <= set(trec.splits["train"].sentences)
    assert "at most 300" in small.meta["subsample"]


# ------------------------------------------------------------------------------------------ hub
def test_hub_path_joins_parts_and_maps_columns(monkeypatch):
    calls = []
    tables = {
        "SetFit/mrpc": {"text1": ["a  b", "c"], "text2": ["d", "e f"], "label": [1, 0]},
        "CogComp/trec": {"text": ["What is x ?", "Who ?", "Why ?"], "coarse_label": [1, 2, 5]},
        "stanfordnlp/sst2": {"sentence": ["good ", "bad"], "label": [1, 0]},
        "SetFit/sst2": {"text": ["fine"], "label": [1]},
    }
    fake_hub(monkeypatch, tables, calls)
    mrpc = load_transfer("mrpc")
    assert calls == [
        ("SetFit/mrpc", "train"),
        ("SetFit/mrpc", "validation"),
        ("SetFit/mrpc", "test"),
    ]
    assert mrpc.sizes() == {"train": 4, "test": 2}
    assert mrpc.splits["train"].sentences == ["a b", "c", "a b", "c"]
    assert mrpc.splits["train"].sentences2 == ["d", "e f", "d", "e f"]
    assert mrpc.source.startswith("hub:SetFit/mrpc[train]") and mrpc.files == ()
    assert "4,076" in mrpc.note
    trec = load_transfer("trec")  # CogComp numbers ENTY 1, DESC 2; SentEval DESC 1, ENTY 2
    assert trec.splits["test"].labels.tolist() == [2, 1, 5]
    sst = load_transfer("sst2")
    assert sst.splits["train"].sentences == ["good", "bad"]
    assert sst.splits["test"].sentences == ["fine"]
    assert ("SetFit/sst2", "test") in calls and ("stanfordnlp/sst2", "validation") in calls


def test_hub_path_checks_columns_and_labels(monkeypatch):
    fake_hub(monkeypatch, {"text": ["x"], "label": [7]}, [])
    with pytest.raises(ValueError, match=r"label 7 is not one of the 2 classes of cr"):
        load_transfer("cr")
    with pytest.raises(ValueError, match=r"jxm/mpqa\[train\] has no column\(s\) sentence"):
        load_transfer("mpqa")


def test_every_hub_source_names_its_differences():
    from sbert_tutor.data.senteval import HUB_NOTES

    assert set(HUB_DATASETS) == set(TRANSFER_TASKS) == set(HUB_NOTES)


def test_offline_without_data_says_both_ways_out(monkeypatch):
    fake_hub(monkeypatch, {}, [])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match="SBERT_TUTOR_DATA"):
        load_transfer("mr")


def test_hub_failure_is_reported(monkeypatch):
    def broken(dataset_id, split):
        raise ConnectionError("no route to host")

    fake_hub(monkeypatch, {}, [])
    sys.modules["datasets"].load_dataset = broken
    with pytest.raises(DataNotFoundError, match="no route to host"):
        load_transfer("subj")


def test_split_lengths_are_checked():
    from sbert_tutor.data.senteval import TransferSplit

    with pytest.raises(ValueError, match="same length"):
        TransferSplit(["a", "b"], np.array([0]))
