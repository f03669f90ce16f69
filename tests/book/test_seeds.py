"""Seeded training runs (mean, spread, verdict) and the weak start of chapters 6-11."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import spearmanr

from sbert_tutor.book import seeds
from sbert_tutor.book.weak_start import WeakStart, load_start, start_label
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.training import TrainingConfig
from sbert_tutor.training.recipe import fit
from tests.book.test_objectives import NLI_ROWS, _tiny_sts
from tests.conftest import save_tiny_encoder

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture
def tiny_folder(tiny_bert, tmp_path):
    return save_tiny_encoder(tiny_bert, tmp_path / "tiny")


def _spearman(encoder, sts) -> float:
    u, v = encoder.encode(sts.sentences1), encoder.encode(sts.sentences2)
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    return 100 * spearmanr(cos, sts.scores)[0]


# --------------------------------------------------------------------------- weak start
def test_weak_start_is_the_first_layers_of_the_base(tiny_folder):
    """Its token states are the full model's hidden state after layer k (transformers' own
    ``output_hidden_states``), mean-pooled."""
    full = SentenceEncoder.from_pretrained(tiny_folder, device="cpu")
    weak = WeakStart(layers=1, base=tiny_folder).load()
    assert len(weak.model.encoder.layer) == 1 and weak.model.config.num_hidden_layers == 1
    assert weak.name == "tiny, first 1 layer" and weak.describe()["name"] == weak.name
    texts = ["a man plays a guitar", "kids play"]
    batch = full.tokenize(texts)
    with torch.no_grad():
        states = full.model(**batch, output_hidden_states=True).hidden_states[1]
    mask = batch["attention_mask"].unsqueeze(-1).float()
    expected = (states * mask).sum(1) / mask.sum(1)
    got = weak.encode(texts, convert_to_tensor=True)
    assert torch.allclose(got, expected, atol=1e-5)
    # the full model is different (the test can fail), and each load is a fresh copy
    assert not torch.allclose(full.encode(texts, convert_to_tensor=True), expected, atol=1e-3)
    assert weak.model is not WeakStart(layers=1, base=tiny_folder).load().model


def test_weak_start_refuses_bad_layers(tiny_folder):
    with pytest.raises(ValueError, match="has 2 transformer layers, cannot keep 3"):
        WeakStart(layers=3, base=tiny_folder).load()
    with pytest.raises(ValueError, match="integer >= 0"):
        WeakStart(layers=-1)
    assert start_label(WeakStart(2)) == "all-MiniLM-L6-v2, first 2 layers"
    assert start_label("bert-base-uncased") == "bert-base-uncased"
    assert isinstance(load_start(tiny_folder), SentenceEncoder)


# --------------------------------------------------------------------------- summary, verdict
def _frame(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"variant": k, "seed": i, "spearman": x}
            for k, xs in values.items()
            for i, x in enumerate(xs)
        ]
    )


def _result(values: dict[str, list[float]], start: float) -> seeds.SeededRuns:
    runs = _frame(values)
    return seeds.SeededRuns(
        table=seeds.summarize(runs, start),
        runs=runs,
        start=start,
        start_model="m",
        records={},
        logs={},
        eval_data="x",
    )


def test_summarize_worked_example():
    table = seeds.summarize(_frame({"a": [70.0, 71.0, 72.0], "b": [68.0, 69.0, 69.5]}), 60.0)
    assert list(table.index) == [seeds.START, "a", "b"]
    assert table.loc["a", "mean"] == pytest.approx(71.0)
    assert table.loc["a", "spread"] == pytest.approx(1.0)  # sqrt((1 + 0 + 1) / 2)
    assert table.loc["b", "spread"] == pytest.approx(np.std([68.0, 69.0, 69.5], ddof=1))
    assert table.loc["b", "min"] == 68.0 and table.loc["b", "max"] == 69.5
    assert table.loc["a", "change"] == pytest.approx(11.0) and table.loc["a", "seeds"] == 3
    assert table.loc[seeds.START, "change"] == 0.0


def test_verdict_needs_the_seed_ranges_apart():
    result = _result(
        {"a": [70.0, 71.0, 72.0], "b": [68.0, 69.0, 69.5], "c": [69.0, 71.0, 73.0]}, 69.2
    )
    ab = seeds.verdict(result, "a", "b")
    assert ab.beyond_spread and ab.difference == pytest.approx(71.0 - np.mean([68.0, 69.0, 69.5]))
    assert "beyond the seed spread" in ab.sentence and "above" in ab.sentence
    ba = seeds.verdict(result, "b", "a")
    assert ba.beyond_spread and ba.difference < 0 and "below" in str(ba)
    ac = seeds.verdict(result, "a", "c")
    assert not ac.beyond_spread and "within the run-to-run spread" in ac.sentence
    # against the start model: a's seeds all lie above 69.2, b's straddle it
    above = seeds.verdict(result, "a")
    assert above.beyond_spread and "every seed lies above the start model" in above.sentence
    assert not seeds.verdict(result, "b").beyond_spread
    table = seeds.verdicts(result, [("a", "b"), ("a", "c")])
    assert table["beyond spread"].tolist() == [True, False]
    with pytest.raises(KeyError, match="'d' is not a row"):
        seeds.verdict(result, "d")


def test_one_seed_gives_no_verdict():
    result = _result({"a": [75.0], "b": [70.0]}, 60.0)
    assert not seeds.verdict(result, "a").beyond_spread
    v = seeds.verdict(result, "a", "b")
    assert not v.beyond_spread and "single seed" in v.sentence
    assert np.isnan(result.table.loc["a", "spread"])


# --------------------------------------------------------------------------- the runs
def test_seeded_variants_on_a_tiny_bert(tiny_folder):
    config = TrainingConfig(
        max_steps=2, batch_size=4, lr=1e-3, show_progress_bar=False, eval_before=False
    )
    sts = _tiny_sts()
    variants = {
        "(u, v)": ("softmax", {"features": ("u", "v")}),
        "MNRL": ("mnrl", {"scale": 20.0}, [(p, h) for p, h, y in NLI_ROWS if y == "entailment"]),
    }
    result = seeds.seeded_variants(tiny_folder, variants, NLI_ROWS, config, sts, seeds=(0, 1, 2))
    runs = result.runs
    assert len(runs) == 6 and runs.groupby("variant")["seed"].apply(list).to_dict() == {
        "(u, v)": [0, 1, 2],
        "MNRL": [0, 1, 2],
    }
    # the seeds give different runs (a fixed seed would give one loss three times)
    assert runs.groupby("variant")["final_loss"].nunique().min() == 3
    # the start row is scipy's Spearman of the untouched start model
    start = SentenceEncoder.from_pretrained(tiny_folder, device="cpu")
    assert result.start == pytest.approx(_spearman(start, sts), abs=1e-6)
    # each row is a fresh run from the start with that seed (deep copies never share weights)
    again = fit(
        SentenceEncoder.from_pretrained(tiny_folder),
        "softmax",
        NLI_ROWS,
        TrainingConfig(max_steps=2, batch_size=4, lr=1e-3, seed=1, show_progress_bar=False),
        objective_options={"features": ("u", "v")},
    )
    row = runs[(runs["variant"] == "(u, v)") & (runs["seed"] == 1)].iloc[0]
    assert row["spearman"] == pytest.approx(_spearman(again.model, sts), abs=1e-6)
    assert row["final_loss"] == pytest.approx(again.record.final_loss())
    # the table is the mean and sample sd of those rows
    mnrl = runs[runs["variant"] == "MNRL"]["spearman"].to_numpy()
    assert result.table.loc["MNRL", "mean"] == pytest.approx(mnrl.mean())
    assert result.table.loc["MNRL", "spread"] == pytest.approx(mnrl.std(ddof=1))
    assert set(result.logs) == {"(u, v)", "MNRL"} and result.logs["MNRL"]["config"]["seed"] == 0
    assert result.logs["MNRL"]["loss"]["name"] == "mnrl"
    assert result.eval_data == "stsb/dev: all 5 pairs"
    rows = seeds.seeded_rows(result, "STSb", "tiny + ", baseline_setup="tiny")
    assert [r["setup"] for r in rows] == [
        "tiny",
        "tiny + (u, v) (mean of 3 seeds)",
        "tiny + MNRL (mean of 3 seeds)",
    ]
    with pytest.raises(ValueError, match="distinct"):
        seeds.seeded_variants(tiny_folder, variants, NLI_ROWS, config, sts, seeds=(1, 1))
