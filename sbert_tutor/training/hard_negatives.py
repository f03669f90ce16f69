r"""Hard-negative mining with a dense model or BM25, and a cross-encoder teacher's margins.

:func:`mine_hard_negatives` turns (anchor, positive) pairs into (anchor, positive, negative)
triplets (or n-tuples) whose negatives are the corpus texts the model ranks highest for the
anchor, minus those that are likely *false* negatives. With unit embeddings :math:`e(\cdot)` the
candidates of anchor :math:`a` are the corpus texts :math:`c` by score
:math:`s(a, c) = e(a)^{\top} e(c)` (cosine), best first; the positives of :math:`a` are never
candidates (``model="bm25"``: :math:`s` is BM25, :mod:`sbert_tutor.search.bm25`, and a text that shares no
term with the anchor is no candidate). With
:math:`s^+ = \min_{p \in P(a)} s(a, p)`, the lowest score of :math:`a`'s
positives, a candidate is dropped when

* ``absolute_margin`` :math:`\mu`: :math:`s(a, c) + \mu > s^+` (it is not clearly below every
  positive);
* ``relative_margin`` :math:`\rho`: :math:`s(a, c) > s^+ - \rho\,\lvert s^+ \rvert`
  (NV-Retriever's "TopK-PercPos" with :math:`\rho = 0.05`);
* ``max_score`` / ``min_score``: :math:`s(a, c)` above / below a bound.

With a ``cross_encoder`` (and one of these filters) the scores :math:`s` of the candidates and
of the positives are the cross-encoder's instead: a more accurate judge of "is this actually
relevant?" than the model that retrieved them. The kept candidates are ranked again, the first
``range_min`` skipped (the ranks where unlabelled positives hide), and ``num_negatives`` taken
from the next ``range_max - range_min``: the best (``"top"``) or a random sample.

:func:`teacher_margins` scores (query, positive, negative) triplets with a cross-encoder once,
the labels of the ``margin_mse`` objective.

References:
    Karpukhin et al. (2020), "Dense Passage Retrieval for Open-Domain Question Answering" (BM25
    hard negatives); Xiong et al. (2021), "Approximate Nearest Neighbor Negative Contrastive
    Learning" (ANCE: negatives from the model being trained); Qu et al. (2021), "RocketQA" (a
    cross-encoder removes false negatives); Moreira et al. (2024), "NV-Retriever: Improving
    text embedding models with effective hard-negative mining" (positive-aware margins).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from sbert_tutor.data.table import DataTable
from sbert_tutor.encoders.protocol import Encoder
from sbert_tutor.validation import check_choice

__all__ = ["mine_hard_negatives", "teacher_margins"]

#: The shapes :func:`mine_hard_negatives` returns (sentence-transformers' names).
_OUTPUT_FORMATS = ("triplet", "n-tuple", "labeled-pair")
#: How the negatives are taken from the kept candidates.
_SAMPLING_STRATEGIES = ("top", "random")


def _pairs_frame(
    dataset: Any, anchor_column_name: str | None, positive_column_name: str | None
) -> tuple[pd.DataFrame, str, str]:
    """The (anchor, positive) pairs as a DataFrame and the two column names."""
    if isinstance(dataset, DataTable):
        frame = dataset.table
    elif isinstance(dataset, pd.DataFrame):
        frame = dataset
    elif isinstance(dataset, Mapping):
        frame = pd.DataFrame({k: list(v) for k, v in dataset.items()})
    else:
        rows = [tuple(row) for row in dataset]
        if rows and any(len(row) < 2 for row in rows):
            raise ValueError(
                "dataset rows must be (anchor, positive) pairs; pass a DataFrame or a dict of "
                "columns to name them"
            )
        frame = pd.DataFrame([row[:2] for row in rows], columns=["anchor", "positive"])
    columns = [str(c) for c in frame.columns]
    if len(frame) == 0:
        raise ValueError("the dataset is empty: pass at least one (anchor, positive) pair")
    if len(columns) < 2:
        raise ValueError(f"the dataset needs an anchor and a positive column, got {columns}")
    anchor = anchor_column_name if anchor_column_name in columns else columns[0]
    positive = positive_column_name if positive_column_name in columns else columns[1]
    return frame, anchor, positive


def _check_options(
    range_min: int, range_max: int, num_negatives: int, output_format: str, strategy: str
) -> None:
    check_choice(output_format, _OUTPUT_FORMATS, "output_format")
    check_choice(strategy, _SAMPLING_STRATEGIES, "sampling_strategy")
    if num_negatives < 1:
        raise ValueError(f"num_negatives must be at least 1, got num_negatives={num_negatives}")
    if range_min < 0:
        raise ValueError(f"range_min must be non-negative, got range_min={range_min}")
    if range_min >= range_max:
        raise ValueError(
            f"range_min must be smaller than range_max, got range_min={range_min} and "
            f"range_max={range_max}"
        )
    if num_negatives > range_max - range_min:
        raise ValueError(
            f"cannot mine {num_negatives} negatives per query: only {range_max - range_min} "
            f"candidates remain after skipping the first range_min={range_min} of "
            f"range_max={range_max}; lower num_negatives or range_min, or raise range_max"
        )


def mine_hard_negatives(
    dataset: Any,
    model: Encoder | Literal["bm25"],
    anchor_column_name: str | None = None,
    positive_column_name: str | None = None,
    corpus: Sequence[str] | None = None,
    cross_encoder: Any = None,
    range_min: int = 0,
    range_max: int | None = None,
    max_score: float | None = None,
    min_score: float | None = None,
    absolute_margin: float | None = None,
    relative_margin: float | None = None,
    num_negatives: int = 3,
    sampling_strategy: Literal["top", "random"] = "top",
    output_format: Literal["triplet", "n-tuple", "labeled-pair"] = "triplet",
    output_scores: bool = False,
    batch_size: int = 32,
    chunk_size: int = 16384,
    seed: int = 0,
) -> pd.DataFrame:
    """Add hard negatives to (anchor, positive) pairs (the module docstring has the rules).

    Keyword names, defaults and the returned columns are sentence-transformers'
    ``sentence_transformers.util.mine_hard_negatives`` where it has the option; on a corpus
    without ties in the scores the result is the same table (tested).

    Args:
        dataset: the pairs: a DataFrame, a :class:`~sbert_tutor.data.table.DataTable`, a dict of
            columns, or a list of ``(anchor, positive)`` tuples. An anchor may have several
            positives (several rows); every one is excluded from its candidates.
        model: the retriever that ranks the corpus: a ``SentenceEncoder`` (embeddings are unit
            length, the score is the cosine) or ``"bm25"`` (:class:`~sbert_tutor.search.bm25.BM25Index`
            over the corpus and the positives, Anserini's parameters; the margins and score
            bounds are then in BM25 units).
        anchor_column_name, positive_column_name: default the first and second column.
        corpus: texts to mine from, besides the positives (default: the positives only).
        cross_encoder: rescore the candidates and the positives (e.g. a
            :class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder`; anything with ``predict(pairs,
            batch_size=...)``), used when a margin or score bound is given.
        range_min: skip the ``range_min`` best candidates.
        range_max: look at the ``range_max`` best candidates (default: ``range_min +
            num_negatives`` plus the most positives an anchor has, ``x 10`` negatives when a
            filter is on).
        max_score, min_score, absolute_margin, relative_margin: the filters.
        num_negatives: negatives per (anchor, positive) row.
        sampling_strategy: ``"top"`` (the best kept candidates) or ``"random"``.
        output_format: ``"triplet"`` (a row per negative: anchor, positive, ``negative``),
            ``"n-tuple"`` (a row per pair: anchor, positive, ``negative_1`` ..
            ``negative_{num_negatives}``; pairs without enough negatives are dropped) or
            ``"labeled-pair"`` (anchor, text, ``label`` 1 for a positive and 0 for a negative).
        output_scores: add the scores (``scores`` = [positive, negative(s)], or ``score``
            instead of ``label``): with a cross-encoder, the cross-encoder's.
        batch_size: texts (pairs) per forward pass of the model (cross-encoder).
        chunk_size: queries scored against the whole corpus at once (bounds the score matrix).
        seed: the random generator of ``sampling_strategy="random"``.

    Returns:
        A DataFrame, rows grouped by anchor in the order anchors first appear.

    Raises:
        ValueError: an empty dataset, an unknown ``output_format`` or ``sampling_strategy``, or
            a window ``range_min..range_max`` too small for ``num_negatives``.

    Differences from sentence-transformers: the result is a pandas DataFrame, not a
    ``datasets.Dataset`` (``Dataset.from_pandas`` converts it); ``"labeled-list"``, prompts,
    ``include_positives``, FAISS, multi-process encoding and the embedding cache are not
    offered; ``model="bm25"`` is an addition; ``sampling_strategy="random"`` draws from
    ``random.Random(seed)`` instead of the global generator, so its samples differ; nothing is
    printed.
    """
    frame, anchor_col, positive_col = _pairs_frame(
        dataset, anchor_column_name, positive_column_name
    )
    filters = any(x is not None for x in (absolute_margin, relative_margin, max_score))
    all_anchors = [str(x) for x in frame[anchor_col]]
    all_positives = [str(x) for x in frame[positive_col]]
    queries = list(dict.fromkeys(all_anchors))
    query_index = {q: i for i, q in enumerate(queries)}
    texts = list(
        dict.fromkeys([*(corpus if corpus is not None else all_positives), *all_positives])
    )
    text_index = {t: i for i, t in enumerate(texts)}
    positive_ids: list[list[int]] = [[] for _ in queries]
    for anchor, positive in zip(all_anchors, all_positives, strict=True):
        ids = positive_ids[query_index[anchor]]
        if text_index[positive] not in ids:
            ids.append(text_index[positive])
    most_positives = max(len(p) for p in positive_ids)
    if range_max is None:
        wide = filters or (cross_encoder is not None and min_score is not None)
        range_max = range_min + num_negatives * (10 if wide else 1) + most_positives
    _check_options(range_min, range_max, num_negatives, output_format, sampling_strategy)

    # 1. the candidates: the corpus by cosine (or BM25), best first (-inf / -1 past its end)
    rows = [(q, p) for q in range(len(queries)) for p in positive_ids[q]]  # grouped by anchor
    width = range_max + most_positives
    k = min(width, len(texts))
    if isinstance(model, str):
        check_choice(model, ("bm25",), "model", other=" or a SentenceEncoder")
        from sbert_tutor.search.bm25 import BM25Index

        lexical = BM25Index(texts)
        parts, own = [], {}
        for i in range(0, len(queries), chunk_size):
            full = torch.as_tensor(lexical.scores(queries[i : i + chunk_size]))
            own.update({(q, p): full[q - i, p] for q, p in rows if i <= q < i + chunk_size})
            full[full <= 0] = -np.inf  # shares no term with the anchor: not a candidate
            parts.append(torch.topk(full, k=k, dim=1))
        positive_scores = torch.stack([own[row] for row in rows])
    else:
        corpus_emb = torch.as_tensor(
            model.encode(texts, batch_size=batch_size, normalize_embeddings=True)
        )
        query_emb = torch.as_tensor(
            model.encode(queries, batch_size=batch_size, normalize_embeddings=True)
        )
        parts = [
            torch.topk(query_emb[i : i + chunk_size] @ corpus_emb.T, k=k, dim=1)
            for i in range(0, len(queries), chunk_size)
        ]
        positive_scores = (query_emb[[q for q, _ in rows]] * corpus_emb[[p for _, p in rows]]).sum(
            1
        )
    scores = torch.cat([p.values for p in parts])
    indices = torch.cat([p.indices for p in parts])
    if k < width:
        scores = torch.cat([scores, scores.new_full((len(queries), width - k), -np.inf)], dim=1)
        indices = torch.cat([indices, indices.new_full((len(queries), width - k), -1)], dim=1)

    # 2. a cross-encoder's scores instead, for the filters
    if cross_encoder is not None and (filters or min_score is not None):
        for q, candidates in enumerate(indices.tolist()):
            pairs = [(queries[q], texts[c]) for c in candidates]
            scores[q] = torch.as_tensor(
                np.asarray(cross_encoder.predict(pairs, batch_size=batch_size)), dtype=scores.dtype
            )
        pairs = [(queries[q], texts[p]) for q, p in rows]
        positive_scores = torch.as_tensor(
            np.asarray(cross_encoder.predict(pairs, batch_size=batch_size)),
            dtype=positive_scores.dtype,
        )

    # 3. the filters: out go the positives and every candidate a rule rejects
    scores[indices == -1] = -np.inf
    for q, ids in enumerate(positive_ids):
        scores[q, torch.isin(indices[q], torch.tensor(ids))] = -np.inf
    if absolute_margin is not None or relative_margin is not None:
        lowest = torch.empty(len(queries), dtype=positive_scores.dtype)
        start = 0
        for q, ids in enumerate(positive_ids):
            lowest[q] = positive_scores[start : start + len(ids)].min()
            start += len(ids)
        if absolute_margin is not None:
            scores[scores + absolute_margin > lowest[:, None]] = -np.inf
        if relative_margin is not None:
            scores[scores > (lowest - lowest.abs() * relative_margin)[:, None]] = -np.inf
    if max_score is not None:
        scores[scores > max_score] = -np.inf
    if min_score is not None:
        scores[scores < min_score] = -np.inf

    # 4. rank the kept candidates again, skip range_min, take num_negatives
    negative_scores, order = torch.topk(scores, k=range_max, dim=1)
    negative_ids = torch.gather(indices, 1, order)[:, range_min:]
    negative_scores = negative_scores[:, range_min:]
    if sampling_strategy == "top":
        negative_ids = negative_ids[:, :num_negatives]
        negative_scores = negative_scores[:, :num_negatives]
    else:
        rng = random.Random(seed)
        options = (negative_ids.shape[1] - negative_scores.isinf().sum(1)).clamp(min=num_negatives)
        picked = torch.tensor([rng.sample(range(int(n)), k=num_negatives) for n in options])
        negative_ids = torch.gather(negative_ids, 1, picked)
        negative_scores, order = torch.gather(negative_scores, 1, picked).sort(
            dim=1, descending=True
        )
        negative_ids = torch.gather(negative_ids, 1, order)
    return _output(
        rows, positive_scores, negative_ids, negative_scores, queries, texts,
        (anchor_col, positive_col), output_format, output_scores,
    )  # fmt: skip


def _output(
    rows: list[tuple[int, int]],
    positive_scores: torch.Tensor,
    negative_ids: torch.Tensor,
    negative_scores: torch.Tensor,
    queries: list[str],
    texts: list[str],
    names: tuple[str, str],
    output_format: str,
    output_scores: bool,
) -> pd.DataFrame:
    """The mined rows in sentence-transformers' columns for ``output_format``."""
    anchor_col, positive_col = names
    kept = ~negative_scores.isinf()
    out: dict[str, list[Any]] = {anchor_col: [], positive_col: []}
    if output_format == "triplet":
        out["negative"] = []
        if output_scores:
            out["scores"] = []
        for r, (q, p) in enumerate(rows):
            for j in range(negative_ids.shape[1]):
                if kept[q, j]:
                    out[anchor_col].append(queries[q])
                    out[positive_col].append(texts[p])
                    out["negative"].append(texts[int(negative_ids[q, j])])
                    if output_scores:
                        out["scores"].append(
                            [float(positive_scores[r]), float(negative_scores[q, j])]
                        )
    elif output_format == "n-tuple":
        negatives: list[list[str]] = [[] for _ in range(negative_ids.shape[1])]
        scores: list[list[float]] = []
        for r, (q, p) in enumerate(rows):
            if not bool(kept[q].all()):
                continue
            out[anchor_col].append(queries[q])
            out[positive_col].append(texts[p])
            for j, column in enumerate(negatives):
                column.append(texts[int(negative_ids[q, j])])
            scores.append([float(positive_scores[r]), *map(float, negative_scores[q])])
        out.update({f"negative_{j + 1}": column for j, column in enumerate(negatives)})
        if output_scores:
            out["scores"] = scores
    else:  # labeled-pair: per anchor its positives (1), then its negatives (0)
        label = "score" if output_scores else "label"
        out[label] = []
        r = 0
        for q in range(len(queries)):
            while r < len(rows) and rows[r][0] == q:
                out[anchor_col].append(queries[q])
                out[positive_col].append(texts[rows[r][1]])
                out[label].append(float(positive_scores[r]) if output_scores else 1)
                r += 1
            for j in range(negative_ids.shape[1]):
                if kept[q, j]:
                    out[anchor_col].append(queries[q])
                    out[positive_col].append(texts[int(negative_ids[q, j])])
                    out[label].append(float(negative_scores[q, j]) if output_scores else 0)
    return pd.DataFrame(out)


def teacher_margins(
    cross_encoder: Any,
    triplets: Sequence[Sequence[str]],
    batch_size: int = 32,
) -> np.ndarray:
    r"""The teacher's margins :math:`m_i = t(q_i, p_i^+) - t(q_i, p_i^-)` of ``(query, positive,
    negative)`` triplets, with :math:`t` a cross-encoder's raw logit (no sigmoid): the labels of
    the ``margin_mse`` objective, computed once and kept with the training data.

    Returns:
        ``float32`` ``[len(triplets)]``.

    Reference:
        Hofstätter et al. (2020), "Improving Efficient Neural Ranking Models with
        Cross-Architecture Knowledge Distillation".
    """
    if not triplets:
        return np.zeros(0, dtype=np.float32)
    bad = next((i for i, row in enumerate(triplets) if len(row) < 3), None)
    if bad is not None:
        raise ValueError(
            f"triplets must be (query, positive, negative); row {bad} has {len(triplets[bad])} "
            "texts"
        )
    identity = torch.nn.Identity()
    positive = cross_encoder.predict(
        [(row[0], row[1]) for row in triplets], batch_size=batch_size, activation_fn=identity
    )
    negative = cross_encoder.predict(
        [(row[0], row[2]) for row in triplets], batch_size=batch_size, activation_fn=identity
    )
    return (np.asarray(positive) - np.asarray(negative)).astype(np.float32)
