"""The book layer: what the chapters of the sbert-tutor book compute, show and compare with.

Everything here serves a chapter: its sizes under the quick and full profiles, the experiments
it runs in one call, its figures and the published numbers it shows. It builds on the library
(``sbert_tutor`` outside this package); the library never imports it (a test walks the import
graph). A practitioner who only wants sentence embeddings needs none of it.

=====================================  =========================================================
chapter (``book/``)                    module (``sbert_tutor.book.``)
=====================================  =========================================================
every chapter                          :mod:`.sizes` (quick/full sizes), :mod:`.published`,
                                       :mod:`.plots`, :mod:`.reporting` (measured vs published,
                                       provenance tables)
02, 05, 06, 08, 09, 10                 :mod:`.diagrams` (architecture and loss diagrams)
02 cost of cross-encoders              :mod:`.cost`
03 Siamese pooling and STS             :mod:`.pooling_comparison`
03b transfer tasks                     :mod:`.transfer`
04 retrieval metrics, 05 MS MARCO      :mod:`.retrieval_aids`
06-11 training runs                    :mod:`.weak_start` (the quick profile's start model),
                                       :mod:`.seeds` (every variant over seeds: mean, spread,
                                       verdict)
06 classification objective            :mod:`.gradients`, :mod:`.probes`, :mod:`.runs`
07 regression objective                :mod:`.gradients`, :mod:`.fixed_embeddings`,
                                       :mod:`.sweeps`, :mod:`.runs`
08 triplet objective                   :mod:`.fixed_embeddings`, :mod:`.sweeps`, :mod:`.runs`
09 multiple negatives ranking          :mod:`.fixed_embeddings`, :mod:`.gradients`,
                                       :mod:`.sweeps`, :mod:`.batches`, :mod:`.runs`
10 SupMPN                              :mod:`.fixed_embeddings`, :mod:`.sweeps`,
                                       :mod:`.nli_groups`, :mod:`.runs`
11 semantic-search guidance            :mod:`.search_guided`, :mod:`.runs`
12 the distance dilemma                :mod:`.distance_dilemma`
13 computational efficiency            :mod:`.speed`, :mod:`.cost`
=====================================  =========================================================

Importing this package widens pandas' text columns (``display.max_colwidth``, 50 characters by
default) to :data:`TEXT_COLUMN_WIDTH`, so that the chapters' tables show whole sentences, run
labels and provenance instead of cutting them at 50 characters; longer texts (MS MARCO passages,
chapter 12's notes on its training data) still end in "...".
"""

import pandas as pd

TEXT_COLUMN_WIDTH = 300
"""Characters of a text cell that a chapter's table shows before pandas cuts it with "..."."""

pd.set_option("display.max_colwidth", TEXT_COLUMN_WIDTH)
