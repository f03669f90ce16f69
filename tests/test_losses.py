"""Tests for sbert_tutor.losses: values against sentence-transformers and against naive loops
written straight from the equations, the equivalences between the ranking losses, input checks,
the single triplet margin default and the docstring examples. Gradients live in test_losses_gradients.py."""

from __future__ import annotations

import doctest
import importlib
import inspect
import math
import warnings

import pytest
import torch
from torch import nn

from sbert_tutor import losses
from sbert_tutor.losses import (
    SoftmaxClassifier,
    ce_score_regression,
    concat_features,
    cosine_regression,
    feature_dim,
    in_batch_contrastive,
    multiple_negatives_ranking,
    softmax_classification,
    supmpn,
    triplet,
)

F64 = torch.float64


def randn(*shape: int, seed: int, dtype: torch.dtype = F64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ============================================================== naive references (pure Python)
def _dot(x: list[float], y: list[float]) -> float:
    return sum(a * b for a, b in zip(x, y, strict=True))


def _cos(x: list[float], y: list[float]) -> float:
    return _dot(x, y) / (math.sqrt(_dot(x, x)) * math.sqrt(_dot(y, y)))


def naive_mnrl(anchors, positives, negatives=None, scale=20.0, symmetric=False) -> float:
    a, p = anchors.tolist(), positives.tolist()
    negs: list[list[float]] = []
    if negatives is not None and negatives.dim() == 2:
        negs = negatives.tolist()
    elif negatives is not None:  # [N, Q, d]: every anchor's negatives are shared by all anchors
        for per_anchor in negatives.tolist():
            negs.extend(per_anchor)
    candidates = p + negs
    n = len(a)
    total = 0.0
    for i in range(n):
        num = math.exp(scale * _cos(a[i], p[i]))
        den = sum(math.exp(scale * _cos(a[i], c)) for c in candidates)
        total += -math.log(num / den)
    loss = total / n
    if not symmetric:
        return loss
    back = 0.0
    for i in range(n):
        num = math.exp(scale * _cos(p[i], a[i]))
        den = sum(math.exp(scale * _cos(p[i], a[j])) for j in range(n))
        back += -math.log(num / den)
    return (loss + back / n) / 2


def naive_supmpn(anchors, positives, negatives, temperature, include_own_positives=False) -> float:
    a, p, ng = anchors.tolist(), positives.tolist(), negatives.tolist()
    n, num_pos = len(a), len(p[0])

    def e(x, y):
        return math.exp(_cos(x, y) / temperature)

    total = 0.0
    for i in range(n):
        for k in range(num_pos):
            num = e(a[i], p[i][k])
            den = num
            for j in range(n):
                for m in range(num_pos):
                    if j != i or (include_own_positives and m != k):
                        den += e(a[i], p[j][m])
            for j in range(n):
                for neg in ng[j]:
                    den += e(a[i], neg)
            total += -math.log(num / den)
    return total / (n * num_pos)


def naive_ce_score_regression(q, d, logits, similarity) -> float:
    total = 0.0
    for qi, di, z in zip(q.tolist(), d.tolist(), logits.tolist(), strict=True):
        y = 1.0 / (1.0 + math.exp(-z))
        if similarity == "cosine":
            total += (y - max(_cos(qi, di), 0.0)) ** 2
        else:
            dist = math.sqrt(sum((x - w) ** 2 for x, w in zip(qi, di, strict=True)))
            total += (1.0 - y - dist) ** 2
    return total / len(q)


def naive_in_batch_contrastive(h, h_plus, temperature) -> float:
    a, b = h.tolist(), h_plus.tolist()
    total = 0.0
    for i in range(len(a)):
        num = math.exp(_cos(a[i], b[i]) / temperature)
        den = sum(math.exp(_cos(a[i], b[j]) / temperature) for j in range(len(b)))
        total += -math.log(num / den)
    return total / len(a)


def close(ours: torch.Tensor, ref: float | torch.Tensor, tol: float = 1e-10) -> None:
    torch.testing.assert_close(ours.double(), torch.as_tensor(ref, dtype=F64), rtol=tol, atol=tol)


# ============================================================== against naive loops
@pytest.mark.parametrize("n, p, q", [(4, 1, 1), (5, 3, 2), (3, 2, 0), (1, 2, 3)])
def test_supmpn_matches_naive_loop(n, p, q):
    d = 6
    a, pos, neg = randn(n, d, seed=1), randn(n, p, d, seed=2), randn(n, q, d, seed=3)
    ours = supmpn(a, pos, neg, temperature=0.05)
    close(ours, naive_supmpn(a, pos, neg, 0.05))
    if p > 1:  # the data can tell "own other positives excluded" from "included"
        other = naive_supmpn(a, pos, neg, 0.05, include_own_positives=True)
        assert abs(ours.item() - other) > 1e-7  # far above the 1e-10 tolerance used above


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_ce_score_regression_matches_naive_loop(similarity):
    q, d, z = randn(7, 5, seed=4), randn(7, 5, seed=5), randn(7, seed=6) * 3
    close(ce_score_regression(q, d, z, similarity), naive_ce_score_regression(q, d, z, similarity))
    # the ReLU matters: some cosines are negative in this batch
    assert (torch.cosine_similarity(q, d) < 0).any()


@pytest.mark.parametrize("temperature", [0.05, 0.5, 2.0])
def test_in_batch_contrastive_matches_naive_loop(temperature):
    h, hp = randn(6, 4, seed=7), randn(6, 4, seed=8)
    close(in_batch_contrastive(h, hp, temperature), naive_in_batch_contrastive(h, hp, temperature))


@pytest.mark.parametrize(
    "neg_shape", [None, (3, 5), (11, 5), (4, 1, 5), (4, 3, 5)], ids=lambda s: f"neg={s}"
)
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("scale", [1.0, 20.0])
def test_mnrl_matches_naive_loop(neg_shape, symmetric, scale):
    a, p = randn(4, 5, seed=9), randn(4, 5, seed=10)
    neg = None if neg_shape is None else randn(*neg_shape, seed=11)
    ours = multiple_negatives_ranking(a, p, neg, scale=scale, symmetric=symmetric)
    close(ours, naive_mnrl(a, p, neg, scale=scale, symmetric=symmetric))


def test_cosine_regression_by_hand():
    u = torch.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 0.0]], dtype=F64)
    v = torch.tensor([[0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]], dtype=F64)  # cos: 0, 1, -1
    scores = torch.tensor([1.0, 4.0, 0.0], dtype=F64)  # scaled: 0.2, 0.8, 0
    close(cosine_regression(u, v, scores), (0.2**2 + 0.2**2 + 1.0) / 3)


# ============================================================== equivalences
@pytest.mark.parametrize("q", [0, 1, 3])
@pytest.mark.parametrize("temperature", [0.05, 0.3])
def test_supmpn_with_one_positive_is_mnrl(q, temperature):
    a, p, neg = randn(6, 8, seed=12), randn(6, 1, 8, seed=13), randn(6, q, 8, seed=14)
    ours = supmpn(a, p, neg, temperature=temperature)
    mnrl = multiple_negatives_ranking(a, p[:, 0], neg, scale=1 / temperature)
    torch.testing.assert_close(ours, mnrl, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("temperature", [0.05, 0.1, 1.0])
def test_in_batch_contrastive_is_mnrl_without_negatives(temperature):
    h, hp = randn(8, 16, seed=15), randn(8, 16, seed=16)
    torch.testing.assert_close(
        in_batch_contrastive(h, hp, temperature),
        multiple_negatives_ranking(h, hp, scale=1 / temperature),
        rtol=1e-12,
        atol=1e-12,
    )


def test_mnrl_negatives_layout_does_not_matter():
    """[N, Q, d] negatives are a shared pool: the same loss as the flattened [N*Q, d] pool."""
    a, p, neg = randn(4, 6, seed=17), randn(4, 6, seed=18), randn(4, 3, 6, seed=19)
    torch.testing.assert_close(
        multiple_negatives_ranking(a, p, neg), multiple_negatives_ranking(a, p, neg.reshape(-1, 6))
    )
    # ...and hard negatives do change the loss (they enlarge the denominator)
    assert multiple_negatives_ranking(a, p, neg) > multiple_negatives_ranking(a, p)


def test_cosine_losses_ignore_embedding_norm():
    a, p, neg = randn(4, 6, seed=20), randn(4, 6, seed=21), randn(4, 2, 6, seed=22)
    s = torch.rand(4, 1, generator=torch.Generator().manual_seed(0), dtype=F64) + 0.5
    torch.testing.assert_close(
        multiple_negatives_ranking(a, p, neg), multiple_negatives_ranking(3 * s * a, p, 7 * neg)
    )
    torch.testing.assert_close(supmpn(a, p[:, None], neg), supmpn(s * a, 2 * p[:, None], 0.1 * neg))


# ============================================================== against sentence-transformers
class _Passthrough(nn.Module):
    """Stands in for a SentenceTransformer: each feature dict already carries its embedding."""

    device = torch.device("cpu")  # SoftmaxLoss reads model.device

    def forward(self, features: dict) -> dict:
        return {"sentence_embedding": features["emb"]}


def st_value(loss: nn.Module, columns: list[torch.Tensor], labels=None) -> torch.Tensor:
    """Run a sentence-transformers loss's real forward on precomputed embeddings."""
    return loss([{"emb": c} for c in columns], labels)


MODEL = _Passthrough()
F32 = torch.float32


@pytest.mark.parametrize("n", [1, 16])
def test_cosine_regression_matches_st(st_losses, n):
    u, v = randn(n, 8, seed=30, dtype=F32), randn(n, 8, seed=31, dtype=F32)
    labels = torch.rand(n, generator=torch.Generator().manual_seed(32))
    ref = st_value(st_losses.CosineSimilarityLoss(MODEL), [u, v], labels)
    torch.testing.assert_close(cosine_regression(u, v, labels, score_range=(0.0, 1.0)), ref)
    # STS-B style gold scores in [0, 5]: same objective once rescaled
    torch.testing.assert_close(cosine_regression(u, v, 5 * labels), ref)
    torch.testing.assert_close(cosine_regression(u, v, 2 * labels - 1, (-1.0, 1.0)), ref)


# (rep = u and v, difference = |u-v|, multiplication = u*v) -> our feature names, in ST's order
ST_FLAGS = {
    (True, True, False): ("u", "v", "|u-v|"),
    (True, True, True): ("u", "v", "|u-v|", "u*v"),
    (True, False, False): ("u", "v"),
    (False, True, False): ("|u-v|",),
    (False, False, True): ("u*v",),
    (False, True, True): ("|u-v|", "u*v"),
    (True, False, True): ("u", "v", "u*v"),
}


@pytest.mark.parametrize("flags", list(ST_FLAGS), ids=lambda f: "+".join(ST_FLAGS[f]))
def test_softmax_classification_matches_st(st_losses, flags):
    d, num_labels = 6, 3
    u, v = randn(10, d, seed=33, dtype=F32), randn(10, d, seed=34, dtype=F32)
    labels = torch.randint(0, num_labels, (10,), generator=torch.Generator().manual_seed(35))
    with torch.random.fork_rng():
        torch.manual_seed(36)
        st = st_losses.SoftmaxLoss(MODEL, d, num_labels, *flags)
    ref = st_value(st, [u, v], labels)

    features = ST_FLAGS[flags]
    head = SoftmaxClassifier(d, num_labels, features)
    head.linear.load_state_dict(st.classifier.state_dict())
    torch.testing.assert_close(softmax_classification(u, v, labels, head, features), ref)
    # a plain nn.Linear works as the classifier too
    torch.testing.assert_close(softmax_classification(u, v, labels, st.classifier, features), ref)


def test_softmax_classification_feature_order_matters(st_losses):
    """Same weights, features swapped: a different loss (so the test above can fail)."""
    d = 6
    u, v = randn(10, d, seed=37, dtype=F32), randn(10, d, seed=38, dtype=F32)
    labels = torch.randint(0, 3, (10,), generator=torch.Generator().manual_seed(39))
    st = st_losses.SoftmaxLoss(MODEL, d, 3)
    ref = st_value(st, [u, v], labels)
    swapped = softmax_classification(u, v, labels, st.classifier, ("v", "u", "|u-v|"))
    assert abs(swapped.item() - ref.item()) > 1e-4


@pytest.mark.parametrize(
    "distance, margin", [("euclidean", 5.0), ("euclidean", 1.0), ("cosine", 0.5), ("cosine", 0.1)]
)
def test_triplet_matches_st(st_losses, distance, margin):
    a, p, n = (randn(32, 8, seed=s, dtype=F32) for s in (40, 41, 42))
    metric = getattr(st_losses.TripletDistanceMetric, distance.upper())
    st = st_losses.TripletLoss(MODEL, distance_metric=metric, triplet_margin=margin)
    ref = st_value(st, [a, p, n])
    assert ref > 0
    torch.testing.assert_close(triplet(a, p, n, distance=distance, margin=margin), ref)


def test_triplet_cosine_relu_by_hand():
    """Rygaard et al.'s cosine distance 1 - ReLU(cos) lies in [0, 1]: a negative past orthogonal
    counts as orthogonal, where SBERT's 1 - cos keeps growing to 2."""
    a = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    p = torch.tensor([[0.6, 0.8], [0.6, 0.8]])  # cos 0.6: both distances 0.4
    n = torch.tensor([[-1.0, 0.0], [0.8, 0.6]])  # cos -1 (1 vs. 2), cos 0.8 (0.2 for both)
    torch.testing.assert_close(
        losses.pairwise_distance(a, n, "cosine_relu"), torch.tensor([1.0, 0.2])
    )
    # row 1: max(0.4 - 1 + 1, 0) = 0.4 (1 - cos: max(0.4 - 2 + 1, 0) = 0); row 2: 0.4 - 0.2 + 1
    torch.testing.assert_close(
        triplet(a, p, n, "cosine_relu", margin=1.0), torch.tensor((0.4 + 1.2) / 2)
    )
    torch.testing.assert_close(triplet(a, p, n, "cosine", margin=1.0), torch.tensor(1.2 / 2))
    # with both cosines positive the two distances agree
    torch.testing.assert_close(
        triplet(a[1:], p[1:], n[1:], "cosine_relu", 0.3),
        triplet(a[1:], p[1:], n[1:], "cosine", 0.3),
    )
    # the hinge argument is never below margin - 1: at margin 5 the loss is at least 4
    x, y, z = randn(64, 8, seed=43), randn(64, 8, seed=44), randn(64, 8, seed=45)
    per_row = losses.pairwise_distance(x, y, "cosine_relu") - losses.pairwise_distance(
        x, z, "cosine_relu"
    )
    assert per_row.min() >= -1.0 and per_row.max() <= 1.0
    assert float(triplet(x, y, z, "cosine_relu", margin=5.0)) >= 4.0


def _st_columns(anchors, positives, negatives):
    """Our (anchors, positives, negatives) as sentence-transformers' list of [N, d] columns."""
    columns = [anchors, positives]
    if negatives is not None and negatives.dim() == 3:  # [N, Q, d] -> Q columns
        columns += list(negatives.unbind(1))
    elif negatives is not None:  # [M, d] with M = k * N -> k columns
        columns += list(negatives.reshape(-1, anchors.shape[0], anchors.shape[1]).unbind(0))
    return columns


NEG_SHAPES = [None, (8, 1, 6), (8, 3, 6), (16, 6)]


@pytest.mark.parametrize("neg_shape", NEG_SHAPES, ids=lambda s: f"neg={s}")
@pytest.mark.parametrize("scale", [20.0, 7.5])
def test_mnrl_matches_st(st_losses, neg_shape, scale):
    a, p = randn(8, 6, seed=43, dtype=F32), randn(8, 6, seed=44, dtype=F32)
    neg = None if neg_shape is None else randn(*neg_shape, seed=45, dtype=F32)
    ref = st_value(
        st_losses.MultipleNegativesRankingLoss(MODEL, scale=scale), _st_columns(a, p, neg)
    )
    torch.testing.assert_close(multiple_negatives_ranking(a, p, neg, scale=scale), ref)


@pytest.mark.parametrize("neg_shape", NEG_SHAPES, ids=lambda s: f"neg={s}")
def test_symmetric_mnrl_matches_st(st_losses, neg_shape):
    a, p = randn(8, 6, seed=46, dtype=F32), randn(8, 6, seed=47, dtype=F32)
    neg = None if neg_shape is None else randn(*neg_shape, seed=48, dtype=F32)
    ours = multiple_negatives_ranking(a, p, neg, scale=20.0, symmetric=True)
    columns = _st_columns(a, p, neg)
    checked = 0
    if hasattr(st_losses, "MultipleNegativesSymmetricRankingLoss"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            st = st_losses.MultipleNegativesSymmetricRankingLoss(MODEL, scale=20.0)
        torch.testing.assert_close(ours, st_value(st, columns))
        checked += 1
    if "directions" in inspect.signature(st_losses.MultipleNegativesRankingLoss).parameters:
        st = st_losses.MultipleNegativesRankingLoss(
            MODEL, directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"
        )
        torch.testing.assert_close(ours, st_value(st, columns))
        checked += 1
    assert checked, "no symmetric MNRL in this sentence-transformers version"
    # the backward term is real: symmetric != one-directional
    assert abs(ours.item() - multiple_negatives_ranking(a, p, neg).item()) > 1e-4


# ============================================================== input checks
def test_cosine_regression_rejects_bad_inputs():
    u, v = randn(4, 8, seed=50), randn(4, 8, seed=51)
    good = torch.tensor([0.0, 1.0, 2.5, 5.0])
    cosine_regression(u, v, good)  # fine, and the boundaries are allowed
    with pytest.raises(ValueError, match=r"same shape.*\[4, 8\].*\[5, 8\]"):
        cosine_regression(u, randn(5, 8, seed=52), good)
    with pytest.raises(ValueError, match=r"same shape.*\[4, 7\]"):
        cosine_regression(u, randn(4, 7, seed=53), good)
    with pytest.raises(ValueError, match=r"2-D tensor of shape \[N, d\], got shape \[8\]"):
        cosine_regression(u[0], v[0], good[:1])
    with pytest.raises(ValueError, match=r"NaN at positions \[2\]"):
        cosine_regression(u, v, torch.tensor([0.0, 1.0, float("nan"), 2.0]))
    with pytest.raises(ValueError, match=r"score_range=\(0, 5\).*5\.5"):
        cosine_regression(u, v, torch.tensor([0.0, 1.0, 5.5, 2.0]))
    with pytest.raises(ValueError, match=r"score_range=\(0, 1\)"):
        cosine_regression(u, v, good, score_range=(0.0, 1.0))
    with pytest.raises(ValueError, match=r"shape \[N\] = \[4\].*got \[3\]"):
        cosine_regression(u, v, good[:3])
    with pytest.raises(ValueError, match="low < high"):
        cosine_regression(u, v, good, score_range=(5.0, 0.0))
    with pytest.raises(ValueError, match="floating-point"):
        cosine_regression(u.long(), v.long(), good)
    with pytest.raises(TypeError, match="torch.Tensor"):
        cosine_regression(u.tolist(), v, good)
    # [N, 1] scores are accepted and flattened
    torch.testing.assert_close(
        cosine_regression(u, v, good[:, None]), cosine_regression(u, v, good)
    )


def test_softmax_classification_rejects_bad_inputs():
    u, v = randn(4, 3, seed=54), randn(4, 3, seed=55)
    labels = torch.tensor([0, 1, 2, 0])
    head = SoftmaxClassifier(3, 3).double()
    with pytest.raises(ValueError, match=r"unknown feature\(s\) \['u-v'\].*'\|u-v\|', 'u\*v'"):
        softmax_classification(u, v, labels, head, ("u", "v", "u-v"))
    with pytest.raises(ValueError, match="at least one"):
        softmax_classification(u, v, labels, head, ())
    with pytest.raises(ValueError, match="repeat"):
        softmax_classification(u, v, labels, head, ("u", "u", "v"))
    with pytest.raises(ValueError, match=r"expects 9 input features.*4 \* 3 = 12"):
        softmax_classification(u, v, labels, head, ("u", "v", "|u-v|", "u*v"))
    with pytest.raises(ValueError, match=r"labels must have shape \[N\] = \[4\]"):
        softmax_classification(u, v, labels[:3], head)
    with pytest.raises(ValueError, match="integer class ids"):
        softmax_classification(u, v, labels.double(), head)
    with pytest.raises(ValueError, match="same shape"):
        softmax_classification(u, v[:3], labels, head)
    with pytest.raises(ValueError, match="unknown feature"):
        feature_dim(3, ("u", "w"))
    with pytest.raises(ValueError, match="unknown feature"):
        SoftmaxClassifier(3, 3, ("uv",))
    assert feature_dim(768) == 3 * 768
    assert feature_dim(5, ("u*v",)) == 5
    assert feature_dim(5, "u") == 5  # a lone string is one feature, not characters


def test_concat_features_values_and_order():
    u, v = torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0, 1.0]])
    torch.testing.assert_close(
        concat_features(u, v, ("u", "v", "|u-v|", "u*v")),
        torch.tensor([[1.0, -2.0, 3.0, 1.0, 2.0, 3.0, 3.0, -2.0]]),
    )
    torch.testing.assert_close(
        concat_features(u, v, ("v", "u")), torch.tensor([[3.0, 1.0, 1.0, -2.0]])
    )


def test_triplet_and_ce_regression_reject_bad_inputs():
    a, p, n = randn(4, 5, seed=56), randn(4, 5, seed=57), randn(4, 5, seed=58)
    with pytest.raises(ValueError, match=r"\['euclidean', 'cosine'\].*'manhattan'"):
        triplet(a, p, n, distance="manhattan")
    with pytest.raises(ValueError, match="anchor and negative must have the same shape"):
        triplet(a, p, n[:3])
    z = randn(4, seed=59)
    with pytest.raises(ValueError, match="'cosine' or 'euclidean'"):
        ce_score_regression(a, p, z, similarity="dot")
    with pytest.raises(ValueError, match="NaN"):
        ce_score_regression(a, p, torch.tensor([0.0, float("nan"), 1.0, 2.0]))
    with pytest.raises(ValueError, match=r"ce_scores must have shape \[N\] = \[4\]"):
        ce_score_regression(a, p, z[:2])
    # a cross-encoder's usual [N, 1] output is accepted
    torch.testing.assert_close(ce_score_regression(a, p, z[:, None]), ce_score_regression(a, p, z))


def test_ranking_losses_reject_bad_inputs():
    a, p = randn(4, 5, seed=60), randn(4, 5, seed=61)
    with pytest.raises(ValueError, match="anchors and positives must have the same shape"):
        multiple_negatives_ranking(a, p[:3])
    with pytest.raises(ValueError, match=r"\[M, d\] or \[N, Q, d\] with d = 5, got \[3, 4\]"):
        multiple_negatives_ranking(a, p, randn(3, 4, seed=62))
    with pytest.raises(ValueError, match=r"\[N, Q, d\] = \[4, Q, 5\], got \[3, 2, 5\]"):
        multiple_negatives_ranking(a, p, randn(3, 2, 5, seed=63))
    with pytest.raises(
        ValueError, match=r"2-D \[M, d\] or 3-D \[N, Q, d\], got shape \[4, 2, 1, 5\]"
    ):
        multiple_negatives_ranking(a, p, randn(4, 2, 1, 5, seed=64))
    with pytest.raises(ValueError, match="scale must be > 0"):
        multiple_negatives_ranking(a, p, scale=0.0)
    pos, neg = randn(4, 2, 5, seed=65), randn(4, 3, 5, seed=66)
    with pytest.raises(ValueError, match=r"positives must be a 3-D tensor of shape \[N, P, d\]"):
        supmpn(a, p, neg)
    with pytest.raises(ValueError, match=r"negatives must have shape \[N, Q, d\] = \[4, Q, 5\]"):
        supmpn(a, pos, neg[:2])
    with pytest.raises(ValueError, match=r"P >= 1"):
        supmpn(a, pos[:, :0], neg)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        supmpn(a, pos, neg, temperature=0.0)
    with pytest.raises(ValueError, match="h and h_plus must have the same shape"):
        in_batch_contrastive(a, randn(4, 6, seed=67))
    with pytest.raises(ValueError, match="temperature must be > 0"):
        in_batch_contrastive(a, p, temperature=-0.05)
    with pytest.raises(ValueError, match="empty batch"):
        in_batch_contrastive(a[:0], p[:0])


# ============================================================== defaults, package, docs
def test_one_triplet_margin_default():
    """The pure function and the training objective share one margin: the SBERT paper's 1."""
    from sbert_tutor.training import TripletObjective

    default = inspect.signature(triplet).parameters["margin"].default
    assert default == losses.TRIPLET_MARGIN == TripletObjective().margin == 1.0
    a = torch.tensor([[0.0, 0.0]])
    p, n = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.5, 0.0]])
    assert float(triplet(a, p, n)) == pytest.approx(1.0 - 1.5 + 1.0)


def test_mnrl_training_steps_reduce_the_loss():
    """A few SGD steps on free embeddings: the loss goes down (the gradient points the right way)."""
    a = randn(8, 16, seed=80).requires_grad_()
    p = randn(8, 16, seed=81).requires_grad_()
    opt = torch.optim.SGD([a, p], lr=0.5)
    start = multiple_negatives_ranking(a, p).item()
    for _ in range(20):
        opt.zero_grad()
        multiple_negatives_ranking(a, p).backward()
        opt.step()
    assert multiple_negatives_ranking(a, p).item() < 0.5 * start


def test_package_exports():
    assert losses.triplet is triplet and callable(losses.triplet)  # the function, not the module
    for name in losses.__all__:
        assert hasattr(losses, name), name


@pytest.mark.parametrize(
    "module", ["regression", "classification", "triplet_margin", "ranking", "cross_encoder"]
)
def test_docstring_examples(module):
    mod = importlib.import_module(f"sbert_tutor.losses.{module}")
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_public_functions_are_documented():
    for fn in (
        cosine_regression,
        softmax_classification,
        triplet,
        ce_score_regression,
        multiple_negatives_ranking,
        supmpn,
        in_batch_contrastive,
    ):
        doc = inspect.getdoc(fn)
        for section in ("Args:", "Returns:", "Inputs:", "Reference:", "Example:", ".. math::"):
            assert section in doc, f"{fn.__name__} lacks {section}"
