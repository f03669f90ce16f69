"""NLI loaders: counts from the data MANIFEST, the training shapes on a hand-made example, user
data, errors, and the hub path (with a faked ``datasets``)."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from sbert_tutor.data import (
    NLI_LABELS,
    DataNotFoundError,
    NLIData,
    as_nli,
    entailment_pairs,
    labelled_pairs,
    load_nli,
    load_nli_train,
    nli_triplets,
    supmpn_groups,
)
from sbert_tutor.data.nli import SubstituteDataWarning, check_nli_task
from tests.conftest import fake_hub, needs_data

# ------------------------------------------------------------------ local data (MANIFEST counts)


@needs_data
@pytest.mark.parametrize(
    "name, split, count", [("snli", "dev", 9842), ("snli", "test", 9824), ("sick", "train", 4500)]
)
def test_counts_match_manifest(name, split, count):
    data = load_nli(name, split)
    assert len(data) == count
    assert set(data.labels) == set(NLI_LABELS)
    assert data.files and data.source == "SBERT_TUTOR_DATA folder"
    assert all(isinstance(s, str) and s.strip() for s in data.premises + data.hypotheses)


@needs_data
def test_label_counts_and_ids():
    snli = load_nli("snli", "dev")
    assert snli.label_counts() == {"entailment": 3329, "neutral": 3235, "contradiction": 3278}
    sick = load_nli("SICK-E", "train")  # upper-case labels in the file, lower-case here
    assert sick.label_counts() == {"entailment": 1299, "neutral": 2536, "contradiction": 665}
    assert sick.premises[0].startswith("A group of kids is playing in a yard")
    np.testing.assert_array_equal(np.bincount(snli.label_ids), [3329, 3235, 3278])


@needs_data
def test_no_local_train_split_points_at_the_stand_in():
    with pytest.raises(DataNotFoundError, match="load_nli_train"):
        load_nli("snli", "train")
    with pytest.warns(SubstituteDataWarning, match="SNLI dev\\+test"):
        data = load_nli_train()
    assert len(data) == 9842 + 9824 and len(data.files) == 2


@needs_data
def test_training_shapes_on_real_snli():
    data = load_nli("snli", "dev")
    pairs = entailment_pairs(data)
    assert len(pairs) == 3329 and pairs.columns == ["anchor", "positive"]
    triplets = nli_triplets(data)
    groups = supmpn_groups(data, num_positives=2, num_negatives=3)
    assert len(triplets) > 3000 and groups.table.shape[1] == 1 + 2 + 3
    assert groups.files == tuple(str(f) for f in data.files)
    assert groups.source == data.source and "P = 2, Q = 3" in groups.note


# ------------------------------------------------------------------ the shapes, by hand

HAND = [
    ("A man plays guitar.", "A man makes music.", "entailment"),
    ("A man plays guitar.", "A person plays an instrument.", "entailment"),
    ("A man plays guitar.", "The man is asleep.", "contradiction"),
    ("A man plays guitar.", "He is a famous star.", "neutral"),
    ("Kids run outside.", "Children are outdoors.", "entailment"),
    ("Kids run outside.", "He is a famous star.", "neutral"),
    ("Two dogs swim.", "Cats sleep.", "contradiction"),
    ("Kids run outside.", "Kids sit in class.", "contradiction"),
    ("Kids run outside.", "Nobody is outside.", "contradiction"),
]


def test_labelled_and_entailment_pairs():
    frame = labelled_pairs(HAND).table
    assert frame["label"].tolist() == [0, 0, 2, 1, 0, 1, 2, 2, 2]
    pairs = entailment_pairs(HAND).table
    assert pairs.values.tolist() == [
        ["A man plays guitar.", "A man makes music."],
        ["A man plays guitar.", "A person plays an instrument."],
        ["Kids run outside.", "Children are outdoors."],
    ]


def test_triplets_pair_each_entailment_with_a_contradiction_in_turn():
    assert nli_triplets(HAND).table.values.tolist() == [
        ["A man plays guitar.", "A man makes music.", "The man is asleep."],
        ["A man plays guitar.", "A person plays an instrument.", "The man is asleep."],
        ["Kids run outside.", "Children are outdoors.", "Kids sit in class."],
    ]  # "Two dogs swim." has no entailment: skipped


def test_supmpn_groups_follow_the_documented_rule():
    groups = supmpn_groups(HAND, num_positives=3, num_negatives=2, seed=0).table
    assert list(groups.columns) == [
        "anchor",
        "positive_1",
        "positive_2",
        "positive_3",
        "negative_1",
        "negative_2",
    ]
    guitar, kids = groups.values.tolist()  # "Two dogs swim." has no entailment: no group
    # two entailments, then the premise itself (dropout-noise positive)
    assert guitar[:4] == [
        "A man plays guitar.",
        "A man makes music.",
        "A person plays an instrument.",
        "A man plays guitar.",
    ]
    # one contradiction, then a hypothesis of another premise (never its own, never neutral own)
    assert guitar[4] == "The man is asleep."
    own = {h for p, h, _ in HAND if p == "A man plays guitar."}
    assert guitar[5] not in own and guitar[5] in {h for p, h, _ in HAND if p != guitar[0]}
    # one entailment: it, the premise, then the entailment again
    assert kids[1:4] == ["Children are outdoors.", "Kids run outside.", "Children are outdoors."]
    assert kids[4:] == ["Kids sit in class.", "Nobody is outside."]  # enough contradictions
    again = supmpn_groups(HAND, num_positives=3, num_negatives=2, seed=0).table
    pd.testing.assert_frame_equal(groups, again)


def test_supmpn_group_arguments_are_checked():
    with pytest.raises(ValueError, match="num_positives"):
        supmpn_groups(HAND, num_positives=0)
    with pytest.raises(ValueError, match="only one premise"):
        supmpn_groups(HAND[:3], num_positives=1, num_negatives=3)


# ------------------------------------------------------------------ user data


def test_user_data_in_every_container():
    expected = as_nli(HAND)
    frame = pd.DataFrame(HAND, columns=["premise", "hypothesis", "label"])
    ids = frame.assign(label=[NLI_LABELS.index(y) for y in frame["label"]])
    datasets = pytest.importorskip("datasets")
    inputs = [frame, ids, ids.to_dict(orient="list"), datasets.Dataset.from_pandas(ids)]
    for data in inputs:
        got = as_nli(data)
        assert (got.premises, got.hypotheses, got.labels) == (
            expected.premises,
            expected.hypotheses,
            expected.labels,
        )
    renamed = frame.rename(columns={"premise": "s1", "hypothesis": "s2", "label": "y"})
    assert as_nli(renamed, "s1", "s2", "y").labels == expected.labels


def test_bad_user_data_says_what_to_fix():
    with pytest.raises(ValueError, match="not an NLI label"):
        as_nli([("a", "b", "entails")])
    with pytest.raises(ValueError, match="not an NLI label"):
        as_nli([("a", "b", float("nan"))])
    with pytest.raises(ValueError, match="not an NLI label.*-1"):
        as_nli([("a", "b", -1)])
    with pytest.raises(ValueError, match="lacks column"):
        as_nli(pd.DataFrame({"premise": ["a"], "hypothesis": ["b"]}))
    with pytest.raises(ValueError, match="length mismatch"):
        as_nli({"premise": ["a", "c"], "hypothesis": ["b"], "label": [0]})
    with pytest.raises(ValueError, match="non-empty string"):
        as_nli([("a", None, 0)])
    with pytest.raises(ValueError, match=r"\(premise, hypothesis, label\)"):
        as_nli([("a", "b")])
    with pytest.raises(ValueError, match="labels\\[0\\]"):
        NLIData("x", "y", ["a"], ["b"], ["yes"], "test")


def test_task_names():
    assert check_nli_task("MNLI") == "multinli" and check_nli_task("SICK-E") == "sick"
    with pytest.raises(ValueError, match="valid names: snli, multinli, allnli, sick"):
        load_nli("snlii")
    with pytest.raises(ValueError, match="has no split"):
        load_nli("sick", "validation")


# ------------------------------------------------------------------ hub path (faked datasets)


TABLES = {
    "stanfordnlp/snli": {
        "premise": ["p1", "p1", "p2"],
        "hypothesis": ["h1", "h2", "h3"],
        "label": [0, -1, 2],
    },
    "nyu-mll/multi_nli": {"premise": ["m1"], "hypothesis": ["n1"], "label": [1]},
}


def test_hub_snli_drops_pairs_without_gold_label(monkeypatch):
    calls = []
    fake_hub(monkeypatch, TABLES, calls)
    data = load_nli("snli", "train")
    assert calls == [("stanfordnlp/snli", "train")]
    assert data.hypotheses == ["h1", "h3"] and data.labels == ["entailment", "contradiction"]
    assert data.source == "hub:stanfordnlp/snli[train]" and data.files == ()


def test_hub_allnli_is_snli_plus_multinli(monkeypatch):
    calls = []
    fake_hub(monkeypatch, TABLES, calls)
    data = load_nli_train()  # the paper's training set when SBERT_TUTOR_DATA is unset
    assert calls == [("stanfordnlp/snli", "train"), ("nyu-mll/multi_nli", "train")]
    assert data.name == "allnli" and data.premises == ["p1", "p2", "m1"]
    assert data.labels == ["entailment", "contradiction", "neutral"]
    calls.clear()
    load_nli("mnli", "dev")
    assert calls == [("nyu-mll/multi_nli", "validation_matched")]


def test_hub_errors_name_the_setting(monkeypatch):
    fake_hub(monkeypatch, TABLES, [])
    with pytest.raises(DataNotFoundError, match="SBERT_TUTOR_DATA"):
        load_nli("sick", "train")  # SICK-E only from the local folder

    def broken(dataset_id, split):
        raise ConnectionError("no route to host")

    sys.modules["datasets"].load_dataset = broken
    with pytest.raises(DataNotFoundError, match="no route to host"):
        load_nli("snli", "dev")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match="HF_HUB_OFFLINE"):
        load_nli("snli", "dev")
