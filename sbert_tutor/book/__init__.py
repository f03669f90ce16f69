"""The book layer: what the chapters of the sbert-tutor book compute, show and compare with.

Rule of the folder: the book layer may import any part of the library; nothing outside it
imports it (a test walks the import graph). Importing it changes no global setting.

The ground floor is what several chapters share: the profiles (:mod:`.profiles`) and sizes
(:mod:`.sizes`, :mod:`.configs`, :mod:`.deviations`, :mod:`.run_times`); the papers' and the
recorded numbers and how they are shown (:mod:`.published`, :mod:`.recorded`,
:mod:`.reporting`, :mod:`.display`); plots and diagrams (:mod:`.figures`, :mod:`.drawing`);
runs over seeds and their start models (:mod:`.seeds`, :mod:`.weak_start`); and
:mod:`.analysis`, :mod:`.gradients`, :mod:`.fixed_embeddings`, :mod:`.cost`. Above it,
:mod:`sbert_tutor.book.chapters` holds one module per chapter, named like its notebook
(``book/NN_<name>.ipynb``), importing the ground floor and the library, never another chapter:
``cost_of_cross_encoders`` (02), ``siamese_pooling_sts`` (03), ``training_loop`` (03a),
``retrieval_metrics`` (04), ``msmarco`` (05), ``classification_objective`` (06),
``regression_objective`` (07), ``triplet_objective`` (08), ``multiple_negatives_ranking`` (09),
``supmpn`` (10), ``semantic_search_guided`` (11), ``transfer_tasks`` (11a),
``distance_dilemma`` (12), ``training_a_retriever`` (12a), ``computational_efficiency`` (13),
``reranking`` (14), ``compressed_embeddings`` (15), ``approximate_indexes`` (16).
"""

import importlib.util

__all__: list[str] = []

if importlib.util.find_spec("matplotlib") is None:  # the core installs without it
    raise ImportError(
        "the book layer (sbert_tutor.book) draws with matplotlib, which the core library does not "
        "need: pip install 'sbert-tutor[plots]' (or 'sbert-tutor[colab]' for a whole chapter)"
    )
