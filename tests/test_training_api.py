"""``fit`` and ``sbert-tutor train`` as a practitioner meets them: every keyword is used or
refused, the columns of your own file, your own dev data, errors that name what the caller can
change (a keyword in Python, a flag on the command line)."""

from __future__ import annotations

import copy

import pytest

from sbert_tutor.encoder import SentenceEncoder
from sbert_tutor.training import TrainingConfig
from sbert_tutor.training.recipe import fit

pytestmark = pytest.mark.usefixtures("single_thread")

PAIRS = [
    ("the cat sleeps", "a cat is sleeping"),
    ("the dog barks", "a dog is barking"),
    ("rain falls", "it is raining"),
    ("the bus is late", "a bus came late"),
]
SCORED = [
    ("the cat sleeps", "a cat is sleeping", 4.5),
    ("the dog barks", "the train leaves", 0.5),
    ("rain falls", "it is raining", 5.0),
    ("the bus is late", "a cat is sleeping", 1.0),
]


@pytest.fixture
def encoder(tiny_bert):
    """A fresh copy of the session's tiny BERT (training must not touch the shared one)."""
    model, tokenizer = tiny_bert
    return SentenceEncoder(copy.deepcopy(model), tokenizer, pooling="mean", max_seq_length=32)


# ------------------------------------------------------------------ item 1: no keyword ignored
def test_fit_takes_the_config_fields_as_keywords(encoder):
    config = TrainingConfig(max_steps=5, batch_size=4, show_progress_bar=False)
    run = fit(encoder, "mnrl", PAIRS, config, max_steps=1, batch_size=2, lr=0.5)
    assert run.log["steps_done"] == 1 and len(run.record.steps) == 1
    assert run.log["config"]["batch_size"] == 2 and run.log["config"]["lr"] == 0.5
    assert run.record.steps[0]["lr"] <= 0.5
    # the settings live in the config, not in the provenance
    assert "max_steps" not in run.log["provenance"] and "lr" not in run.log["provenance"]
    assert config.max_steps == 5  # the caller's config is not changed


def test_fit_keeps_the_provenance_it_is_given(encoder):
    config = TrainingConfig(max_steps=1, batch_size=2, show_progress_bar=False)
    run = fit(encoder, "mnrl", PAIRS, config, provenance={"command": ["train", "x"]})
    assert run.log["provenance"]["command"] == ["train", "x"]
    assert run.log["provenance"]["seed"] == 42


@pytest.mark.parametrize(
    ("keyword", "nearest"),
    [("max_step", "max_steps"), ("learning_rate", "lr"), ("batchsize", "batch_size")],
)
def test_fit_refuses_an_unknown_keyword_and_names_the_nearest(keyword, nearest):
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{keyword}'.*'{nearest}'"):
        fit("no-such-model", "mnrl", PAIRS, **{keyword: 1})


def test_fit_refuses_a_keyword_with_no_near_name():
    with pytest.raises(TypeError, match=r"'zzz'\. fit takes .*provenance=\{'zzz': \.\.\.\}"):
        fit("no-such-model", "mnrl", PAIRS, zzz=1)


# ------------------------------------------------------------------ item 11: a short repr
def test_train_run_repr_is_one_short_line(encoder):
    config = TrainingConfig(max_steps=2, batch_size=2, show_progress_bar=False)
    run = fit(encoder, "mnrl", PAIRS, config)
    text = repr(run)
    assert "\n" not in text and len(text) < 200
    assert text.startswith("TrainRun(") and "loss='mnrl'" in text and "steps=2" in text
    assert "BertModel" not in text and "Linear" not in text
