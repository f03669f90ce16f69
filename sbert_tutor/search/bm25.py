r"""BM25, the lexical baseline a dense retriever has to beat, through the ``bm25s`` library.

A passage :math:`D` is scored for a query :math:`Q` by the terms they share (Lucene's variant,
the one Anserini runs):

.. math::

    \operatorname{BM25}(D, Q) = \sum_{t \in Q} \operatorname{idf}(t)\,
        \frac{f(t, D)}{f(t, D) + k_1 \bigl(1 - b + b\, |D| / \overline{|D|}\bigr)},

    \operatorname{idf}(t) = \log\Bigl(1 + \frac{N - n_t + 0.5}{n_t + 0.5}\Bigr)

with :math:`f(t, D)` the count of term :math:`t` in :math:`D`, :math:`|D|` its length in terms,
:math:`\overline{|D|}` the mean length, :math:`N` the number of passages and :math:`n_t` those
containing :math:`t`. :math:`k_1` saturates repeated terms, :math:`b` normalises by length; the
defaults are Anserini's tuned MS MARCO passage values :math:`k_1 = 0.82`, :math:`b = 0.68`.

Texts become terms as Lucene's English analyser makes them, nearly: lower-cased words
(``\w+``), Lucene's 33 English stop words removed, Porter-stemmed (PyStemmer). Lucene's
tokenizer keeps some tokens whole that this one splits (``8,849``) and removes possessive
``'s``; the scores are therefore close to Anserini's, not equal.

Install with ``pip install "sbert-tutor[bm25]"``.

References:
    Robertson and Zaragoza (2009), "The Probabilistic Relevance Framework: BM25 and Beyond";
    Lù (2024), "BM25S: Orders of magnitude faster lexical search via eager sparse scoring";
    Lin et al. (2021), "Pyserini" (Anserini's MS MARCO regressions: k1 = 0.82, b = 0.68).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["ANSERINI_B", "ANSERINI_K1", "BM25Index"]

#: Anserini's BM25 parameters tuned for the MS MARCO passage collection.
ANSERINI_K1 = 0.82
#: Anserini's b (length normalisation) for the MS MARCO passages; k1 is :data:`ANSERINI_K1`.
ANSERINI_B = 0.68
_TOKEN_PATTERN = r"(?u)\b\w+\b"


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as exc:  # pragma: no cover - only without the bm25 extra
        raise ImportError(
            'BM25 needs the bm25s package: pip install "sbert-tutor[bm25]" (or pip install bm25s '
            "PyStemmer)"
        ) from exc
    return bm25s


def _stemmer() -> Any:
    try:
        import Stemmer
    except ImportError as exc:  # pragma: no cover
        raise ImportError(
            'BM25 stems with PyStemmer: pip install "sbert-tutor[bm25]" (or pip install PyStemmer)'
        ) from exc
    return Stemmer.Stemmer("porter")


def analyze(texts: Sequence[str]) -> list[list[str]]:
    """The terms of each text: lower-cased ``\\w+`` words, English stop words out, Porter stems.

    >>> analyze(["The runners were running in the park"])
    [['runner', 'were', 'run', 'park']]
    """
    bm25s = _bm25s()
    return bm25s.tokenize(
        list(texts),
        token_pattern=_TOKEN_PATTERN,
        stopwords="en",
        stemmer=_stemmer(),
        return_ids=False,
        show_progress=False,
    )


class BM25Index:
    """A BM25 index of a corpus (``{pid: passage}`` or a list of passages, ids ``"0"``, ``"1"``...).

    Args:
        corpus: the passages.
        k1, b: BM25's parameters (default Anserini's MS MARCO values).

    Example:
        >>> index = BM25Index({"d1": "cats purr", "d2": "dogs bark loudly", "d3": "a cat sleeps"})
        >>> sorted(index.search({"q": "sleeping cats"}, top_k=2)["q"])
        ['d1', 'd3']
    """

    def __init__(
        self,
        corpus: Mapping[str, str] | Sequence[str],
        k1: float = ANSERINI_K1,
        b: float = ANSERINI_B,
    ) -> None:
        if isinstance(corpus, Mapping):
            self.ids = [str(pid) for pid in corpus]
            texts = [str(corpus[pid]) for pid in corpus]
        else:
            self.ids = [str(i) for i in range(len(corpus))]
            texts = [str(t) for t in corpus]
        if not texts:
            raise ValueError("the corpus is empty: BM25 needs at least one passage")
        if not k1 >= 0 or not 0 <= b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1, self.b = float(k1), float(b)
        self._model = _bm25s().BM25(k1=self.k1, b=self.b, method="lucene")
        self._model.index(analyze(texts), show_progress=False)

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """BM25 of every query against every passage: ``float32`` ``[len(queries), len(self)]``,
        passages in corpus order (0 where a passage shares no term with the query)."""
        out = np.zeros((len(queries), len(self.ids)), dtype=np.float32)
        for row, terms in enumerate(analyze([str(q) for q in queries])):
            if terms:
                out[row] = self._model.get_scores(terms)
        return out

    def search(
        self, queries: Mapping[str, str] | Sequence[str], top_k: int = 100
    ) -> dict[str, dict[str, float]]:
        """The ``top_k`` passages of each query: a run ``{qid: {pid: score}}`` (list queries get
        ids ``"0"``, ``"1"``...) that :func:`sbert_tutor.evaluate_run` scores. Passages that
        share no term with a query are left out (their score is 0)."""
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        if isinstance(queries, Mapping):
            qids, texts = [str(q) for q in queries], [str(queries[q]) for q in queries]
        else:
            qids, texts = [str(i) for i in range(len(queries))], [str(t) for t in queries]
        k = min(top_k, len(self.ids))
        tokens = analyze(texts)
        run: dict[str, dict[str, float]] = {}
        for qid, terms in zip(qids, tokens, strict=True):
            docs, scores = self._model.retrieve([terms or [""]], k=k, show_progress=False)
            run[qid] = {
                self.ids[int(d)]: float(s)
                for d, s in zip(np.ravel(docs), np.ravel(scores), strict=True)
                if s > 0
            }
        return run
