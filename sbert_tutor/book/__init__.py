"""The book layer: what the chapters of the sbert-tutor book compute, show and compare with.

Everything here serves a chapter. It builds on the library (``sbert_tutor`` outside this
package); the library never imports it (a test walks the import graph), and a practitioner who
only wants sentence embeddings needs none of it. Importing it changes no global setting.

Rule of the folder: the book layer may import any part of the library; nothing outside it
imports it.

It has two floors. The ground floor is what several chapters share; above it, one module per
chapter (:mod:`sbert_tutor.book.chapters`, named like the chapter's notebook) owns that chapter's
sizes under each profile, how its paper profile compares with its paper, its experiments and its
figures. A chapter module imports the ground floor and the library, never
another chapter module.

=====================================  =========================================================
ground floor (``sbert_tutor.book.``)   what it holds
=====================================  =========================================================
:mod:`.profiles`                       the three profiles (quick, t4, paper) and which is in use
:mod:`.sizes`                          what every chapter's sizes share; ``sizes_for``
:mod:`.analysis`                       anisotropy, random-pair cosines, PCA (chapter 3)
:mod:`.deviations`                     what the paper profile still does differently, and why
:mod:`.run_times`                      measured minutes (and GPU memory) a chapter, per run
:mod:`.configs`                        a chapter's TrainingConfig from its sizes (amp, progress)
:mod:`.published`                      the papers' published numbers, with their sources
:mod:`.recorded`                       recorded runs (``results/*.json``, package data)
:mod:`.reporting`                      measured beside published; provenance and run tables
:mod:`.figures`, :mod:`.drawing`       plot and diagram primitives; the shared loss curves
:mod:`.display`                        how the chapters' tables show text; glued prose on Colab
:mod:`.seeds`, :mod:`.weak_start`      runs over seeds with verdicts; the quick profile's start
:mod:`.gradients`                      autograd beside a gradient written on the page
:mod:`.fixed_embeddings`               real data encoded once (chapters 7-10)
:mod:`.cost`                           measured encode/pair-scoring rates (chapters 2, 9, 13, 14)
=====================================  =========================================================

=====================================  =========================================================
chapter (``book/``)                    module (``sbert_tutor.book.chapters.``)
=====================================  =========================================================
02 cost of cross-encoders              :mod:`.cost_of_cross_encoders`
03 Siamese pooling and STS             :mod:`.siamese_pooling_sts`
03a a training loop                    :mod:`.training_loop`
04 retrieval metrics                   :mod:`.retrieval_metrics`
05 MS MARCO                            :mod:`~.chapters.msmarco`
06 classification objective            :mod:`.classification_objective`
07 regression objective                :mod:`.regression_objective`
08 triplet objective                   :mod:`.triplet_objective`
09 multiple negatives ranking          :mod:`.multiple_negatives_ranking`
10 SupMPN                              :mod:`.supmpn`
11 semantic-search guidance            :mod:`.semantic_search_guided`
11a transfer tasks                     :mod:`.transfer_tasks`
12 the distance dilemma                :mod:`.distance_dilemma`
12a training a retriever               :mod:`.training_a_retriever`
13 computational efficiency            :mod:`.computational_efficiency`
14 re-ranking                          :mod:`.reranking`
15 compressed embeddings               :mod:`.compressed_embeddings`
16 approximate indexes                 :mod:`.approximate_indexes`
=====================================  =========================================================
"""

import importlib.util

__all__: list[str] = []

if importlib.util.find_spec("matplotlib") is None:  # the core installs without it
    raise ImportError(
        "the book layer (sbert_tutor.book) draws with matplotlib, which the core library does not "
        "need: pip install 'sbert-tutor[plots]' (or 'sbert-tutor[colab]' for a whole chapter)"
    )
