r"""Retrieve, then re-rank: a cross-encoder re-scores a bi-encoder's top-k (book chapter 14).

A bi-encoder ranks the corpus for query :math:`q` by :math:`s_{\text{bi}}(q, d) = \cos(u_q,
v_d)`; call its ranking :math:`d_1, d_2, \dots` (best first, as
:func:`~sbert_tutor.metrics.rank_documents` sorts a run). Re-ranking the top :math:`k` scores each pair :math:`(q, d_i)`,
:math:`i \le k`, with a cross-encoder, :math:`s_{\text{ce}}(q, d_i) = a(z(q, d_i))`
(:class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder`), and sorts those :math:`k` by it. The passages
below rank :math:`k` keep the bi-encoder's order *under* the re-ranked ones, so a measure at a
cutoff beyond :math:`k` still sees them:

.. math::

    \text{score}'(q, d_i) =
    \begin{cases}
        s_{\text{ce}}(q, d_i) & i \le k, \\
        m_q - (i - k) & i > k,
    \end{cases}
    \qquad m_q = \min_{j \le k} s_{\text{ce}}(q, d_j).

The cost is :math:`k` cross-encoder forward passes a query (nothing can be pre-computed), which
is why :math:`k` is small and the bi-encoder does the search.

* :func:`cross_encoder_scores` -- :math:`s_{\text{ce}}` of each query's first :math:`k`
  candidates (one batched ``predict`` over every pair);
* :func:`merge_reranked` -- the pure re-ordering above, from scores already computed (one
  scoring of the top :math:`K` serves every :math:`k \le K`);
* :func:`rerank` -- both;
* :class:`BiEncoderScorer` -- a bi-encoder read as a pair scorer, :math:`s_{\text{bi}}(q, d)` for
  each pair (a re-ranker or a teacher that is a bi-encoder).

The returned runs are ``{qid: {pid: score}}``, what
:func:`sbert_tutor.metrics.evaluate_run` and :mod:`sbert_tutor.evaluation.retrieval` score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from sbert_tutor.metrics import Run, rank_documents

__all__ = ["BiEncoderScorer", "PairScorer", "cross_encoder_scores", "merge_reranked", "rerank"]


class PairScorer(Protocol):
    """Anything that scores ``(text1, text2)`` pairs: the library's
    :class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder` or sentence-transformers' ``CrossEncoder``."""

    def predict(
        self, inputs: Any, batch_size: int = 32, show_progress_bar: bool | None = None
    ) -> Any: ...


class BiEncoderScorer:
    r"""A bi-encoder read as a :class:`PairScorer`: ``predict`` scores each ``(query, passage)``
    pair by the cosine of the two embeddings, :math:`s_{\text{bi}}(q, d) = \cos(u_q, v_d)`, as a
    cross-encoder's ``predict`` scores it. Each distinct text is encoded once.

    Args:
        encoder: anything with ``encode(texts, batch_size=, normalize_embeddings=,
            show_progress_bar=)`` (a :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder`
            or sentence-transformers' ``SentenceTransformer``).
    """

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.name = getattr(encoder, "name", "bi-encoder")

    def predict(
        self,
        pairs: Sequence[Sequence[str]],
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        activation_fn: Callable[[Any], Any] | None = None,
    ) -> np.ndarray:
        """Cosine of each pair (float32); ``activation_fn`` (as a cross-encoder's ``predict``
        takes it) applied to the cosines, as a torch tensor, when given."""
        texts = list(dict.fromkeys(t for pair in pairs for t in pair[:2]))
        emb = np.asarray(
            self.encoder.encode(
                texts,
                batch_size=batch_size,
                normalize_embeddings=True,
                show_progress_bar=bool(show_progress_bar),
            )
        )
        row = {t: i for i, t in enumerate(texts)}
        q = emb[[row[p[0]] for p in pairs]]
        d = emb[[row[p[1]] for p in pairs]]
        scores = (q * d).sum(axis=1).astype(np.float32)
        if activation_fn is not None:
            import torch

            scores = activation_fn(torch.from_numpy(scores)).detach().cpu().numpy()
        return scores


def _check_k(k: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"k must be a positive integer or None (all candidates), got {k!r}")


def cross_encoder_scores(
    cross_encoder: PairScorer,
    queries: Mapping[str, str],
    run: Run,
    passages: Mapping[str, str],
    k: int | None = None,
    batch_size: int = 32,
    show_progress_bar: bool | None = None,
) -> dict[str, dict[str, float]]:
    """The cross-encoder's score of each query's first ``k`` candidates of ``run``.

    Args:
        cross_encoder: anything with ``predict(pairs, batch_size=, show_progress_bar=)``
            returning one score a pair.
        queries: ``{qid: text}`` for every query of ``run``.
        run: the first-stage ranking, ``{qid: {pid: score}}`` (any order; ranked with
            :func:`~sbert_tutor.metrics.rank_documents`).
        passages: ``{pid: text}`` for every candidate scored.
        k: candidates scored a query (``None``: all of them).
        batch_size: pairs a forward pass; show_progress_bar: passed to ``predict``.

    Returns:
        ``{qid: {pid: s_ce}}`` for the first ``k`` candidates of each query.

    Raises:
        KeyError: a query or a candidate has no text (the message names it).
        ValueError: ``k`` is not a positive integer, or the scorer returned one score per pair
            not (e.g. a model with several labels).
    """
    _check_k(k)
    keys: list[tuple[str, str]] = []
    pairs: list[tuple[str, str]] = []
    for qid, docs in run.items():
        if qid not in queries:
            raise KeyError(f"query {qid!r} of the run has no text in queries")
        for pid in rank_documents(docs)[:k]:
            if pid not in passages:
                raise KeyError(f"passage {pid!r} (query {qid!r}) has no text in passages")
            keys.append((qid, pid))
            pairs.append((queries[qid], passages[pid]))
    out: dict[str, dict[str, float]] = {str(q): {} for q in run}
    if not pairs:
        return out
    scores = cross_encoder.predict(
        pairs, batch_size=batch_size, show_progress_bar=show_progress_bar
    )
    listed = scores.tolist() if hasattr(scores, "tolist") else list(scores)
    values = [float(s) for s in listed] if isinstance(listed, list) else [float(listed)]
    if len(values) != len(pairs):
        raise ValueError(
            f"the scorer returned {len(values)} values for {len(pairs)} pairs; re-ranking needs "
            "one score a pair (a model with num_labels=1)"
        )
    for (qid, pid), score in zip(keys, values, strict=True):
        out[qid][pid] = score
    return out


def merge_reranked(
    run: Run, scores: Mapping[str, Mapping[str, float]], k: int | None = None
) -> Run:
    r"""Re-order each query's first ``k`` candidates of ``run`` by ``scores`` (module docstring).

    The first ``k`` passages of the ranking get their cross-encoder score; the rest keep their
    order below them with scores :math:`m_q - 1, m_q - 2, \dots`. A pure function: no model.

    Args:
        run: the first-stage ranking ``{qid: {pid: score}}``.
        scores: ``{qid: {pid: s_ce}}`` covering at least each query's first ``k`` candidates
            (e.g. :func:`cross_encoder_scores` with the same or a larger ``k``).
        k: candidates re-ranked a query (``None``: all).

    Raises:
        KeyError: a candidate among the first ``k`` has no score.

    Example:
        >>> run = {"q": {"a": 0.9, "b": 0.8, "c": 0.7}}
        >>> merge_reranked(run, {"q": {"a": 0.1, "b": 0.6}}, k=2)
        {'q': {'b': 0.6, 'a': 0.1, 'c': -0.9}}
    """
    _check_k(k)
    out: dict[str, dict[str, float]] = {}
    for qid, docs in run.items():
        ranking = rank_documents(docs)
        head, tail = ranking[:k], ranking[len(ranking) if k is None else k :]
        got = scores.get(qid, {})
        missing = [p for p in head if p not in got]
        if missing:
            raise KeyError(
                f"query {qid!r}: no cross-encoder score for {missing[:3]} among its first "
                f"{len(head)} candidates; score at least k={k} candidates a query"
            )
        order = sorted(range(len(head)), key=lambda i: (-float(got[head[i]]), i))  # dict order only
        reranked = {head[i]: float(got[head[i]]) for i in order}
        floor = min(reranked.values()) if reranked else 0.0
        reranked.update({p: floor - (i + 1) for i, p in enumerate(tail)})
        out[str(qid)] = reranked
    return out


def rerank(
    cross_encoder: PairScorer,
    queries: Mapping[str, str],
    run: Run,
    passages: Mapping[str, str],
    k: int | None = None,
    batch_size: int = 32,
    show_progress_bar: bool | None = None,
) -> Run:
    """Re-rank each query's first ``k`` candidates of ``run`` with ``cross_encoder``.

    :func:`cross_encoder_scores` then :func:`merge_reranked`; the result is a run in the format
    :func:`sbert_tutor.metrics.evaluate_run` scores. Arguments as :func:`cross_encoder_scores`.

    Example:
        >>> from sbert_tutor import CrossEncoder  # doctest: +SKIP
        >>> ce = CrossEncoder.from_pretrained("cross-encoder/ms-marco-MiniLM-L6-v2")  # doctest: +SKIP
        >>> reranked = rerank(ce, queries, bi_encoder_run, corpus, k=20)  # doctest: +SKIP
    """
    scores = cross_encoder_scores(
        cross_encoder, queries, run, passages, k, batch_size, show_progress_bar
    )
    return merge_reranked(run, scores, k)
