"""Every sentence-transformers folder format, both ways, against the installed sentence-transformers.

Formats checked (see ``sbert_tutor.encoders.st_format``):

* 6.x, as ``SentenceTransformer.save`` writes it today (``pooling_mode``, no ``max_seq_length``);
* 2.x-5.x, written by hand from its documented layout (boolean pooling keys,
  ``sentence_bert_config.json`` with ``max_seq_length``, an empty ``2_Normalize``), and the packaged
  all-MiniLM-L6-v2, a folder written by sentence-transformers 2.0;
* < 2.0, the transformer in ``0_Transformer/`` with its config inside;
* ours (``SentenceEncoder.save``) read by sentence-transformers, and the model card it writes
  (read by huggingface_hub; its facts are what sentence-transformers reads from the folder).

Each is compared to 1e-5 on 200 real texts (5 longer than 256 word pieces) for all-MiniLM-L6-v2,
and on a random tiny model for every pooling mode with and without Normalize, Dense, T5 and prompts.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert_tutor import SentenceEncoder
from sbert_tutor.encoders.sentence_encoder import TruncationWarning
from tests.conftest import needs_data, save_tiny_encoder
from tests.test_encoder import SENTENCES

st = pytest.importorskip("sentence_transformers")
pytestmark = [
    pytest.mark.filterwarnings("ignore::sbert_tutor.encoders.sentence_encoder.TruncationWarning"),
    pytest.mark.usefixtures("single_thread"),
]

WEIGHT_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


def _st_load(folder) -> st.SentenceTransformer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return st.SentenceTransformer(str(folder), device="cpu")


def _st_encode(model, sentences, **kw) -> np.ndarray:
    return model.encode(sentences, batch_size=32, **kw)


@pytest.fixture(scope="module")
def minilm_reference(st_minilm, real_sentences) -> np.ndarray:
    return _st_encode(st_minilm, real_sentences)


def test_real_texts_are_long_enough(minilm, real_sentences):
    lengths = [len(x) for x in minilm.token_ids(real_sentences)[0]]
    assert len(real_sentences) == 200
    assert sum(n >= 256 for n in lengths) == 5  # cut at max_seq_length: the 6.x bug's symptom


def test_current_sentence_transformers_save_loads(
    st_minilm, real_sentences, minilm_reference, tmp_path
):
    folder = tmp_path / "st6"
    st_minilm.save(str(folder))
    pooling_cfg = json.loads((folder / "1_Pooling" / "config.json").read_text())
    assert pooling_cfg["pooling_mode"] == "mean"  # the 6.x form
    assert "max_seq_length" not in json.loads((folder / "sentence_bert_config.json").read_text())
    ours = SentenceEncoder.from_pretrained(folder, device="cpu")
    assert (ours.pooling, ours.normalize, ours.max_seq_length) == ("mean", True, 256)
    np.testing.assert_allclose(ours.encode(real_sentences), minilm_reference, atol=1e-5, rtol=0)


def test_pooling_override_is_used_instead_of_the_file(st_minilm, tmp_path):
    folder = tmp_path / "future"
    st_minilm.save(str(folder))
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode": "attention_pool"}')
    with pytest.raises(NotImplementedError, match=r"attention_pool.*pooling=\.\.\."):
        SentenceEncoder.from_pretrained(folder, device="cpu")
    enc = SentenceEncoder.from_pretrained(folder, pooling="mean", device="cpu")
    ref = st_minilm.encode(SENTENCES[:3])
    np.testing.assert_allclose(enc.encode(SENTENCES[:3]), ref, atol=1e-5)


def _hand_written(minilm_path: Path, folder: Path, sub: str) -> Path:
    """A 2.x-5.x folder (``sub=""``) or a < 2.0 one (``sub="0_Transformer"``), from the docs."""
    transformer = folder / sub
    transformer.mkdir(parents=True)
    for name in WEIGHT_FILES:
        os.symlink(minilm_path / name, transformer / name)
    modules = [
        {"idx": 0, "name": "0", "path": sub, "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
        {
            "idx": 2,
            "name": "2",
            "path": "2_Normalize",
            "type": "sentence_transformers.models.Normalize",
        },
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {
                "word_embedding_dimension": 384,
                "pooling_mode_cls_token": False,
                "pooling_mode_mean_tokens": True,
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            }
        )
    )
    (folder / "2_Normalize").mkdir()  # 2.x wrote an empty folder
    (transformer / "sentence_bert_config.json").write_text(
        '{"max_seq_length": 256, "do_lower_case": false}'
    )
    return folder


def test_hand_written_2x_to_5x_format(minilm_path, real_sentences, minilm_reference, tmp_path):
    folder = _hand_written(minilm_path, tmp_path / "m", "")
    ours = SentenceEncoder.from_pretrained(folder, device="cpu")
    assert (ours.pooling, ours.normalize, ours.max_seq_length) == ("mean", True, 256)
    np.testing.assert_allclose(ours.encode(real_sentences), minilm_reference, atol=1e-5, rtol=0)


def test_hand_written_pre_2_format(minilm_path, st_minilm, tmp_path):
    """The transformer and its sentence_bert_config.json in 0_Transformer/: both libraries agree."""
    folder = _hand_written(minilm_path, tmp_path / "m", "0_Transformer")
    ours = SentenceEncoder.from_pretrained(folder, device="cpu")
    assert (ours.pooling, ours.normalize, ours.max_seq_length) == ("mean", True, 256)
    ref = _st_encode(st_minilm, SENTENCES)
    np.testing.assert_allclose(ours.encode(SENTENCES), ref, atol=1e-5, rtol=0)
    np.testing.assert_allclose(_st_encode(_st_load(folder), SENTENCES), ref, atol=1e-5, rtol=0)


def test_ours_loads_in_sentence_transformers(minilm, real_sentences, minilm_reference, tmp_path):
    folder = minilm.save(tmp_path / "ours")
    theirs = _st_load(folder)
    assert theirs.max_seq_length == 256
    np.testing.assert_allclose(_st_encode(theirs, real_sentences), minilm_reference, atol=1e-5)


# ------------------------------------------------------------------ a tiny random model


@pytest.fixture(scope="module")
def tiny_folder(tiny_bert, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny_hf")
    model, tokenizer = tiny_bert
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _st_model(folder, mode, normalize, dense=None, **kw):
    from sentence_transformers.base.modules import Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(str(folder), max_seq_length=kw.pop("max_seq_length", None))
    dim = transformer.get_embedding_dimension()
    modules = [transformer, Pooling(dim, pooling_mode=mode, **kw.pop("pooling_kw", {}))]
    modules += dense or []
    if normalize:
        modules.append(Normalize())
    return st.SentenceTransformer(modules=modules, device="cpu", **kw)


MODES = ["mean", "max", "cls", "mean_sqrt_len_tokens", "weightedmean", "lasttoken", ("cls", "mean")]


@pytest.mark.parametrize("normalize", [False, True], ids=["raw", "normalize"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m if isinstance(m, str) else "+".join(m))
def test_every_pooling_both_ways(tiny_folder, tmp_path, mode, normalize):
    ref_model = _st_model(tiny_folder, mode, normalize)
    ref = _st_encode(ref_model, SENTENCES)
    ref_model.save(str(tmp_path / "st"))  # sentence-transformers -> ours
    ours = SentenceEncoder.from_pretrained(tmp_path / "st", device="cpu")
    assert ours.normalize is normalize and ours.max_seq_length == 64
    np.testing.assert_allclose(ours.encode(SENTENCES), ref, atol=1e-5, rtol=0)
    back = _st_load(ours.save(tmp_path / "ours"))  # ours -> sentence-transformers
    np.testing.assert_allclose(_st_encode(back, SENTENCES), ref, atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def tiny_t5_folder(minilm_path, tmp_path_factory) -> Path:
    from transformers import AutoTokenizer, T5Config, T5Model

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny_t5")
    config = T5Config(
        vocab_size=30522, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, pad_token_id=0
    )
    T5Model(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(minilm_path).save_pretrained(folder)
    return folder


def test_dense_t5_and_prompts_both_ways(tiny_t5_folder, tmp_path):
    """sentence-T5's shape: T5 encoder, mean pooling, bias-free Dense, Normalize; plus prompts."""
    from sentence_transformers.base.modules import Dense

    torch.manual_seed(1)
    dense = [Dense(32, 16, bias=False, activation_function=torch.nn.Identity())]
    ref_model = _st_model(
        tiny_t5_folder,
        "mean",
        True,
        dense=dense,
        max_seq_length=20,
        prompts={"query": "query: ", "doc": "passage: "},
        default_prompt_name="query",
        pooling_kw={"include_prompt": False},
    )
    ref_model.save(str(tmp_path / "st"))
    ref_model = _st_load(tmp_path / "st")
    ours = SentenceEncoder.from_pretrained(tmp_path / "st", device="cpu")
    assert ours.embedding_dim == 16 and ours.max_seq_length == 20 and not ours.include_prompt
    for kw in ({}, {"prompt_name": "doc"}, {"prompt": ""}, {"prompt": "search: "}):
        np.testing.assert_allclose(
            ours.encode(SENTENCES, **kw), _st_encode(ref_model, SENTENCES, **kw), atol=1e-5
        )
    back = _st_load(ours.save(tmp_path / "ours"))
    np.testing.assert_allclose(
        _st_encode(back, SENTENCES), _st_encode(ref_model, SENTENCES), atol=1e-5
    )


def test_tanh_dense_with_bias_both_ways(tiny_folder, tmp_path):
    """LaBSE's shape: cls pooling, Dense with tanh and bias, Normalize."""
    from sentence_transformers.base.modules import Dense

    torch.manual_seed(2)
    ref_model = _st_model(tiny_folder, "cls", True, dense=[Dense(32, 24)])
    ref = _st_encode(ref_model, SENTENCES)
    ref_model.save(str(tmp_path / "st"))
    ours = SentenceEncoder.from_pretrained(tmp_path / "st", device="cpu")
    np.testing.assert_allclose(ours.encode(SENTENCES), ref, atol=1e-5)
    with pytest.raises(ValueError, match="dense layer 0 expects 32 inputs but gets 64"):
        ours.with_pooling("cls+mean")


# ------------------------------------------------------------------ what sbert_tutor refuses


def _folder_with_modules(tmp_path, minilm_path, extra_type) -> Path:
    folder = _hand_written(minilm_path, tmp_path / "x", "")
    modules = json.loads((folder / "modules.json").read_text())
    modules.insert(2, {"idx": 2, "name": "2", "path": "2_X", "type": extra_type})
    modules[-1]["idx"] = 3
    (folder / "modules.json").write_text(json.dumps(modules))
    return folder


def test_unsupported_module_says_what_to_do(minilm_path, tmp_path):
    folder = _folder_with_modules(tmp_path, minilm_path, "sentence_transformers.models.LSTM")
    with pytest.raises(NotImplementedError, match=r"LSTM module.*Load this model with sentence-"):
        SentenceEncoder.from_pretrained(folder, device="cpu")


def test_custom_code_module_is_refused(minilm_path, tmp_path):
    folder = _folder_with_modules(tmp_path, minilm_path, "modeling_x.MyPooling")
    with pytest.raises(NotImplementedError, match=r"custom code.*trust_remote_code"):
        SentenceEncoder.from_pretrained(folder, device="cpu")


def test_other_model_types_are_refused(minilm_path, tmp_path):
    folder = _hand_written(minilm_path, tmp_path / "sparse", "")
    (folder / "config_sentence_transformers.json").write_text('{"model_type": "SparseEncoder"}')
    with pytest.raises(NotImplementedError, match="SparseEncoder, not a dense"):
        SentenceEncoder.from_pretrained(folder, device="cpu")


def test_missing_pooling_file_names_it(minilm_path, tmp_path):
    folder = _hand_written(minilm_path, tmp_path / "m", "")
    (folder / "1_Pooling" / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"1_Pooling/config.json is missing"):
        SentenceEncoder.from_pretrained(folder, device="cpu")


def test_plain_hf_model_uses_the_tokenizer_limit(minilm_path, tmp_path):
    """No modules.json: mean pooling, and max_seq_length = the tokenizer's model_max_length."""
    folder = tmp_path / "plain"
    folder.mkdir()
    for name in WEIGHT_FILES:
        if name != "tokenizer_config.json":
            os.symlink(minilm_path / name, folder / name)
    tokenizer_cfg = json.loads((minilm_path / "tokenizer_config.json").read_text())
    tokenizer_cfg["model_max_length"] = 24  # the position limit is 512
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_cfg))
    enc = SentenceEncoder.from_pretrained(folder, device="cpu")
    theirs = _st_load(folder)
    assert (enc.pooling, enc.normalize, enc.max_seq_length) == ("mean", False, 24)
    assert theirs.max_seq_length == 24
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        ref = theirs.encode(SENTENCES)
    np.testing.assert_allclose(enc.encode(SENTENCES), ref, atol=1e-5)


# ------------------------------------------------------------------ the model card


def _card(folder):
    from huggingface_hub import ModelCard

    return ModelCard.load(Path(folder) / "README.md")  # the hub's own reader


def test_card_states_what_sentence_transformers_reads(minilm, tmp_path):
    folder = minilm.save(tmp_path / "card")
    card = _card(folder)
    assert card.data.library_name == "sentence-transformers"
    assert card.data.pipeline_tag == "sentence-similarity"
    assert card.data.tags == ["sentence-transformers", "sentence-similarity", "feature-extraction"]
    assert card.data.base_model == "sentence-transformers/all-MiniLM-L6-v2"
    theirs = _st_load(folder)
    text = card.text
    assert f"| Pooling | `{theirs[1].pooling_mode}` |" in text
    assert f"| Output dimension | {theirs.get_embedding_dimension()} |" in text
    assert f"| Maximum sequence length | {theirs.max_seq_length} tokens" in text
    assert any(type(m).__name__ == "Normalize" for m in theirs)
    assert "| Normalisation | L2: unit-length embeddings" in text
    assert f"| Transformer | `{type(theirs[0].auto_model).__name__}` (bert, 6 layers" in text
    assert f"| Loaded from | {minilm.source} |" in text
    assert "sbert_tutor records no training of this model" in text
    for load in ("SentenceEncoder.from_pretrained", "SentenceTransformer"):
        assert f"{load}({json.dumps(str(folder))})" in text  # the snippets load this folder


def test_card_names_no_base_model_for_a_local_folder(minilm, tmp_path, monkeypatch):
    """A relative folder path looks like a hub id ("models/mine"); the card does not take it
    for one."""
    minilm.save(tmp_path / "models" / "mine")
    monkeypatch.chdir(tmp_path)
    local = SentenceEncoder.from_pretrained("models/mine", device="cpu")
    assert local.source.startswith("local folder")
    card = _card(local.save(tmp_path / "again"))
    assert card.data.base_model is None and "`models/mine` as sbert_tutor loaded it" in card.text


def _pairs() -> list[tuple[str, str, float]]:
    words = ["cat", "dog", "car", "bus"], ["rain", "snow", "sun", "wind"]
    return [
        (f"the {a} and the {b}", f"a {b} with a {a}", float(i % 6))
        for i, (a, b) in enumerate(itertools.product(*words))
    ]


def test_card_of_a_model_trained_twice(tiny_bert, tmp_path):
    from sbert_tutor import TrainingConfig, fit

    model, tokenizer = tiny_bert
    enc = SentenceEncoder(copy.deepcopy(model), tokenizer, pooling="max", max_seq_length=32)
    pairs = _pairs()
    config = TrainingConfig(
        max_steps=3, batch_size=4, lr=1e-3, warmup_ratio=0.0, seed=7, show_progress_bar=False
    )
    first = fit(enc, "cosine", pairs, config, objective_options={"score_range": (0, 5)})
    second = fit(enc, "mnrl", [p[:2] for p in pairs], TrainingConfig(max_steps=2, batch_size=4))
    folder = enc.save(tmp_path / "trained")
    card = _card(folder)
    assert card.data.base_model is None  # built in memory: no hub id to name
    text = card.text
    assert "Trained with sbert_tutor's `fit` (2 runs)" in text
    run1 = text[text.index("### Run 1") : text.index("### Run 2")]
    assert (
        "### Run 1: `cosine` loss" in run1
        and "| Loss | `cosine` (score_range=[0.0, 5.0]) |" in run1
    )
    assert f"| Training data | user rows: {len(pairs)} examples, columns " in run1
    assert "| Steps | 3 of 3 (0 warm-up), epochs 1 |" in run1 and "| Batch size | 4 |" in run1
    assert "| Learning rate | 0.001, linear schedule, warm-up ratio 0.0," in run1
    assert "| Seed | 7 |" in run1
    assert f"| Final training loss | {first.record.final_loss():.4f} (mean of the last 3" in run1
    run2 = text[text.index("### Run 2") :]
    assert "| Loss | `mnrl` (scale=20.0, symmetric=False) |" in run2
    assert f"| Final training loss | {second.record.final_loss():.4f}" in run2
    assert "| Pooling | `max` |" in text and "| Normalisation | none |" in text
    assert "| Output dimension | 32 |" in text and ", then trained (see Training)" in text
    theirs = _st_load(folder)  # the card does not get in sentence-transformers' way
    np.testing.assert_allclose(
        _st_encode(theirs, SENTENCES), enc.encode(SENTENCES, batch_size=32), atol=1e-5, rtol=0
    )


@needs_data
def test_card_lists_the_evaluations_of_training(tiny_bert, tmp_path):
    from sbert_tutor import TrainingConfig, fit

    model, tokenizer = tiny_bert
    enc = SentenceEncoder(copy.deepcopy(model), tokenizer, max_seq_length=32)
    config = TrainingConfig(max_steps=2, batch_size=4, lr=1e-3, show_progress_bar=False)
    options = {"score_range": (0, 5)}
    run = fit(enc, "cosine", _pairs(), config, eval_task="stsb", objective_options=options)
    text = _card(enc.save(tmp_path / "evaluated")).text
    assert "Evaluations during training (main metric: stsb_dev_spearman):" in text
    header = "| step | epoch | stsb_dev_spearman | stsb_dev_pearson |"
    rows = text[text.index(header) :].split("\n\n")[0].splitlines()[2:]
    table = [[float(x) for x in row.strip("| ").split(" | ")] for row in rows]
    expected = [
        [e[k] for k in ("step", "epoch", "stsb_dev_spearman", "stsb_dev_pearson")]
        for e in run.record.evals
    ]
    assert len(expected) == 2 and np.allclose(table, expected, atol=1e-4, rtol=0)


# ------------------------------------------------------------------ folders that cannot work


def test_folder_without_tokenizer_files_is_refused(minilm_path, tmp_path):
    """Without its tokenizer files the folder used to load a 5-token tokenizer: every word [UNK]."""
    folder = tmp_path / "no-tokenizer"
    shutil.copytree(minilm_path, folder)
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).unlink()
    with pytest.raises(
        ValueError,
        match=r"the tokenizer has 5 tokens but .*config.json gives the model vocab_size=30522: "
        r"no tokenizer file is in .*no-tokenizer \(none of tokenizer.json, vocab.txt",
    ):
        SentenceEncoder.from_pretrained(folder, device="cpu")


def test_tokenizer_far_smaller_than_the_vocabulary_is_refused(tiny_bert, tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertTokenizerFast

    folder = Path(save_tiny_encoder(tiny_bert, tmp_path / "small-vocab"))
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(f"w{i}" for i in range(995))]
    wordpiece = Tokenizer(models.WordPiece({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    (folder / "vocab.txt").unlink(missing_ok=True)
    BertTokenizerFast(tokenizer_object=wordpiece).save_pretrained(folder)  # another model's
    with pytest.raises(ValueError, match=r"has 1000 tokens .*vocab_size=30522: its tokenizer "
                       r"files \(tokenizer.json\) do not belong to this model"):  # fmt: skip
        SentenceEncoder.from_pretrained(folder, device="cpu")


def test_a_slightly_smaller_tokenizer_is_accepted(tiny_bert):
    from sbert_tutor.encoders.sentence_encoder import check_tokenizer

    model, tokenizer = tiny_bert
    check_tokenizer(tokenizer, model, "unused")  # 30522 tokens for 30522 rows
    model.config.vocab_size = len(tokenizer) + 64  # rows padded to a multiple: normal
    try:
        check_tokenizer(tokenizer, model, "unused")
    finally:
        model.config.vocab_size = len(tokenizer)


@pytest.mark.parametrize(
    "config",
    [
        {"word_embedding_dimension": 384},
        {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": False},
        {"embedding_dimension": 384, "pooling_mode": []},
    ],
)
def test_pooling_config_without_a_mode_is_refused(minilm_path, tmp_path, config):
    folder = _hand_written(minilm_path, tmp_path / "m", "")
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        NotImplementedError, match=r"1_Pooling/config.json names no pooling mode .*pooling='mean'"
    ):
        SentenceEncoder.from_pretrained(folder, device="cpu")
    # the override rescues it, as the message says
    assert SentenceEncoder.from_pretrained(folder, pooling="mean", device="cpu").pooling == "mean"
