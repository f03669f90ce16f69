"""The book's diagrams: each draws (its mathtext parses), fits the text column, shows what its
chapter says it shows, and the two loss layouts agree with the library's losses."""

from __future__ import annotations

import io
from collections import Counter

import matplotlib
import pytest
import torch
import torch.nn.functional as F

from sbert_tutor.book import drawing
from sbert_tutor.book.chapters import msmarco, triplet_objective
from sbert_tutor.book.chapters import multiple_negatives_ranking as multiple_negatives_ranking_ch
from sbert_tutor.book.chapters import supmpn as supmpn_ch
from sbert_tutor.book.chapters.classification_objective import sbert_training_vs_inference
from sbert_tutor.book.chapters.cost_of_cross_encoders import cross_vs_bi_encoder
from sbert_tutor.losses import multiple_negatives_ranking, supmpn
from tests.book.pages import page_functions

matplotlib.use("Agg")

#: every box-and-arrow diagram of the book, from its chapter's module
DIAGRAMS = {
    "cross_vs_bi_encoder": cross_vs_bi_encoder,
    "sbert_training_vs_inference": sbert_training_vs_inference,
    "triplet_network": triplet_objective.triplet_network,
    "retrieve_then_rerank": msmarco.retrieve_then_rerank,
}


def _drawn(fig):
    """Boxes, arrows, cell roles and texts of a rendered diagram."""
    import matplotlib.pyplot as plt

    fig.savefig(io.BytesIO(), format="png")  # renders every text: a bad mathtext fails here
    ax = fig.axes[0]
    gids = Counter(patch.get_gid() for patch in ax.patches)
    texts = [text.get_text() for text in ax.texts]
    width = fig.get_size_inches()[0]
    plt.close(fig)
    return gids, texts, width


@pytest.mark.parametrize(
    "name, boxes, arrows, labels",
    [
        ("cross_vs_bi_encoder", 13, 11, ["[CLS] A [SEP] B [SEP]", "linear head", r"$\cos(u, v)$"]),
        (
            "sbert_training_vs_inference",
            15,
            14,
            [r"$(u,\ v,\ |u-v|)$", "entailment / neutral / contradiction", r"$\cos(u, v)$"],
        ),
        ("triplet_network", 12, 12, ["anchor $a$", "positive $p$", "negative $n$", "$s_a$"]),
        ("retrieve_then_rerank", 9, 8, ["top 100 candidates", "re-ranked top 10"]),
    ],
)
def test_box_diagrams_draw_what_they_show(name, boxes, arrows, labels):
    gids, texts, width = _drawn(DIAGRAMS[name]())
    assert gids["box"] == boxes and gids["arrow"] == arrows
    for label in labels:
        assert label in texts, (label, texts)
    assert width <= drawing.MAX_WIDTH
    # both halves of the training/inference diagram have their own encoder pair
    if name == "sbert_training_vs_inference":
        assert texts.count("transformer\n+ pooling") == 4
        assert sum("|u-v|" in t for t in texts) == 1  # only the training side reads |u - v|


def test_retrieve_then_rerank_names_its_sizes():
    _, texts, _ = _drawn(msmarco.retrieve_then_rerank(k=50, top=5))
    assert "top 50 candidates" in texts and "cross-encoder:\nscore 50 pairs" in texts
    assert "re-ranked top 5" in texts


def test_a_diagram_wider_than_the_column_is_refused():
    with pytest.raises(ValueError, match="at most 7.0 inches"):
        drawing.canvas(8.0, 3.0)


@pytest.mark.parametrize("hard", [True, False])
def test_logit_matrix_draws_one_cell_per_logit(hard):
    n = 4
    gids, texts, width = _drawn(
        multiple_negatives_ranking_ch.in_batch_logit_matrix(n, hard_negatives=hard)
    )
    assert gids["target"] == n and gids["in-batch negative"] == n * (n - 1)
    assert gids["own hard negative"] == (n if hard else 0)
    assert gids["hard negative"] == (n * (n - 1) if hard else 0)
    assert ("hard negatives" in texts) is hard
    assert "$z_{11}$" in texts and width <= drawing.MAX_WIDTH


def _random_batch(n=5, p=3, q=2, d=8, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n, d, generator=generator, dtype=torch.float64),
        torch.randn(n, p, d, generator=generator, dtype=torch.float64),
        torch.randn(n, q, d, generator=generator, dtype=torch.float64),
    )


def test_logit_matrix_roles_are_the_library_loss():
    """Cross-entropy over the drawn rows, with each row's "target" cell as the class, is MNRL."""
    anchors, positives, negatives = _random_batch(p=1, q=1)
    positives, negatives = positives[:, 0], negatives[:, 0]
    scale = 20.0
    roles = multiple_negatives_ranking_ch.logit_matrix_roles(len(anchors), hard_negatives=True)
    candidates = torch.cat([positives, negatives])
    logits = scale * F.cosine_similarity(anchors[:, None], candidates[None], dim=-1)
    targets = torch.tensor([list(row).index("target") for row in roles])
    expected = multiple_negatives_ranking(anchors, positives, negatives, scale=scale)
    assert float(F.cross_entropy(logits, targets)) == pytest.approx(float(expected), rel=1e-9)
    # the target sits on the diagonal: another column as target is another loss
    shifted = F.cross_entropy(logits, (targets + 1) % len(anchors))
    assert abs(float(shifted) - float(expected)) > 1e-3


def test_logit_matrix_refuses_an_empty_batch():
    with pytest.raises(ValueError, match="at least one pair"):
        multiple_negatives_ranking_ch.logit_matrix_roles(0)


def test_supmpn_roles_build_the_library_denominator():
    """Summing e(a_i, c) over every drawn cell but the left-out ones gives SupMPN's D_ik (eq. 7)."""
    anchors, positives, negatives = _random_batch()
    n, p, _ = positives.shape
    q = negatives.shape[1]
    tau = 0.1
    e_pos = torch.exp(F.cosine_similarity(anchors[:, None, None], positives[None], dim=-1) / tau)
    e_neg = torch.exp(F.cosine_similarity(anchors[:, None, None], negatives[None], dim=-1) / tau)
    total = 0.0
    for i in range(n):
        for k in range(p):
            roles = supmpn_ch.supmpn_denominator_roles(n, p, q, anchor=i, positive=k)
            cells = torch.cat([e_pos[i], e_neg[i]], dim=1)  # [N, P + Q] for anchor i
            kept = torch.tensor([[role != "left out" for role in row] for row in roles])
            numerator = cells[
                torch.tensor([[role == "numerator" for role in row] for row in roles])
            ]
            total += float(-torch.log(numerator.sum() / cells[kept].sum()))
    expected = float(supmpn(anchors, positives, negatives, temperature=tau))
    assert total / (n * p) == pytest.approx(expected, rel=1e-9)


def test_supmpn_role_counts_match_the_breakdown_table():
    """The diagram's roles against chapter 10's breakdown of D_ik, as its page defines it."""
    anchors, positives, negatives = _random_batch(n=4, p=2, q=3)
    denominator_breakdown = page_functions("10_supmpn", "denominator_breakdown")[
        "denominator_breakdown"
    ]
    breakdown, _ = denominator_breakdown(anchors.float(), positives.float(), negatives.float())
    roles = Counter(supmpn_ch.supmpn_denominator_roles(4, 2, 3, anchor=2, positive=1).ravel())
    assert roles["numerator"] == breakdown.loc["the positive p_ik itself", "terms"]
    assert roles["left out"] == breakdown.loc["the anchor's other positives (left out)", "terms"]
    assert roles["in-batch negative"] == breakdown.loc["other anchors' positives", "terms"]
    assert roles["own hard negative"] == breakdown.loc["the anchor's own hard negatives", "terms"]
    assert roles["hard negative"] == breakdown.loc["other anchors' hard negatives", "terms"]


def test_supmpn_diagram_colours_each_role():
    gids, texts, width = _drawn(supmpn_ch.supmpn_denominator(n=3, p=2, q=2))
    assert (gids["numerator"], gids["left out"], gids["in-batch negative"]) == (1, 1, 4)
    assert (gids["own hard negative"], gids["hard negative"]) == (2, 4)
    assert any("= 11$ terms" in t for t in texts) and width <= drawing.MAX_WIDTH
    with pytest.raises(ValueError, match="anchor must be in"):
        supmpn_ch.supmpn_denominator_roles(3, 2, 2, anchor=3)


def test_diagrams_are_deterministic():
    first = io.BytesIO()
    second = io.BytesIO()
    triplet_objective.triplet_network().savefig(first, format="png", metadata={"Software": None})
    triplet_objective.triplet_network().savefig(second, format="png", metadata={"Software": None})
    assert first.getvalue() == second.getvalue()
