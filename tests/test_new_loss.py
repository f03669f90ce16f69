"""A new loss is one pure function and one registered objective, nothing else.

The loss below is defined here, in the test, as a user would define it: a function of embeddings
and an :class:`~sbert_tutor.training.objectives.Objective` subclass registered with
:func:`~sbert_tutor.training.objectives.register_objective`. Without touching any file of the
library, ``fit``, the named NLI training sets and the ``sbert-tutor train`` command then all
accept it by name, with its option.
"""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
import torch
from torch import Tensor

from sbert_tutor.cli import build_parser, main
from sbert_tutor.data.nli import NLIData, entailment_pairs
from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
from sbert_tutor.training import TrainingConfig
from sbert_tutor.training.objectives import (
    OBJECTIVES,
    Objective,
    make_objective,
    register_objective,
)
from sbert_tutor.training.recipe import fit
from sbert_tutor.training.sources import load_training_data

pytestmark = pytest.mark.usefixtures("single_thread")


# ------------------------------------------------------------------ the new loss: two definitions
def pull_together(anchors: Tensor, positives: Tensor, weight: float = 1.0) -> Tensor:
    r""":math:`\frac{w}{N} \sum_i \lVert a_i - p_i \rVert^2`: pull every pair together."""
    return weight * ((anchors - positives) ** 2).sum(dim=-1).mean()


class PullObjective(Objective):
    """Pairs (anchor, positive), pulled together; on NLI, the entailment pairs."""

    name = "pull_together"
    roles = ("anchor", "positive")
    nli_shape = staticmethod(entailment_pairs)

    def __init__(self, weight: float = 1.0) -> None:
        super().__init__()
        self.weight = float(weight)

    def forward(self, embeddings: Tensor, labels: Tensor | None = None) -> Tensor:
        return pull_together(embeddings[:, 0], embeddings[:, 1], self.weight)

    def settings(self) -> dict:
        return {"name": self.name, "weight": self.weight}


@pytest.fixture
def registered():
    register_objective(PullObjective)
    yield PullObjective
    OBJECTIVES.pop(PullObjective.name)


@pytest.fixture
def encoder(tiny_bert):
    model, tokenizer = tiny_bert
    return SentenceEncoder(copy.deepcopy(model), tokenizer, pooling="mean", max_seq_length=32)


PAIRS = [(f"the cat number {i}", f"a cat called {i}") for i in range(24)]


def test_the_loss_trains_through_fit(registered, encoder):
    objective = make_objective("pull_together", options={"weight": 2.0})
    assert isinstance(objective, PullObjective)
    config = TrainingConfig(max_steps=6, batch_size=8, lr=1e-3, show_progress_bar=False, seed=1)
    run = fit(encoder, "pull_together", PAIRS, config, objective_options={"weight": 2.0})
    assert run.log["loss"] == {"name": "pull_together", "weight": 2.0}
    assert run.log["steps_done"] == 6 and run.log["train_data"]["examples"] == 24
    steps = [s["loss"] for s in run.record.steps]
    assert steps[-1] < steps[0]  # the gradient points the right way
    emb = torch.randn(4, 2, 3)
    assert float(run.objective(emb)) == pytest.approx(float(pull_together(emb[:, 0], emb[:, 1], 2)))
    with pytest.raises(ValueError, match="the pull_together loss has no option 'scale'"):
        fit(encoder, "pull_together", PAIRS, config, objective_options={"scale": 20.0})


def test_the_named_nli_sets_shape_for_it(registered):
    nli = NLIData(
        "snli",
        "dev",
        ["p1", "p1", "p2"],
        ["e1", "c1", "e2"],
        ["entailment", "contradiction", "entailment"],
        "hand",
    )
    assert registered.trains_on_nli()
    assert registered.shape_nli(nli).table.values.tolist() == [["p1", "e1"], ["p2", "e2"]]
    with pytest.raises(ValueError, match="stsb carries similarity scores.*pull_together"):
        load_training_data("stsb", "pull_together")


def test_the_cli_offers_it_with_its_option(registered, encoder, tmp_path, capsys):
    argv = ["train", "--model", "m", "--loss", "pull_together", "--train", "x.tsv", "--out", "o"]
    args = build_parser().parse_args([*argv, "--loss-option", "weight=0.5"])
    assert args.loss == "pull_together" and args.loss_option == [("weight", 0.5)]

    model_dir = encoder.save(tmp_path / "tiny")
    train_file = tmp_path / "pairs.tsv"
    pd.DataFrame(PAIRS, columns=["anchor", "positive"]).to_csv(train_file, sep="\t", index=False)
    out = tmp_path / "trained"
    argv = ["train", "--model", str(model_dir), "--loss", "pull_together", "--train"]
    argv += [str(train_file), "--out", str(out), "--max-steps", "2", "--batch-size", "8"]
    argv += ["--loss-option", "weight=0.5", "--device", "cpu", "--no-progress"]
    assert main(argv) == 0
    log = json.loads((out / "training_log.json").read_text())
    assert log["loss"] == {"name": "pull_together", "weight": 0.5}
    assert log["train_data"]["columns"] == ["anchor", "positive"]


def test_without_registration_the_name_is_unknown():
    assert "pull_together" not in OBJECTIVES
    with pytest.raises(ValueError, match="unknown loss 'pull_together'"):
        make_objective("pull_together")
    with pytest.raises(SystemExit):
        build_parser().parse_args(
            ["train", "--model", "m", "--loss", "pull_together", "--train", "x", "--out", "o"]
        )
