"""Experiments behind the book's chapters: the logic a notebook calls in one short line.

* :mod:`.objectives` -- chapters 6-8, SBERT's training objectives: gradients derived by hand
  and checked against autograd, short training runs compared on STSb (the concatenation
  ablation, the triplet distances), before/after tables, the regression target scale and the
  triplet margin on fixed embeddings, and the SBERT paper's published numbers.
* :mod:`.contrastive` -- chapters 9-10, MNRL and SupMPN: losses on fixed embeddings (scale,
  batch size, hard negatives, SupMPN's denominator), the anchor gradient by hand, duplicate
  texts in random vs no-duplicates batches, SupMPN group sources, run tables, published rows;
* :mod:`.search_guided` -- chapter 11, teacher-mined positives from a sentence pool vs
  SimCSE's dropout positives.
"""

from sbert_tutor.experiments import contrastive, objectives, search_guided

__all__ = ["contrastive", "objectives", "search_guided"]
