"""A chapter's TrainingConfig from its sizes: amp="auto" on CUDA (faked here), fp32 on a CPU,
progress bars outside the quick profile, drawn by tqdm.auto (the notebook bar in Jupyter)."""

from __future__ import annotations

import copy

import pytest
import torch

from sbert_tutor.book.chapters import every_chapter
from sbert_tutor.book.chapters.classification_objective import ClassificationSizes
from sbert_tutor.book.chapters.distance_dilemma import DistanceDilemmaSizes
from sbert_tutor.book.chapters.regression_objective import RegressionSizes
from sbert_tutor.book.configs import mixed_precision, show_progress_bar, training_config
from sbert_tutor.book.profiles import get_profile
from sbert_tutor.book.sizes import RunSizes, sizes_for

TRAINING = [k for k in every_chapter() if issubclass(k, RunSizes)] + [DistanceDilemmaSizes]


@pytest.mark.parametrize("kind", TRAINING, ids=lambda k: k.__name__)
@pytest.mark.parametrize("profile", ["quick", "t4", "paper"])
def test_the_config_is_the_sizes(kind, profile):
    sizes = sizes_for(kind, profile)
    config = training_config(sizes, profile)
    assert (config.max_steps, config.batch_size, config.lr) == (
        sizes.steps,
        sizes.batch_size,
        sizes.lr,
    )
    assert (config.epochs, config.warmup_ratio) == (sizes.epochs, sizes.warmup_ratio)
    assert config.show_progress_bar is (profile != "quick")


def test_cuda_gets_mixed_precision_and_the_gpu_profile_progress(monkeypatch):
    monkeypatch.delenv("SBERT_TUTOR_PROFILE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    profile = get_profile()  # t4: CUDA is "there"
    config = training_config(sizes_for(ClassificationSizes, profile), eval_before=False)
    assert profile.name == "t4" and config.amp == "auto" and config.show_progress_bar
    assert config.eval_before is False  # overrides pass through
    # the trainer resolves "auto" by the GPU: fp16 with a loss scaler on a T4 (7.5), bf16 on 8.0+
    from sbert_tutor.training.trainer import auto_amp

    assert auto_amp("cuda", capability=(7, 5)) == "fp16"
    assert auto_amp("cuda", capability=(9, 0)) == "bf16"


def test_a_cpu_trains_in_fp32_and_quick_stays_quiet(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "quick")
    config = training_config(sizes_for(RegressionSizes, "quick"))
    assert config.amp is None and mixed_precision() is None and not config.show_progress_bar
    assert show_progress_bar("t4") and show_progress_bar(get_profile("paper"))
    assert training_config(
        sizes_for(RegressionSizes, "quick"), show_progress_bar=True
    ).show_progress_bar


def test_the_trainers_bar_is_tqdm_auto(monkeypatch, tiny_bert):
    """The trainer draws its bar with tqdm.auto's class (ipywidgets' bar in a notebook), and
    shows it when the config asks for progress."""
    import tqdm.auto

    from sbert_tutor import SentenceEncoder
    from sbert_tutor.training import Trainer, TrainingConfig
    from sbert_tutor.training.objectives import CosineObjective

    made = []

    class Bar(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            made.append(kwargs)
            super().__init__(*args, **{**kwargs, "disable": True})

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    model, tokenizer = tiny_bert
    encoder = SentenceEncoder(copy.deepcopy(model), tokenizer, pooling="mean", max_seq_length=16)
    data = [("a cat sits", "a cat rests", 4.0), ("a dog runs", "rain falls", 0.5)] * 4
    config = TrainingConfig(max_steps=2, batch_size=4, show_progress_bar=True)
    Trainer(encoder, CosineObjective(), data, config).train()
    assert made and made[0]["disable"] is False and made[0]["desc"].startswith("train")


def test_every_training_chapter_takes_its_settings_from_training_config():
    """No chapter builds a TrainingConfig by hand without saying its precision (it would miss
    amp="auto" on CUDA and the progress bar beyond quick); each chapter that trains calls
    training_config."""
    import json
    import re
    from pathlib import Path

    book = Path(__file__).resolve().parents[2] / "book"
    training = []
    for chapter in sorted(book.glob("*.ipynb")):
        cells = json.loads(chapter.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        # a config built by hand must say its precision: chapter 3a's step-for-step check
        # against the reader's fp32 loop is the one that does (amp=None on any device)
        for call in re.finditer(r"TrainingConfig\((.*?)\)\n", code, re.S):
            assert re.search(r"\bamp=", call.group(1)), (chapter.name, call.group(0))
        if "seeded_variants(" in code or "fit(" in code:
            training.append(chapter.stem)
            assert "training_config(" in code, chapter.name
    assert len(training) >= 6, training  # chapters 6-12 train
