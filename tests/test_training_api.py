"""``fit`` and ``sbert-tutor train`` as a practitioner meets them: every keyword is used or
refused, the columns of your own file, your own dev data, errors that name what the caller can
change (a keyword in Python, a flag on the command line)."""

from __future__ import annotations

import copy
import inspect
import json

import pandas as pd
import pytest

from sbert_tutor.encoders.sentence_encoder import SentenceEncoder
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


def test_fit_has_one_keyword_per_config_field_and_keeps_the_rest():
    from dataclasses import fields

    from sbert_tutor.training.recipe import KEEP

    parameters = inspect.signature(fit).parameters
    for f in fields(TrainingConfig):
        assert parameters[f.name].kind is inspect.Parameter.KEYWORD_ONLY, f.name
        assert parameters[f.name].default is KEEP, f.name
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


@pytest.mark.parametrize("keyword", ["max_step", "learning_rate", "zzz"])
def test_fit_refuses_an_unknown_keyword(keyword):
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{keyword}'"):
        fit("no-such-model", "mnrl", PAIRS, **{keyword: 1})


def test_fit_none_is_a_value_not_keep(encoder):
    config = TrainingConfig(max_steps=1, batch_size=2, show_progress_bar=False)
    run = fit(encoder, "mnrl", PAIRS, config, max_grad_norm=None)
    assert run.log["config"]["max_grad_norm"] is None and config.max_grad_norm == 1.0


# ------------------------------------------------------------------ item 11: a short repr
def test_train_run_repr_is_one_short_line(encoder):
    config = TrainingConfig(max_steps=2, batch_size=2, show_progress_bar=False)
    run = fit(encoder, "mnrl", PAIRS, config)
    text = repr(run)
    assert "\n" not in text and len(text) < 200
    assert text.startswith("TrainRun(") and "loss='mnrl'" in text and "steps=2" in text
    assert "BertModel" not in text and "Linear" not in text


# ------------------------------------------------------------------ item 3: columns, advice
def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def _quick(**overrides):
    return TrainingConfig(
        **{"max_steps": 1, "batch_size": 2, "show_progress_bar": False, **overrides}
    )


def test_fit_takes_the_columns_matched_in_any_case(encoder):
    frame = pd.DataFrame(
        {
            "Question": [a for a, _, _ in SCORED],
            "Answer": [b for _, b, _ in SCORED],
            "Similarity": [s for _, _, s in SCORED],
        }
    )
    run = fit(
        encoder,
        "cosine",
        frame,
        _quick(),
        objective_options={"score_range": (0, 5)},
        label_column="similarity",
        text_columns=["answer", "question"],
    )
    assert run.log["train_data"]["columns"] == ["Answer", "Question"]
    # a column called Score is the score column without being named
    scored = frame.rename(columns={"Similarity": "Score"})
    run = fit(encoder, "cosine", scored, _quick(), objective_options={"score_range": (0, 5)})
    assert run.log["train_data"]["columns"] == ["Question", "Answer"]


def test_fit_advice_names_fits_own_keywords(encoder):
    frame = pd.DataFrame({"q": ["a b", "c d"], "a": ["e f", "g h"], "similarity": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"no label column.*label_column='similarity'"):
        fit(encoder, "cosine", frame, _quick(), objective_options={"score_range": (0, 5)})
    with pytest.raises(ValueError, match=r"no column 'simlarity'.*label_column='similarity'"):
        fit(
            encoder,
            "cosine",
            frame,
            _quick(),
            label_column="simlarity",
            objective_options={"score_range": (0, 5)},
        )
    with pytest.raises(ValueError, match=r"e\.g\. objective_options=\{'score_range': \(0, 5\)\}"):
        fit(encoder, "cosine", frame, _quick(), label_column="similarity")
    with pytest.raises(
        ValueError, match=r"score range \(0, 1\).*objective_options=\{'score_range': \(1, 2\)\}"
    ):
        fit(
            encoder,
            "cosine",
            frame,
            _quick(),
            label_column="similarity",
            objective_options={"score_range": (0, 1)},
        )
    # the objective called directly speaks of its own keyword
    from sbert_tutor.training import CosineObjective

    with pytest.raises(ValueError, match=r"e\.g\. score_range=\(1, 2\)$"):
        CosineObjective(score_range=(0, 1)).prepare(frame.rename(columns={"similarity": "score"}))


def _model_dir(encoder, tmp_path):
    return str(encoder.save(tmp_path / "tiny"))


def _train_cli(encoder, tmp_path, *extra):
    from sbert_tutor.cli import main

    argv = ["train", "--model", _model_dir(encoder, tmp_path), "--loss", "cosine"]
    argv += ["--out", str(tmp_path / "out"), "--max-steps", "1", "--batch-size", "2"]
    return main([*argv, "--device", "cpu", "--no-progress", *extra])


def test_cli_trains_a_file_whose_score_column_has_another_name(encoder, tmp_path, capsys):
    lines = ["question\tanswer\tsimilarity"] + [f"{a}\t{b}\t{s}" for a, b, s in SCORED]
    data = _write(tmp_path / "faq.tsv", "\n".join(lines) + "\n")
    assert _train_cli(encoder, tmp_path, "--train", str(data), "--score-range", "0", "5") == 2
    err = capsys.readouterr().err
    assert "no label column" in err and "--label-column similarity" in err
    assert "label_column=" not in err
    argv = [
        "--train",
        str(data),
        "--label-column",
        "Similarity",
        "--text-columns",
        "answer,question",
    ]
    assert _train_cli(encoder, tmp_path, *argv, "--score-range", "0", "5") == 0
    log = json.loads((tmp_path / "out" / "training_log.json").read_text())
    assert log["train_data"]["columns"] == ["answer", "question"]


def test_cli_advice_names_the_flags(encoder, tmp_path, capsys):
    lines = ["sentence1\tsentence2\tscore"] + [f"{a}\t{b}\t{s}" for a, b, s in SCORED]
    data = _write(tmp_path / "pairs.tsv", "\n".join(lines) + "\n")
    assert _train_cli(encoder, tmp_path, "--train", str(data)) == 2
    err = capsys.readouterr().err
    assert "--score-range 0 5" in err and "score_range" not in err
    assert _train_cli(encoder, tmp_path, "--train", str(data), "--score-range", "0", "1") == 2
    err = capsys.readouterr().err
    assert f"error: {data}:2: score 4.5 is outside the score range (0, 1)" in err
    assert "--score-range 0 5" in err
    assert "CosineObjective" not in err and "score_range=" not in err


# ------------------------------------------------------------------ item 4: the CLI on a file
def test_train_help_documents_the_file_format(capsys):
    from sbert_tutor.cli import main

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "header line" in out and "quote characters are text" in out
    assert "label, score, labels" in out and "in the order of the file" in out
    assert "sentence1<TAB>sentence2<TAB>score" in out and "--label-column" in out


@pytest.mark.parametrize(
    ("name", "text", "line", "why"),
    [
        ("ragged.tsv", "s1\ts2\tscore\na b\tc d\t1\ne f\tg h\n", 3, "2 field"),
        ("blank_score.tsv", "s1\ts2\tscore\na b\tc d\t1\ne f\tg h\t\n", 3, "not a number"),
        ("word_score.csv", "s1,s2,score\na b,c d,1\ne f,g h,high\n", 3, "'high', which is not"),
        ("empty_text.csv", 's1,s2,score\na b,c d,1\n"",g h,2\n', 3, "column 's1' is empty"),
        (
            "bad.jsonl",
            '{"s1": "a b", "s2": "c d", "score": 1}\n{"s1": "e f", "s2"\n',
            2,
            "not JSON",
        ),
        (
            "null.jsonl",
            '{"s1": "a b", "s2": "c d", "score": 1}\n{"s1": null, "s2": "x", "score": 2}\n',
            2,
            "column 's1' is missing (null)",
        ),
    ],
)
def test_a_bad_row_is_named_by_file_and_line(encoder, tmp_path, capsys, name, text, line, why):
    data = _write(tmp_path / name, text)
    code = _train_cli(encoder, tmp_path, "--train", str(data), "--score-range", "0", "5")
    err = capsys.readouterr().err
    assert code == 2
    assert f"sbert-tutor: error: {data}:{line}: " in err and why in err
    assert "Traceback" not in err


def test_quotes_are_text_in_a_tsv_file(encoder, tmp_path):
    lines = ["s1\ts2\tscore", 'he said "hi\tshe left\t1', 'a "quoted" word\tplain\t4']
    data = _write(tmp_path / "quotes.tsv", "\n".join(lines) + "\n")
    assert _train_cli(encoder, tmp_path, "--train", str(data), "--score-range", "0", "5") == 0


def test_a_missing_file_is_reported_as_missing(encoder, tmp_path, capsys):
    missing = tmp_path / "nowhere" / "x.tsv"
    assert _train_cli(encoder, tmp_path, "--train", str(missing)) == 2
    err = capsys.readouterr().err
    assert "no such training file" in err and str(missing) in err
    assert "unknown training set" not in err
    assert _train_cli(encoder, tmp_path, "--train", "x.tsv") == 2
    assert "no such training file: x.tsv" in capsys.readouterr().err


# ------------------------------------------------------------------ item 6: your own dev data
def test_fit_evaluates_your_own_dev_pairs(encoder):
    config = _quick(max_steps=2, eval_steps=1)
    run = fit(encoder, "mnrl", PAIRS, config, eval_data=SCORED)
    assert [e["step"] for e in run.record.evals] == [0, 1, 2]
    assert run.log["evaluator"] == "dev_spearman"
    from sbert_tutor.evaluation.sts import evaluate_sts

    final = evaluate_sts(run.model, pairs=SCORED, show_progress_bar=False)
    assert run.record.evals[-1]["dev_spearman"] == pytest.approx(final.spearman, abs=1e-6)
    assert run.record.evals[-1]["dev_pearson"] == pytest.approx(final.pearson, abs=1e-6)


def test_fit_runs_the_evaluator_you_pass(encoder):
    calls = []

    def evaluator(model):
        calls.append(model)
        return {"mine": float(len(calls))}

    run = fit(encoder, "mnrl", PAIRS, _quick(max_steps=2), evaluator=evaluator)
    assert calls == [encoder, encoder] and [e["mine"] for e in run.record.evals] == [1.0, 2.0]
    with pytest.raises(ValueError, match="pass one of eval_task, evaluator"):
        fit(encoder, "mnrl", PAIRS, _quick(), eval_task="stsb", evaluator=evaluator)


def test_cli_eval_file(encoder, tmp_path, capsys):
    lines = ["sentence1\tsentence2\tscore"] + [f"{a}\t{b}\t{s}" for a, b, s in SCORED]
    dev = _write(tmp_path / "dev.tsv", "\n".join(lines) + "\n")
    train = _write(
        tmp_path / "train.tsv", "anchor\tpositive\n" + "".join(f"{a}\t{b}\n" for a, b in PAIRS)
    )
    from sbert_tutor.cli import main

    argv = ["train", "--model", _model_dir(encoder, tmp_path), "--loss", "mnrl"]
    argv += ["--train", str(train), "--eval-file", str(dev), "--out", str(tmp_path / "out")]
    assert (
        main([*argv, "--max-steps", "2", "--batch-size", "2", "--device", "cpu", "--no-progress"])
        == 0
    )
    assert "dev_spearman:" in capsys.readouterr().out
    log = json.loads((tmp_path / "out" / "training_log.json").read_text())
    assert log["evaluator"] == "dev_spearman" and len(log["loss_curve"]["evals"]) == 2
    assert str(dev) in log["provenance"]["data_files"]
    bad = _write(tmp_path / "bad_dev.tsv", "sentence1\tsentence2\tscore\na\tb\tx\n")
    assert (
        main([*argv[:-4], "--eval-file", str(bad), "--out", str(tmp_path / "o2"), "--no-progress"])
        == 2
    )
    assert f"{bad}:2: column 'score' is 'x'" in capsys.readouterr().err


def test_sts_result_gives_its_main_number(minilm):
    from sbert_tutor.evaluation.sts import evaluate_sts

    result = evaluate_sts(minilm, pairs=SCORED, show_progress_bar=False)
    assert result.spearman == result.table.spearman[0] and result.primary_metric == "spearman"
    assert result.pearson == result.table.pearson[0] and result.main_score == result.spearman


def test_a_named_set_the_loss_cannot_use_is_advised_in_the_callers_terms(encoder, tmp_path, capsys):
    from sbert_tutor.cli import main

    with pytest.raises(ValueError, match=r"e\.g\. loss='cosine'.*e\.g\. train='nli'"):
        fit(encoder, "mnrl", "stsb", _quick())
    argv = ["train", "--model", _model_dir(encoder, tmp_path), "--loss", "mnrl", "--train", "stsb"]
    assert main([*argv, "--out", str(tmp_path / "o"), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert (
        "e.g. --loss cosine" in err
        and "e.g. --train nli" in err
        and "=" not in err.split("error:")[1]
    )


def test_a_bad_setting_is_named_as_the_caller_set_it(encoder, tmp_path, capsys):
    with pytest.raises(ValueError, match=r"^batch_size=0: batch_size must be an integer >= 1$"):
        fit(encoder, "mnrl", PAIRS, batch_size=0)
    lines = ["sentence1\tsentence2\tscore"] + [f"{a}\t{b}\t{s}" for a, b, s in SCORED]
    data = _write(tmp_path / "pairs.tsv", "\n".join(lines) + "\n")
    argv = ["--train", str(data), "--score-range", "0", "5", "--warmup-ratio", "2"]
    assert _train_cli(encoder, tmp_path, *argv) == 2
    assert "error: --warmup-ratio 2.0: warmup_ratio must be in [0, 1]" in capsys.readouterr().err


def test_a_misspelt_loss_option_names_the_nearest():
    with pytest.raises(ValueError, match=r"no option 'scor_range'.*Did you mean 'score_range'\?"):
        fit("no-such-model", "cosine", SCORED, objective_options={"scor_range": (0, 5)})
