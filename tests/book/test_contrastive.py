"""Experiments of the contrastive chapters (9-11): values worked out by hand on tiny tensors and
texts, agreement with autograd and with the library's losses, and the trainer's dropout mode.

The chapters define their analyses on the page; ``tests.book.pages.page_functions`` runs those
definitions here, as the page defines them, so that each keeps its hand-worked check."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from sbert_tutor.book import fixed_embeddings, gradients, published, reporting
from sbert_tutor.book.published import SBERT_TABLE1
from sbert_tutor.data.nli import as_nli, supmpn_groups
from sbert_tutor.data.table import DataTable
from sbert_tutor.losses import multiple_negatives_ranking, supmpn
from sbert_tutor.training import mining
from tests.book.pages import page_functions
from tests.conftest import needs_data

ROOT = Path(__file__).resolve().parents[2]


CH9 = "09_multiple_negatives_ranking"
CH10 = "10_supmpn"
CH11 = "11_semantic_search_guided"

E = math.e


def one_hot_batch(n: int, negatives: bool = False) -> fixed_embeddings.FixedBatch:
    """Anchors = positives = the first ``n`` basis vectors; the hard negative of each is its
    opposite. Texts are ``a0, p0, n0, ...``."""
    eye = torch.eye(n)
    cols = {"anchor": [f"a{i}" for i in range(n)], "positive": [f"p{i}" for i in range(n)]}
    emb = {"anchor": eye.clone(), "positive": eye.clone()}
    if negatives:
        cols["negative"] = [f"n{i}" for i in range(n)]
        emb["negative"] = -eye
    return fixed_embeddings.FixedBatch(pd.DataFrame(cols), emb)


class CountingEncoder:
    """Deterministic fake encoder: a text's vector depends on its characters; counts encodes."""

    name = "counting"

    def __init__(self, table: dict[str, list[float]] | None = None) -> None:
        self.table = table
        self.encoded: list[str] = []

    def encode(self, sentences, batch_size=32, show_progress_bar=None, **_):
        self.encoded += list(sentences)
        if self.table is not None:
            return np.asarray([self.table[s] for s in sentences], dtype=np.float32)
        return np.asarray(
            [[len(s), sum(map(ord, s)) % 7, 1.0] for s in sentences], dtype=np.float32
        )


# --------------------------------------------------------------------------- gradients
# Chapters 9 and 10 write the anchor gradients by hand on the page and check them against
# autograd; these are the facts they derive, on the library's losses.
def test_mnrl_anchor_gradient_two_orthonormal_pairs():
    # scale 1, a = p = I_2: row 0 softmax is (e, 1) / (e + 1), weights P - onehot = (-1, 1) / (e + 1)
    # pull/push = (-1, 1)/(e+1) - (-1/(e+1)) * a_0 = (0, 1/(e+1)); times s / N = 1/2
    a = torch.eye(2, dtype=torch.float64)
    (grad,) = gradients.autograd_gradients(lambda x: multiple_negatives_ranking(x, a, scale=1.0), a)
    expected = torch.tensor([[0.0, 0.5 / (E + 1)], [0.5 / (E + 1), 0.0]], dtype=torch.float64)
    torch.testing.assert_close(grad, expected)


def test_mnrl_anchor_gradient_is_tangent_to_the_unit_sphere():
    # the cosine does not change along a_i itself, so the gradient is orthogonal to it
    g = torch.Generator().manual_seed(1)
    a = torch.randn(4, 3, generator=g, dtype=torch.float64)
    p = torch.randn(4, 3, generator=g, dtype=torch.float64)
    (grad,) = gradients.autograd_gradients(lambda x: multiple_negatives_ranking(x, p), a)
    assert torch.allclose((grad * a).sum(dim=1), torch.zeros(4, dtype=torch.float64), atol=1e-12)


def test_supmpn_leaves_own_positives_out_of_the_denominator():
    # SupCon-style: the own other positives in D_ik change the loss, and its gradient is far from
    # the library's SupMPN (eq. 7)
    g = torch.Generator().manual_seed(3)
    a = torch.randn(3, 4, generator=g, dtype=torch.float64)
    p = torch.randn(3, 2, 4, generator=g, dtype=torch.float64)
    q = torch.randn(3, 1, 4, generator=g, dtype=torch.float64)
    cands = torch.cat([p.reshape(-1, 4), q.reshape(-1, 4)])

    def supcon_style(x):
        logits = (
            torch.nn.functional.normalize(x, dim=1) @ torch.nn.functional.normalize(cands, dim=1).T
        )
        own = logits[:, :6].view(3, 3, 2)[torch.arange(3), torch.arange(3)]  # [N, P]
        return (torch.logsumexp(logits, dim=1, keepdim=True) - own).mean()

    (theirs,) = gradients.autograd_gradients(supcon_style, a)
    (ours,) = gradients.autograd_gradients(lambda x: supmpn(x, p, q, 1.0), a)
    assert not torch.allclose(theirs, ours, atol=1e-6)


def test_compare_gradients_reports_and_fails_on_a_wrong_gradient():
    x = torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64)
    (grad,) = gradients.autograd_gradients(lambda t: (t**2).sum(), x)
    torch.testing.assert_close(grad, 2 * x)
    assert x.grad is None  # the input is left as it was
    table = gradients.compare_gradients({"d/dx": (grad, 2 * x)})
    assert table.loc["d/dx", "max |autograd|"] == 6.0
    assert table.loc["d/dx", "max |autograd - by hand|"] == 0.0
    assert table.loc["d/dx", "shape"] == (2, 2)
    with pytest.raises(AssertionError, match="d/dx"):
        gradients.compare_gradients({"d/dx": (grad, x)})  # the factor 2 forgotten


# --------------------------------------------------------------------------- scale, candidates
def test_ranking_stats_identity_batch():
    # chapter 9's scale sweep reads each scale with ranking_stats: a = p = I_3, scale 1: the own
    # positive has e against 1 + 1
    ranking_stats = page_functions(CH9, "ranking_stats")["ranking_stats"]
    b = one_hot_batch(3)
    stats = ranking_stats(b.anchors, b.positives, scale=1.0)
    assert stats["loss"] == pytest.approx(-math.log(E / (E + 2)), abs=1e-6)  # 0.5514
    assert stats["p(positive)"] == pytest.approx(E / (E + 2), abs=1e-6)
    assert stats["top-1 accuracy %"] == 100.0
    sharp = ranking_stats(b.anchors, b.positives, scale=20.0)
    assert sharp["loss"] == pytest.approx(-math.log(E**20 / (E**20 + 2)), abs=1e-6)
    assert sharp["loss"] == pytest.approx(float(multiple_negatives_ranking(b.anchors, b.positives)))


def test_ranking_stats_counts_hard_negatives_as_candidates():
    # the hard-negative table's and the batch-size sweep's batches with hard negatives: own e,
    # other positive 1, own negative e^-1, other negative 1; the own positive is still column i
    ranking_stats = page_functions(CH9, "ranking_stats")["ranking_stats"]
    a = torch.eye(2, 4)
    stats = ranking_stats(a, torch.cat([a, -a]), scale=1.0)
    assert stats["loss"] == pytest.approx(-math.log(E / (E + 2 + 1 / E)), abs=1e-6)
    wrong = ranking_stats(a, torch.cat([-a, a]), scale=1.0)
    assert wrong["top-1 accuracy %"] == 0.0


def test_cosine_summary_by_hand():
    summary = page_functions(CH9, "cosine_summary")["cosine_summary"](
        one_hot_batch(2, negatives=True)
    )
    assert summary["cos(anchor, own positive)"] == pytest.approx(1.0)
    assert summary["cos(anchor, other anchors' positives)"] == pytest.approx(0.0)
    assert summary["cos(anchor, own hard negative)"] == pytest.approx(-1.0)
    assert summary["own hard negative closer than positive %"] == 0.0


# --------------------------------------------------------------------------- fixed embeddings
def test_distinct_rows_never_share_a_text():
    rows = [("a", "b"), ("b", "c"), ("d", "e"), ("e ", "f"), ("g", "h")]
    chosen = fixed_embeddings.distinct_rows(rows, None, seed=0)
    texts = [t.strip() for i in chosen for t in rows[i]]
    assert len(texts) == len(set(texts))
    assert len(chosen) == 3  # one of {0, 1}, one of {2, 3}, and 4
    assert len(fixed_embeddings.distinct_rows(rows, 2, seed=3)) == 2


def test_embed_fixed_encodes_each_text_once_and_maps_rows():
    frame = pd.DataFrame(
        {"anchor": ["x", "y", "z"], "positive": ["xx", "yy", "zz"], "negative": ["q", "r", "s"]}
    )
    enc = CountingEncoder()
    batch = fixed_embeddings.embed_fixed(enc, frame, n=3, seed=0)
    assert sorted(enc.encoded) == sorted(frame.to_numpy().ravel().tolist())
    for col in frame.columns:
        for i, text in enumerate(batch.frame[col]):
            expected = torch.tensor([len(text), sum(map(ord, text)) % 7, 1.0])
            torch.testing.assert_close(batch.embeddings[col][i], expected)
    assert batch.negatives.shape == (3, 1, 3)
    assert len(batch.head(2)) == 2 and batch.head(2).anchors.shape == (2, 3)


# --------------------------------------------------------------------------- duplicates
def test_shared_text_pairs_by_hand():
    shared_text_pairs = page_functions(CH9, "shared_text_pairs")["shared_text_pairs"]
    rows = [("a", "b"), ("c", "a"), ("d", "e"), ("b ", "f")]
    assert shared_text_pairs(rows) == 2  # (0, 1) share "a", (0, 3) share "b"
    assert shared_text_pairs([("a", "b"), ("c", "d")]) == 0
    assert shared_text_pairs([("a", "b"), ("a", "c"), ("a", "d")]) == 3


def test_duplicate_report_no_duplicates_sampler_is_clean_random_is_not():
    # 12 examples sharing one premise, 36 distinct ones
    page = page_functions(CH9, "shared_text_pairs", "duplicate_report")
    rows = [("premise", f"h{i}") for i in range(12)] + [(f"s{i}", f"t{i}") for i in range(36)]
    report = page["duplicate_report"](rows, batch_sizes=(8, 16), seed=0, epochs=2)
    nodup = report[report["sampler"] == "NoDuplicatesBatchSampler"]
    rand = report[report["sampler"] == "random"]
    assert (nodup["batches with a shared text %"] == 0).all()
    assert (rand["batches with a shared text %"] > 0).all()
    assert list(rand["batches"]) == [12, 6]  # 48 / 8 * 2 epochs, 48 / 16 * 2 epochs
    # every example is used once per epoch, whatever the sampler
    assert (report["mean batch size"] * report["batches"]).tolist() == pytest.approx([96] * 4)


def test_text_repeats():
    text_repeats = page_functions(CH9, "text_repeats")["text_repeats"]
    counts = text_repeats([("a", "b"), ("a", "c"), ("d", "a")])
    assert counts["examples"] == 3 and counts["distinct texts"] == 4
    assert counts["texts in more than one example"] == 1
    assert counts["most examples sharing one text"] == 3


# --------------------------------------------------------------------------- SupMPN
@pytest.mark.parametrize("q", [0, 2])
@pytest.mark.parametrize("tau", [0.05, 1.0])
def test_supmpn_with_one_positive_is_mnrl(q, tau):
    # chapter 10 checks this on its real batch; here on random tensors, with and without the
    # hard negatives
    g = torch.Generator().manual_seed(2)
    a = torch.randn(6, 5, generator=g)
    p = torch.randn(6, 3, 5, generator=g)
    neg = torch.randn(6, 2, 5, generator=g)[:, :q]
    one = float(supmpn(a, p[:, :1], neg, temperature=tau))
    mnrl = float(multiple_negatives_ranking(a, p[:, 0], neg if q else None, scale=1 / tau))
    assert abs(one - mnrl) < 1e-5


def denominator_breakdown():
    return page_functions(CH10, "denominator_breakdown")["denominator_breakdown"]


def test_denominator_breakdown_by_hand():
    # N = 2, P = 1, Q = 1, tau = 1, a = p = I, n = -I. Anchor 0's denominator:
    # own positive e, other positive e^0 = 1, own negative e^-1, other negative e^0 = 1
    a = torch.eye(2)
    table, share_of_numerator = denominator_breakdown()(
        a, a[:, None].clone(), -a[:, None], temperature=1.0
    )
    total = E + 2 + 1 / E
    share = table["share of denominator %"]
    assert share["the positive p_ik itself"] == pytest.approx(100 * E / total, abs=1e-4)
    assert share["other anchors' positives"] == pytest.approx(100 / total, abs=1e-4)
    assert share["the anchor's own hard negatives"] == pytest.approx(100 / E / total, abs=1e-4)
    assert share["other anchors' hard negatives"] == pytest.approx(100 / total, abs=1e-4)
    assert share.sum() == pytest.approx(100.0)
    assert list(table["terms"]) == [1, 0, 1, 1, 1]
    torch.testing.assert_close(share_of_numerator, torch.full((2, 1), E / total))


def test_denominator_breakdown_term_counts():
    g = torch.Generator().manual_seed(3)
    anchors = torch.randn(4, 3, generator=g)
    positives = torch.randn(4, 2, 3, generator=g)
    negatives = torch.randn(4, 3, 3, generator=g)
    table, share_of_numerator = denominator_breakdown()(anchors, positives, negatives)
    # 1 + (P-1) + (N-1)P + Q + (N-1)Q with N=4, P=2, Q=3
    assert list(table["terms"]) == [1, 1, 6, 3, 9]
    assert table["share of denominator %"].sum() == pytest.approx(100.0)
    # the terms make up eq. 7's denominator: -log of the numerator's share is the library's loss
    expected = supmpn(anchors, positives, negatives, temperature=0.05)
    torch.testing.assert_close(-share_of_numerator.log().mean(), expected)


TINY_NLI = [
    ("P1", "e1", "entailment"),
    ("P1", "e2", "entailment"),
    ("P1", "c1", "contradiction"),
    ("P1", "n1", "neutral"),
    ("P2", "e3", "entailment"),
    ("P2", "c2", "contradiction"),
    ("P2", "c3", "contradiction"),
    ("P3", "n2", "neutral"),
]


def test_premise_label_counts_by_hand():
    table = page_functions(CH10, "premise_label_counts")["premise_label_counts"](as_nli(TINY_NLI))
    # entailments per premise: P1 2, P2 1, P3 0; contradictions: P1 1, P2 2, P3 0
    assert table["entailment"].tolist() == [1, 1, 1, 0]
    assert table["contradiction"].tolist() == [1, 1, 1, 0]
    assert table["entailment"].sum() == 3  # the three distinct premises


def test_group_sources_by_hand():
    nli = as_nli(TINY_NLI)
    groups = supmpn_groups(nli, num_positives=2, num_negatives=2, seed=0)
    # P1: positives e1, e2; negatives c1 + one padded. P2: positives e3, P2 (padding);
    # negatives c2, c3. P3 has no entailment: no group.
    table = page_functions(CH10, "group_sources")["group_sources"](groups, nli)
    assert table.loc["positive_1", "entailment of the premise"] == 100.0
    assert table.loc["positive_2", "entailment of the premise"] == 50.0
    assert table.loc["positive_2", "the premise itself"] == 50.0
    assert table.loc["negative_1", "contradiction of the premise"] == 100.0
    assert table.loc["negative_2", "contradiction of the premise"] == 50.0
    assert table.loc["negative_2", "hypothesis of another premise (padding)"] == 50.0
    assert "entailment used again (padding)" not in table.columns  # never happens here


# --------------------------------------------------------------------------- reporting
def test_published_rows_carry_sources_and_match_the_sbert_table():
    rows = published.published_stsb_rows()
    assert all(r["source"] and r["metric"] == published.STSB_METRIC for r in rows)
    values = {r["setup"]: r["value"] for r in rows}
    assert values["unsup-SimCSE-BERT-base (Wikipedia, dropout positives)"] == 76.85
    assert values["sup-SimCSE-BERT-base (NLI, contradiction hard negatives)"] == 84.25
    assert values["SBERT-NLI-base (softmax objective)"] == SBERT_TABLE1["SBERT-NLI-base"][5]
    with pytest.raises(KeyError, match="no published number"):
        published.published_stsb_rows(["SupMPN-BERT-huge"])


def test_provenance_table_reads_the_log():
    class Run:
        log = {
            "provenance": {
                "git": {"sha": "0123456789abcdef", "dirty": True},
                "profile": "quick",
                "hardware": {"device": "cpu", "torch_threads": 2, "cpu": "x86_64"},
                "model": {"name": "m", "pooling": "mean"},
                "seed": 42,
                "data_files": {"/data/nli/snli_dev.tsv": "abcdef0123456789"},
                "timestamp": "2024-01-01T00:00:00+00:00",
            },
            "train_data": {"source": "snli"},
        }

    table = reporting.provenance_table({"run": Run()})
    assert table.loc["git commit", "run"] == "0123456789ab (dirty)"
    assert table.loc["data files (sha256)", "run"] == "nli/snli_dev.tsv: abcdef012345"
    assert table.loc["seed", "run"] == 42


# --------------------------------------------------------------------------- search-guided
def test_nearest_other_skips_self_and_copies():
    sentences = ["a", "b", "a ", "c"]
    indices = np.array([[0, 2, 1], [1, 3, 0], [2, 0, 3], [3, 3, 3]])
    assert mining.nearest_other(indices, sentences) == [2, 1, 2, -1]


def test_mine_teacher_positives_with_a_fake_teacher():
    table = {
        "cat sits": [1.0, 0.0, 0.0],
        "a cat is sitting": [0.9, 0.1, 0.0],
        "dog runs": [0.0, 1.0, 0.0],
        "a dog is running": [0.1, 0.9, 0.1],
    }
    pool = DataTable(pd.DataFrame({"sentence": list(table)}), source="hand", files=("f.tsv",))
    mined = mining.mine_positives(CountingEncoder(table), pool)
    assert mined.files == ("f.tsv",) and "counting" in mined.source
    mined = mined.table
    pairs = dict(zip(mined["sentence"], mined["positive"], strict=True))
    assert pairs == {
        "cat sits": "a cat is sitting",
        "a cat is sitting": "cat sits",
        "dog runs": "a dog is running",
        "a dog is running": "dog runs",
    }
    cos = 0.9 / math.sqrt(0.82)
    assert mined["teacher cosine"].iloc[0] == pytest.approx(cos, abs=1e-6)


def test_pool_overlap_counts_shared_sentences():
    from sbert_tutor.data.sts import STSData

    pool_overlap = page_functions(CH11, "stripped", "pool_overlap")["pool_overlap"]
    data = STSData(
        "stsb", "test", ["a b", "c"], ["d", "a b "], np.array([1.0, 2.0]), ["x", "x"], "hand"
    )
    pool = DataTable(pd.DataFrame({"sentence": ["a b", "e", "d "]}))
    # "a b" and "d" are shared; distinct test sentences a b, c, d
    assert pool_overlap(pool, data).tolist() == [3, 3, 2]


def test_partners_in_pool_counts_pairs_with_both_sentences():
    from sbert_tutor.data.sts import STSData

    partners_in_pool = page_functions(CH11, "partners_in_pool")["partners_in_pool"]
    data = STSData(
        "stsb",
        "train",
        ["a", "b ", "c"],
        ["d", "e", "a"],
        np.array([1.0, 2.0, 3.0]),
        ["x"] * 3,
        "h",
    )
    pool = DataTable(pd.DataFrame({"sentence": ["a", "b", "e ", "c"]}))
    counts = partners_in_pool(pool, data)
    assert counts.to_dict() == {"stsb/train pairs": 3, "pairs with both sentences in the pool": 2}


def test_mined_positives_from_given_embeddings_and_neighbour_quality():
    # four points on a line of angles: 0, 10, 80, 90 degrees; nearest others: 1, 0, 3, 2
    angles = np.deg2rad([0.0, 10.0, 80.0, 90.0])
    emb = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    pool = DataTable(pd.DataFrame({"sentence": ["w", "x", "y", "z"]}))
    mined = mining.mine_positives(CountingEncoder({}), pool, embeddings=emb).table
    assert mined["positive"].tolist() == ["x", "w", "z", "y"]
    assert mined["teacher cosine"].tolist() == pytest.approx([math.cos(math.radians(10))] * 4)
    neighbour_quality = page_functions(CH11, "neighbour_quality")["neighbour_quality"]
    quality = neighbour_quality(pool, emb, sizes=(4,), seed=0)
    assert quality.loc[4, "median"] == pytest.approx(math.cos(math.radians(10)))
    # a pool of 2 sentences: each one's neighbour is the other, whichever two are drawn
    assert len(neighbour_quality(pool, emb, sizes=(2,), seed=1)) == 1
    with pytest.raises(ValueError, match="pool sizes"):
        neighbour_quality(pool, emb, sizes=(5,))


@pytest.fixture
def tiny_encoder(tiny_bert):
    from sbert_tutor.encoders.sentence_encoder import SentenceEncoder

    model, tokenizer = tiny_bert
    return SentenceEncoder(copy.deepcopy(model), tokenizer, pooling="mean", max_seq_length=32)


def test_dropout_views_differ_only_in_train_mode(tiny_encoder):
    tiny_encoder.eval()
    table = page_functions(CH11, "dropout_view_similarity")["dropout_view_similarity"](
        tiny_encoder, ["a short sentence", "another one here"]
    )
    assert np.allclose(table["cosine, eval mode"], 1.0, atol=1e-6)
    assert (table["cosine, train mode"] < 0.9999).all()
    assert not tiny_encoder.training  # mode restored


def test_trainer_encodes_in_train_mode(tiny_encoder):
    """The chapter's claim: during training the encoder is in train mode (dropout on), so two
    copies of one sentence in a batch get two masks; afterwards it is back in eval mode."""
    from sbert_tutor.training import ContrastiveObjective, Trainer, TrainingConfig

    modes: list[bool] = []
    views: list[float] = []

    class Recording(ContrastiveObjective):
        def forward(self, embeddings, labels=None):
            modes.append(tiny_encoder.training)
            pair = embeddings[0].detach()
            views.append(float(torch.nn.functional.cosine_similarity(pair[0], pair[1], dim=0)))
            return super().forward(embeddings, labels)

    sentences = ["one sentence", "two sentences here", "a third", "and a fourth one"]
    # chapter 11's dropout pairs: each sentence is its own positive
    data = DataTable(pd.DataFrame({"sentence": sentences, "positive": sentences}))
    config = TrainingConfig(batch_size=4, max_steps=2, show_progress_bar=False, seed=0)
    Trainer(tiny_encoder, Recording(), data, config).train()
    assert modes == [True, True]
    assert all(v < 0.9999 for v in views)
    assert not tiny_encoder.training


@needs_data
def test_unlabeled_pool_is_distinct_and_seeded():
    from sbert_tutor.data import load_sts

    page = page_functions(CH11, "stripped", "unlabeled_pool", "pool_overlap")
    unlabeled_pool, pool_overlap = page["unlabeled_pool"], page["pool_overlap"]
    train, test = load_sts("stsb", "train"), load_sts("stsb", "test")
    full = unlabeled_pool(train)
    assert full.table["sentence"].is_unique
    sample = unlabeled_pool(train, n=50, seed=1)
    assert len(sample) == 50 and set(sample.table["sentence"]) <= set(full.table["sentence"])
    again = unlabeled_pool(train, n=50, seed=1)
    assert sample.table["sentence"].tolist() == again.table["sentence"].tolist()
    assert sample.files and sample.files[0].endswith("sts-train.tsv")
    clean = unlabeled_pool(train, exclude=test)
    assert pool_overlap(clean, test).iloc[2] == 0
    assert pool_overlap(full, test).iloc[2] == len(full) - len(clean) > 0
    assert "removed" in clean.source
