"""Chapter 6's recorded longer ablation: what the record says it ran, and its numbers agree
with each other (the last point of each curve is the same model as its seed-0 run)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from sbert_tutor.book.chapters.classification_objective import (
    ABLATION_RECORD,
    FEATURE_SETS,
    SIZES,
)
from sbert_tutor.book.recorded import recorded_results
from sbert_tutor.book.seeds import START, summarize, verdict
from sbert_tutor.losses import feature_label


@pytest.fixture(scope="module")
def record():
    found = recorded_results(ABLATION_RECORD)
    assert found is not None, f"{ABLATION_RECORD}.json is not recorded"
    return found


def test_the_record_ran_the_chapters_feature_sets_from_the_quick_start(record):
    sizes = record["sizes"]
    names = [feature_label(fs) for fs in FEATURE_SETS]
    assert list(record["curves"]) == names
    assert sorted(set(pd.DataFrame(record["runs"])["variant"])) == sorted(names)
    assert sizes["start"] == "all-MiniLM-L6-v2, first 1 layer"
    assert sizes["batch_size"] == SIZES["quick"].batch_size
    # one epoch over every training pair: ceil(pairs / batch) steps, for every feature set
    epoch = math.ceil(sizes["training pairs"] / sizes["batch_size"])
    assert set(sizes["steps_done"].values()) == {epoch}


def test_each_curve_ends_at_its_seed_0_run(record):
    runs = pd.DataFrame(record["runs"])
    for name, points in record["curves"].items():
        last = points[-1]
        metric = next(k for k in last if k.endswith("_spearman"))
        seed0 = runs[(runs["variant"] == name) & (runs["seed"] == record["sizes"]["seeds"][0])]
        assert last["step"] == record["sizes"]["steps_done"][name]
        assert last[metric] == pytest.approx(float(seed0["spearman"].iloc[0]), abs=1e-6)


def test_verdicts_read_the_recorded_table(record):
    table = summarize(pd.DataFrame(record["runs"]), record["start_spearman"])
    assert table.loc[START, "mean"] == pytest.approx(record["start_spearman"])
    a, b = "(u, v, |u-v|)", "(u, v)"
    v = verdict(table, a, b)
    assert v.difference == pytest.approx(table.loc[a, "mean"] - table.loc[b, "mean"])
    apart = table.loc[a, "min"] > table.loc[b, "max"] or table.loc[a, "max"] < table.loc[b, "min"]
    assert v.beyond_spread == bool(apart)
