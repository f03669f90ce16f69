"""Cross-encoders: score a text pair by reading both texts together (book: re-ranking).

* :mod:`.model` -- :class:`CrossEncoder`: load, ``predict``, ``rank``, ``save`` (the math is in
  its docstring);
* :mod:`.folder` -- sentence-transformers' CrossEncoder folders, every version: where the
  activation and the length limit are written.

Training uses the library's one trainer with a cross-encoder loss (``ce_bce``, ``ce_mse``; see
:mod:`sbert_tutor.training.objectives`).
"""

from sbert_tutor.cross_encoder.model import CrossEncoder, NewHeadWarning

__all__ = ["CrossEncoder", "NewHeadWarning"]
