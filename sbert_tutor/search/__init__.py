"""Search: find the corpus entries nearest a query, exactly or approximately, and re-rank them.

Rule of the folder: a module here takes embeddings (or texts, for BM25) and returns ranked ids and
scores; it never loads a model (a re-ranker or encoder is passed in) and imports only the root
modules and this folder.

* :mod:`.exact` -- :func:`~sbert_tutor.search.exact.semantic_search`: exact top-k, memory-bounded;
* :mod:`.quantize` and :mod:`.quantized` -- int8 / binary embeddings and search over them with
  rescoring;
* :mod:`.ann` -- approximate indexes (FAISS HNSW, IVF, IVF-PQ) and their recall;
* :mod:`.bm25` -- lexical search (BM25 with Anserini's settings);
* :mod:`.fusion` -- reciprocal rank fusion of several runs;
* :mod:`.rerank` -- re-ranking a first stage's candidates with a pair scorer (a cross-encoder).
"""

__all__: list[str] = []
