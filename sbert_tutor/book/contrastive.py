r"""Experiments of the contrastive chapters (9 MNRL, 10 SupMPN, 11 search-guided contrastive).

Everything a chapter computes lives here, so a notebook cell is one short call:

* **Fixed embeddings.** :func:`embed_fixed` encodes a seeded sample of real training rows once
  (no two rows share a text); :func:`scale_sweep`, :func:`candidate_table`,
  :func:`batch_size_sweep`, :func:`hard_negative_table` and :func:`denominator_breakdown` then
  look at the losses on those frozen vectors, without training.
* **Gradients by hand.** :func:`mnrl_anchor_gradient` writes out the gradient of MNRL with respect
  to the anchors; :func:`mnrl_gradient_check` compares it with autograd on the library's loss.
* **Batches.** :func:`shared_text_pairs` and :func:`duplicate_report` count, for random batches
  and for :class:`~sbert_tutor.training.samplers.NoDuplicatesBatchSampler`, how often a batch holds
  one text in two examples (a false negative for in-batch-negative losses).
* **SupMPN groups.** :func:`premise_label_counts` and :func:`group_sources` show how
  :func:`~sbert_tutor.data.nli.supmpn_groups` fills its slots on the data at hand;
  :func:`supmpn_mnrl_agreement` checks that SupMPN with one positive is MNRL.
* **Runs.** :func:`runs_table` puts short training runs beside the start model on STSb,
  :func:`measured_rows` and :func:`published_stsb_rows` feed
  :func:`~sbert_tutor.reporting.measured_vs_published`, :func:`~sbert_tutor.reporting.provenance_table` shows how each
  run was made.

Conventions: embeddings are ``torch`` tensors ``[N, d]`` (grouped ones ``[N, K, d]``); losses are
the library's (:mod:`sbert_tutor.losses.ranking`); ``scale`` :math:`s = 1/\tau`; accuracies are
percentages; Spearman is x100.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor

from sbert_tutor.losses.ranking import cosine_matrix, multiple_negatives_ranking, supmpn
from sbert_tutor.reporting import provenance_table  # noqa: F401  (chapters 9-11 read it here)

#: Published STSb test Spearman x100 (cosine), copied from papers: name -> (value, source).
#: Only numbers we could attribute to a table; nothing here is computed.
SIMCSE_TABLE5 = "Gao et al. (2021), SimCSE, Table 5"
PUBLISHED_STSB: dict[str, tuple[float, str]] = {
    "unsup-SimCSE-BERT-base (Wikipedia, dropout positives)": (76.85, SIMCSE_TABLE5),
    "sup-SimCSE-BERT-base (NLI, contradiction hard negatives)": (84.25, SIMCSE_TABLE5),
    "SBERT-NLI-base (softmax objective)": (
        77.03,
        "Reimers & Gurevych (2019), Sentence-BERT, Table 1",
    ),
}
STSB_METRIC = "STSb test Spearman x100"


# --------------------------------------------------------------------------- fixed embeddings
@dataclass
class FixedBatch:
    """Real training rows and their embeddings, encoded once and then frozen.

    Attributes:
        frame: the sampled rows (one column per text position, e.g. ``anchor, positive,
            negative`` or ``anchor, positive_1.., negative_1..``).
        embeddings: column -> ``[N, d]`` float32 tensor, as the encoder outputs them (normalised
            when the encoder normalises).
    """

    frame: pd.DataFrame
    embeddings: dict[str, Tensor]

    def __len__(self) -> int:
        return len(self.frame)

    def _column(self, i: int) -> Tensor:
        return self.embeddings[self.frame.columns[i]]

    @property
    def anchors(self) -> Tensor:
        """The first column's embeddings ``[N, d]``."""
        return self._column(0)

    @property
    def positives(self) -> Tensor:
        """The second column's embeddings ``[N, d]`` (the first positive)."""
        return self._column(1)

    @property
    def negatives(self) -> Tensor | None:
        """``[N, Q, d]``: every column whose name starts with ``negative`` (``None`` if none)."""
        return self.grouped("negative")

    def grouped(self, prefix: str) -> Tensor | None:
        """``[N, K, d]``: the columns whose names start with ``prefix``, stacked in order."""
        cols = [c for c in self.frame.columns if str(c).startswith(prefix)]
        if not cols:
            return None
        return torch.stack([self.embeddings[c] for c in cols], dim=1)

    def head(self, n: int) -> FixedBatch:
        """The first ``n`` rows (a batch of size ``n``)."""
        return FixedBatch(self.frame.iloc[:n], {k: v[:n] for k, v in self.embeddings.items()})


def distinct_rows(rows: Sequence[Sequence[str]], n: int | None, seed: int = 0) -> list[int]:
    """Indices of up to ``n`` rows, in a seeded random order, no two of which share a text.

    A row is skipped when one of its texts (stripped) already occurs in a chosen row. ``n=None``
    takes every row that fits.
    """
    order = np.random.default_rng(seed).permutation(len(rows))
    seen: set[str] = set()
    chosen: list[int] = []
    for i in order:
        texts = {t.strip() for t in rows[i]}
        if seen.isdisjoint(texts):
            chosen.append(int(i))
            seen |= texts
            if n is not None and len(chosen) == n:
                break
    return chosen


def embed_fixed(
    encoder: Any, frame: pd.DataFrame, n: int | None = None, seed: int = 0, batch_size: int = 64
) -> FixedBatch:
    """Encode a seeded sample of ``n`` rows of ``frame`` (no text shared between rows), once.

    Every distinct text is encoded a single time (``encoder.encode``, eval mode, no dropout).
    """
    rows = frame.to_numpy().tolist()
    keep = distinct_rows(rows, n, seed)
    sample = frame.iloc[keep].reset_index(drop=True)
    unique = list(dict.fromkeys(sample.to_numpy().ravel().tolist()))
    position = {text: i for i, text in enumerate(unique)}
    emb = torch.from_numpy(encoder.encode(unique, batch_size=batch_size, show_progress=False))
    embeddings = {c: emb[[position[t] for t in sample[c]]] for c in sample.columns}
    return FixedBatch(sample, embeddings)


def _candidates(positives: Tensor, negatives: Tensor | None) -> Tensor:
    """MNRL's candidate list: all positives, then every hard negative of the batch."""
    if negatives is None:
        return positives
    return torch.cat([positives, negatives.reshape(-1, positives.shape[-1])], dim=0)


# --------------------------------------------------------------------------- gradient by hand
def mnrl_anchor_gradient(
    anchors: Tensor, positives: Tensor, negatives: Tensor | None = None, scale: float = 20.0
) -> Tensor:
    r""":math:`\partial \mathcal{L} / \partial a_i` of MNRL, written out (chapter 9).

    With candidates :math:`c_j`, :math:`\hat x = x / \lVert x \rVert`, logits
    :math:`z_{ij} = s \cos(a_i, c_j)` and softmax weights :math:`P_{ij}`:

    .. math::

        \frac{\partial \mathcal{L}}{\partial a_i} = \frac{s}{N} \sum_j (P_{ij} - \delta_{ij})
            \frac{\hat c_j - \cos(a_i, c_j)\, \hat a_i}{\lVert a_i \rVert}

    (the anchor only enters row :math:`i` of the loss). Returns ``[N, d]``.
    """
    candidates = _candidates(positives, negatives)
    n = anchors.shape[0]
    a_norm = anchors.norm(dim=1, keepdim=True)
    a_hat = anchors / a_norm
    c_hat = F.normalize(candidates, dim=1)
    cos = a_hat @ c_hat.T
    weights = torch.softmax(scale * cos, dim=1) - torch.eye(n, cos.shape[1], dtype=cos.dtype)
    pull_push = weights @ c_hat - (weights * cos).sum(dim=1, keepdim=True) * a_hat
    return scale / n * pull_push / a_norm


def mnrl_autograd_gradient(
    anchors: Tensor, positives: Tensor, negatives: Tensor | None = None, scale: float = 20.0
) -> Tensor:
    """The same gradient from autograd on :func:`~sbert_tutor.losses.multiple_negatives_ranking`."""
    a = anchors.detach().clone().requires_grad_(True)
    multiple_negatives_ranking(a, positives, negatives, scale).backward()
    return a.grad


def mnrl_gradient_check(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor | None = None,
    scales: Sequence[float] = (1.0, 20.0, 100.0),
) -> pd.DataFrame:
    """By-hand vs autograd anchor gradient, one row a scale (float64 for a tight comparison)."""
    a, p = anchors.double(), positives.double()
    q = None if negatives is None else negatives.double()
    rows = []
    for s in scales:
        hand = mnrl_anchor_gradient(a, p, q, s)
        auto = mnrl_autograd_gradient(a, p, q, s)
        rows.append(
            {
                "scale": float(s),
                "anchors N": a.shape[0],
                "candidates K": _candidates(p, q).shape[0],
                "max |by hand - autograd|": float((hand - auto).abs().max()),
                "max |gradient|": float(auto.abs().max()),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- scale / temperature
def _ranking_stats(anchors: Tensor, candidates: Tensor, scale: float) -> dict[str, float]:
    logits = scale * cosine_matrix(anchors, candidates)
    log_probs = torch.log_softmax(logits, dim=1)
    n = anchors.shape[0]
    own = torch.diagonal(log_probs[:, :n])
    return {
        "loss": float(-own.mean()),
        "p(positive)": float(own.exp().mean()),
        "top-1 accuracy %": 100.0 * float((logits.argmax(dim=1) == torch.arange(n)).float().mean()),
    }


def scale_sweep(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor | None = None,
    scales: Sequence[float] = (1, 2, 5, 10, 20, 50, 100),
) -> pd.DataFrame:
    r"""MNRL on fixed embeddings as a function of the scale :math:`s = 1/\tau`.

    Columns: ``scale``, ``temperature``, ``loss`` (the library's MNRL), ``chance`` (:math:`\log K`,
    the loss of uniform probabilities over :math:`K` candidates), ``p(positive)`` (the mean softmax
    probability of the own positive) and ``top-1 accuracy %`` (does not depend on the scale).
    """
    candidates = _candidates(positives, negatives)
    rows = []
    for s in scales:
        stats = _ranking_stats(anchors, candidates, float(s))
        rows.append(
            {
                "scale": float(s),
                "temperature": 1.0 / float(s),
                "loss": float(multiple_negatives_ranking(anchors, positives, negatives, float(s))),
                "chance log K": math.log(candidates.shape[0]),
                "p(positive)": stats["p(positive)"],
                "top-1 accuracy %": stats["top-1 accuracy %"],
            }
        )
    return pd.DataFrame(rows)


def _shorten(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def candidate_table(
    batch: FixedBatch, row: int = 0, scales: Sequence[float] = (1, 20, 100), top: int = 6
) -> pd.DataFrame:
    r"""For one anchor, its candidates with cosine and softmax probability at each scale.

    Candidates are the batch's positives, then its hard negatives (if any). Rows: the ``top``
    candidates by cosine plus the own positive and own hard negatives, sorted by cosine. The column ``gradient weight``
    is :math:`P_{ij} - \delta_{ij}` at the middle scale (negative: pulled, positive: pushed).
    """
    frame = batch.frame
    n = len(batch)
    neg_cols = [c for c in frame.columns if str(c).startswith("negative")]
    texts = list(frame.iloc[:, 1])
    kinds = ["own positive" if j == row else "other anchor's positive" for j in range(n)]
    negatives = batch.negatives
    if negatives is not None:  # MNRL flattens [N, Q, d] row by row: anchor j's Q are adjacent
        texts = texts + [frame[c].iloc[j] for j in range(n) for c in neg_cols]
        kinds = kinds + [
            "own hard negative" if j == row else "other anchor's hard negative"
            for j in range(n)
            for _ in neg_cols
        ]
    candidates = _candidates(batch.positives, negatives)
    cos = cosine_matrix(batch.anchors[row : row + 1], candidates)[0]
    table = pd.DataFrame({"candidate": [_shorten(t) for t in texts], "kind": kinds, "cosine": cos})
    middle = float(scales[len(scales) // 2])
    for s in scales:
        table[f"p (s={s:g})"] = torch.softmax(float(s) * cos, dim=0).numpy()
    table["gradient weight"] = table[f"p (s={middle:g})"] - (table.index == row)
    own = table.index[table["kind"].str.startswith("own")]
    keep = set(table["cosine"].nlargest(top).index) | set(own)
    out = table.loc[sorted(keep, key=lambda j: -table.at[j, "cosine"])]
    out.attrs["anchor"] = frame.iloc[row, 0]
    out.attrs["candidates"] = len(table)
    return out


# --------------------------------------------------------------------------- batch size
def batch_size_sweep(
    anchors: Tensor,
    positives: Tensor,
    batch_sizes: Sequence[int] = (2, 4, 8, 16, 32, 64, 128, 256),
    scale: float = 20.0,
    negatives: Tensor | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    r"""Split ``M`` fixed pairs into batches of ``N`` and average MNRL over the batches.

    Columns: ``batch size N``, ``batches``, ``loss``, ``chance log K`` (:math:`K = N` or
    :math:`N(1+Q)` candidates), ``top-1 accuracy %`` (the own positive ranks first among the
    batch's candidates) and ``log K - loss`` (the InfoNCE lower bound on mutual information, in
    nats; it can never exceed :math:`\log K`).
    """
    m = anchors.shape[0]
    order = torch.from_numpy(np.random.default_rng(seed).permutation(m))
    rows = []
    for n in batch_sizes:
        if n < 2 or n > m:
            raise ValueError(f"batch sizes must lie in 2..{m} (the pairs given), got {n}")
        losses, accs, k = [], [], 0
        for start in range(0, m - n + 1, n):
            idx = order[start : start + n]
            neg = None if negatives is None else negatives[idx]
            candidates = _candidates(positives[idx], neg)
            k = candidates.shape[0]
            stats = _ranking_stats(anchors[idx], candidates, scale)
            losses.append(stats["loss"])
            accs.append(stats["top-1 accuracy %"])
        loss = float(np.mean(losses))
        rows.append(
            {
                "batch size N": int(n),
                "batches": len(losses),
                "loss": loss,
                "chance log K": math.log(k),
                "top-1 accuracy %": float(np.mean(accs)),
                "log K - loss": math.log(k) - loss,
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- hard negatives
def hard_negative_table(batch: FixedBatch, scale: float = 20.0) -> pd.DataFrame:
    """MNRL on one fixed batch with and without its hard negatives as extra candidate columns.

    Columns: ``candidates K``, ``chance log K``, ``loss``, ``p(positive)``, ``top-1 accuracy %``.
    """
    rows = {}
    for name, neg in (
        ("in-batch negatives only", None),
        ("+ hard negatives", batch.negatives),
    ):
        candidates = _candidates(batch.positives, neg)
        stats = _ranking_stats(batch.anchors, candidates, scale)
        rows[name] = {
            "candidates K": candidates.shape[0],
            "chance log K": math.log(candidates.shape[0]),
            "loss": float(multiple_negatives_ranking(batch.anchors, batch.positives, neg, scale)),
            "p(positive)": stats["p(positive)"],
            "top-1 accuracy %": stats["top-1 accuracy %"],
        }
    return pd.DataFrame(rows).T


def cosine_summary(batch: FixedBatch) -> pd.Series:
    """Mean cosine of the anchor with its positive, its hard negative(s) and the other anchors'
    positives, and how often its own hard negative is closer than its positive (in %)."""
    cos_pos = F.cosine_similarity(batch.anchors, batch.positives)
    all_pos = cosine_matrix(batch.anchors, batch.positives)
    n = len(batch)
    others = all_pos[~torch.eye(n, dtype=torch.bool)]
    out = {
        "cos(anchor, own positive)": float(cos_pos.mean()),
        "cos(anchor, other anchors' positives)": float(others.mean()),
    }
    negatives = batch.negatives
    if negatives is not None:
        cos_neg = F.cosine_similarity(batch.anchors.unsqueeze(1), negatives, dim=-1)
        out["cos(anchor, own hard negative)"] = float(cos_neg.mean())
        out["own hard negative closer than positive %"] = 100.0 * float(
            (cos_neg.max(dim=1).values > cos_pos).float().mean()
        )
    return pd.Series(out, name="mean over the batch")


# --------------------------------------------------------------------------- duplicates
def shared_text_pairs(rows: Sequence[Sequence[str]]) -> int:
    """Unordered pairs of examples (of one batch) that share at least one text (after strip).

    With in-batch negatives, each such pair puts a copy of a positive (or of the anchor, or a
    second valid positive of the same premise) among an anchor's negatives: a false negative.
    """
    holders: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        for text in {t.strip() for t in row}:
            holders.setdefault(text, []).append(i)
    pairs = {
        (ids[x], ids[y])
        for ids in holders.values()
        if len(ids) > 1
        for x in range(len(ids))
        for y in range(x + 1, len(ids))
    }
    return len(pairs)


def random_batches(n: int, batch_size: int, seed: int = 0) -> list[list[int]]:
    """A plain shuffled plan: ``permutation(n)`` cut into batches of ``batch_size``."""
    order = np.random.default_rng(seed).permutation(n).tolist()
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def duplicate_report(
    rows: Sequence[Sequence[str]],
    batch_sizes: Sequence[int] = (16, 32, 64, 128, 256),
    seed: int = 0,
    epochs: int = 3,
) -> pd.DataFrame:
    """How often batches hold one text in two examples: random batches vs no-duplicates batches.

    For every batch size, ``epochs`` epochs (seeds ``seed .. seed+epochs-1``) are planned by a
    plain shuffle and by :class:`~sbert_tutor.training.samplers.NoDuplicatesBatchSampler`.
    Columns: ``batch size``, ``sampler``, ``batches``, ``mean batch size``, ``batches with a
    shared text %``, ``shared pairs per batch`` (see :func:`shared_text_pairs`).
    """
    from sbert_tutor.training.samplers import NoDuplicatesBatchSampler

    rows = [tuple(r) for r in rows]
    out = []
    for size in batch_sizes:
        for sampler in ("random", "NoDuplicatesBatchSampler"):
            counts, sizes = [], []
            for e in range(epochs):
                if sampler == "random":
                    plan = random_batches(len(rows), size, seed + e)
                else:
                    plan = NoDuplicatesBatchSampler(rows, size, seed + e).batches(0)
                for batch in plan:
                    counts.append(shared_text_pairs([rows[i] for i in batch]))
                    sizes.append(len(batch))
            counts_arr = np.asarray(counts)
            out.append(
                {
                    "batch size": int(size),
                    "sampler": sampler,
                    "batches": len(counts),
                    "mean batch size": float(np.mean(sizes)),
                    "batches with a shared text %": 100.0 * float((counts_arr > 0).mean()),
                    "shared pairs per batch": float(counts_arr.mean()),
                }
            )
    return pd.DataFrame(out)


def text_repeats(rows: Sequence[Sequence[str]]) -> pd.Series:
    """How repetitive the training rows are: examples, distinct texts, texts in >1 example."""
    from collections import Counter

    per_text = Counter(t.strip() for row in rows for t in {s.strip() for s in row})
    return pd.Series(
        {
            "examples": len(rows),
            "distinct texts": len(per_text),
            "texts in more than one example": sum(1 for c in per_text.values() if c > 1),
            "most examples sharing one text": max(per_text.values()),
        },
        name="count",
    )


# --------------------------------------------------------------------------- SupMPN
def supmpn_mnrl_agreement(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor,
    temperatures: Sequence[float] = (0.05, 0.1, 1.0),
) -> pd.DataFrame:
    r"""SupMPN with one positive (:math:`P = 1`) vs MNRL with :math:`s = 1/\tau`, same tensors.

    ``positives`` is ``[N, P, d]``; only its first positive is used. ``negatives`` ``[N, Q, d]``;
    rows are computed for :math:`Q = 0` and for all ``Q`` given.
    """
    one = positives[:, :1]
    rows = []
    for q in sorted({0, negatives.shape[1]}):
        neg = negatives[:, :q]
        for t in temperatures:
            a = float(supmpn(anchors, one, neg, temperature=float(t)))
            b = float(
                multiple_negatives_ranking(
                    anchors, positives[:, 0], neg if q else None, scale=1.0 / float(t)
                )
            )
            rows.append(
                {
                    "negatives Q": q,
                    "temperature": float(t),
                    "scale 1/t": 1.0 / float(t),
                    "supmpn (P=1)": a,
                    "multiple_negatives_ranking": b,
                    "|difference|": abs(a - b),
                }
            )
    return pd.DataFrame(rows)


def denominator_breakdown(
    anchors: Tensor, positives: Tensor, negatives: Tensor, temperature: float = 0.05
) -> pd.DataFrame:
    r"""Where the mass of SupMPN's denominator (eq. 7) comes from, averaged over anchors and
    positives.

    For anchor :math:`i` and its positive :math:`k` the denominator holds the positive itself,
    the other anchors' positives and every negative of the batch (the anchor's own and the
    others'); the anchor's *other* positives are left out. Rows: these terms, with how many there
    are and their mean share of the denominator in %.
    """
    n, p, d = positives.shape
    q = negatives.shape[1]
    e_pos = torch.exp(cosine_matrix(anchors, positives.reshape(-1, d)).view(n, n, p) / temperature)
    e_neg = torch.exp(cosine_matrix(anchors, negatives.reshape(-1, d)).view(n, n, q) / temperature)
    eye = torch.eye(n, dtype=torch.bool)
    own_pos = e_pos[eye]  # [N, P]: e(a_i, p_ik)
    other_pos = e_pos.masked_fill(eye.unsqueeze(-1), 0.0).sum(dim=(1, 2))  # [N]
    own_neg = e_neg[eye].sum(dim=1)  # [N]
    other_neg = e_neg.masked_fill(eye.unsqueeze(-1), 0.0).sum(dim=(1, 2))  # [N]
    total = own_pos + (other_pos + own_neg + other_neg).unsqueeze(1)  # [N, P]
    terms = {
        "the positive p_ik itself": (1, own_pos),
        "the anchor's other positives (left out)": (p - 1, torch.zeros_like(own_pos)),
        "other anchors' positives": ((n - 1) * p, other_pos.unsqueeze(1).expand(n, p)),
        "the anchor's own hard negatives": (q, own_neg.unsqueeze(1).expand(n, p)),
        "other anchors' hard negatives": ((n - 1) * q, other_neg.unsqueeze(1).expand(n, p)),
    }
    rows = {
        name: {"terms": count, "share of denominator %": 100.0 * float((mass / total).mean())}
        for name, (count, mass) in terms.items()
    }
    return pd.DataFrame(rows).T


def premise_label_counts(nli: Any) -> pd.DataFrame:
    """Premises by how many entailment / contradiction hypotheses they have (0, 1, 2, 3+)."""
    from collections import Counter

    labels = ("entailment", "contradiction")
    per_premise = {p: dict.fromkeys(labels, 0) for p in nli.premises}
    for p, y in zip(nli.premises, nli.labels, strict=True):
        if y in labels:
            per_premise[p][y] += 1
    bins = ["0", "1", "2", "3+"]
    table = (
        pd.DataFrame(
            {
                label: Counter(bins[min(c[label], 3)] for c in per_premise.values())
                for label in labels
            },
            index=bins,
        )
        .fillna(0)
        .astype(int)
    )
    table.index.name = "hypotheses of this label per premise"
    table.attrs["premises"] = len(per_premise)
    return table


def group_sources(groups: pd.DataFrame, nli: Any) -> pd.DataFrame:
    """Where each slot of SupMPN groups comes from, in % of the groups.

    Positive slots: an entailment hypothesis of the premise (first use), the premise itself
    (SupMPN padding, or rarely an entailment hypothesis identical to its premise), or an
    entailment hypothesis used again (padding). Negative slots: a contradiction
    hypothesis of the premise, or a hypothesis of another premise (padding).
    """
    from collections import defaultdict

    own: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for p, h, y in zip(nli.premises, nli.hypotheses, nli.labels, strict=True):
        own[p][y].add(h)
    cats = [
        "entailment of the premise",
        "the premise itself",
        "entailment used again (padding)",
        "contradiction of the premise",
        "hypothesis of another premise (padding)",
    ]
    pos_cols = [c for c in groups.columns if str(c).startswith("positive")]
    neg_cols = [c for c in groups.columns if str(c).startswith("negative")]
    counts = {c: dict.fromkeys(cats, 0) for c in pos_cols + neg_cols}
    anchors = groups["anchor"].tolist()
    used: list[set[str]] = [set() for _ in anchors]
    for c in pos_cols:
        for i, text in enumerate(groups[c].tolist()):
            if text == anchors[i]:
                cat = cats[1]
            elif text in used[i]:
                cat = cats[2]
            else:
                cat = cats[0]
            used[i].add(text)
            counts[c][cat] += 1
    for c in neg_cols:
        for i, text in enumerate(groups[c].tolist()):
            own_contradiction = text in own[anchors[i]]["contradiction"]
            counts[c][cats[3] if own_contradiction else cats[4]] += 1
    table = pd.DataFrame.from_dict(counts, orient="index")[cats].astype(float)
    table = 100.0 * table / max(len(groups), 1)
    table.index.name = "slot"
    return table.loc[:, (table > 0).any(axis=0)]


# --------------------------------------------------------------------------- runs and reporting
def stsb_spearman(table: pd.DataFrame) -> float:
    """The STSb Spearman x100 of an :func:`~sbert_tutor.evaluation.evaluate_sts` table."""
    return float(table.set_index("task").loc["STSb", "spearman"])


def runs_table(
    before: pd.DataFrame, runs: Mapping[str, Any], start_label: str = "start model (no training)"
) -> pd.DataFrame:
    """The start model and each training run on STSb test, one row each.

    Args:
        before: :func:`~sbert_tutor.evaluation.evaluate_sts` of the start model (``tasks="stsb"``).
        runs: name -> :class:`~sbert_tutor.training.recipe.TrainRun`; each run's encoder is
            evaluated here on STSb test.

    Columns: ``objective``, ``steps``, ``batch size``, ``examples``, ``texts per example``,
    ``train seconds``, ``final loss`` (mean of the last 10 steps), ``STSb test Spearman`` and
    ``change`` (vs the start model). ``attrs["after"]`` keeps each run's evaluation table.
    """
    from sbert_tutor.evaluation import evaluate_sts

    base = stsb_spearman(before)
    rows = [{"setup": start_label, "STSb test Spearman": base}]
    after = {}
    for name, run in runs.items():
        after[name] = evaluate_sts(run.encoder, tasks="stsb", show_progress=False)
        log = run.log
        rows.append(
            {
                "setup": name,
                "objective": log["loss"]["name"],
                "steps": log["steps_done"],
                "batch size": log["config"]["batch_size"],
                "examples": log["train_data"]["examples"],
                "texts per example": len(log["train_data"]["columns"]),
                "train seconds": round(float(run.seconds), 1),
                "final loss": run.record.final_loss(),
                "STSb test Spearman": stsb_spearman(after[name]),
            }
        )
    table = pd.DataFrame(rows).set_index("setup")
    for col in ("steps", "batch size", "examples", "texts per example"):
        if col in table:
            table[col] = table[col].astype("Int64")
    table["change"] = table["STSb test Spearman"] - base
    table.attrs["after"] = after
    return table


def measured_rows(
    table: pd.DataFrame, metric: str = STSB_METRIC, prefix: str = ""
) -> list[dict[str, Any]]:
    """Rows ``{"setup", "metric", "value"}`` of a :func:`runs_table` (setup = ``prefix`` + row
    name), for :func:`~sbert_tutor.reporting.measured_vs_published`."""
    return [
        {"setup": f"{prefix}{name}", "metric": metric, "value": float(v)}
        for name, v in table["STSb test Spearman"].items()
    ]


def published_stsb_rows(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Published STSb test Spearman rows (with their source) from :data:`PUBLISHED_STSB`."""
    names = list(PUBLISHED_STSB) if names is None else list(names)
    unknown = [n for n in names if n not in PUBLISHED_STSB]
    if unknown:
        raise KeyError(f"no published number for {unknown}; known: {list(PUBLISHED_STSB)}")
    return [
        {
            "setup": name,
            "metric": STSB_METRIC,
            "value": PUBLISHED_STSB[name][0],
            "source": PUBLISHED_STSB[name][1],
        }
        for name in names
    ]


# --------------------------------------------------------------------------- plots
def _axes(ax=None, figsize=(7, 4)):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def plot_scale_sweep(sweep: pd.DataFrame, ax=None):
    """Loss and chance level vs the scale (log x axis), with p(positive) on a second axis."""
    ax = _axes(ax)
    ax.semilogx(sweep["scale"], sweep["loss"], "o-", label="MNRL loss")
    ax.semilogx(sweep["scale"], sweep["chance log K"], "--", color="grey", label="chance: log K")
    ax.set_xlabel("scale s = 1 / temperature")
    ax.set_ylabel("loss (nats)")
    right = ax.twinx()
    right.semilogx(sweep["scale"], sweep["p(positive)"], "s:", color="C1", label="p(positive)")
    right.set_ylabel("mean softmax probability of the positive")
    right.set_ylim(0, 1)
    lines = ax.get_lines() + right.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], fontsize=8, loc="center right")
    return ax


def plot_candidate_softmax(table: pd.DataFrame, ax=None):
    """Softmax probability of each shown candidate at each scale (grouped bars)."""
    ax = _axes(ax, figsize=(8, 4))
    cols = [c for c in table.columns if str(c).startswith("p (s=")]
    x = np.arange(len(table))
    width = 0.8 / len(cols)
    for i, c in enumerate(cols):
        ax.bar(x + i * width, table[c], width, label=c)
    labels = [
        f"{'* ' if k == 'own positive' else ''}{cos:.2f}"
        for k, cos in zip(table["kind"], table["cosine"], strict=True)
    ]
    ax.set_xticks(x + width * (len(cols) - 1) / 2, labels)
    ax.set_xlabel("candidates by cosine with the anchor (* = its own positive)")
    ax.set_ylabel("softmax probability")
    ax.legend(fontsize=8)
    return ax


def plot_batch_size_sweep(sweep: pd.DataFrame, axes=None):
    """Loss vs chance level (left) and in-batch top-1 accuracy (right) against the batch size."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    left, right = axes
    n = sweep["batch size N"]
    left.semilogx(n, sweep["loss"], "o-", label="MNRL loss (fixed embeddings)")
    left.semilogx(n, sweep["chance log K"], "--", color="grey", label="chance: log K")
    left.set_xlabel("batch size N")
    left.set_ylabel("loss (nats)")
    left.legend(fontsize=8)
    right.semilogx(n, sweep["top-1 accuracy %"], "s-", color="C1")
    right.set_xlabel("batch size N")
    right.set_ylabel("in-batch top-1 accuracy %")
    for a in axes:
        a.set_xticks(list(n), [str(v) for v in n])
    return axes


def plot_duplicates(report: pd.DataFrame, ax=None):
    """Share of batches holding a shared text, random vs no-duplicates batches."""
    ax = _axes(ax, figsize=(6, 3.8))
    for sampler, part in report.groupby("sampler", sort=False):
        ax.plot(part["batch size"], part["batches with a shared text %"], "o-", label=sampler)
    ax.set_xscale("log", base=2)
    sizes = sorted(report["batch size"].unique())
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("batch size")
    ax.set_ylabel("batches with a text in two examples %")
    ax.set_ylim(-3, 103)
    ax.legend(fontsize=8)
    return ax
