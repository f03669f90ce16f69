"""Named training sets, shaped for a given loss (what ``sbert-tutor train --train NAME`` loads).

=============  ===============================================================================
name           data
=============  ===============================================================================
``stsb``       STS benchmark train (5,749 pairs, scores 0-5): regression (``cosine``)
``sick``       SICK train (4,500 pairs): relatedness 1-5 for ``cosine``, entailment labels else
``nli``        SNLI + MultiNLI train from the hub (the paper's AllNLI); with ``SBERT_TUTOR_DATA``
               set, the SNLI dev+test stand-in (:func:`~sbert_tutor.data.nli.load_nli_train`)
``allnli``,    one NLI train split from the hub
``snli``,
``multinli``
a file path    your own ``.tsv`` / ``.csv`` / ``.jsonl`` with a header: text columns (+ label)
=============  ===============================================================================

NLI pairs become, per loss: labelled pairs (softmax), (premise, entailment) pairs (mnrl,
contrastive), (premise, entailment, contradiction) triplets (triplet, and mnrl with
``hard_negatives=True``) or SupMPN groups (supmpn); see :mod:`sbert_tutor.data.nli`.
"""

from __future__ import annotations

import csv
import difflib
from pathlib import Path
from typing import Any

import pandas as pd

from sbert_tutor.data import nli as nli_data
from sbert_tutor.data.sts import load_sts

TRAIN_SETS = ("stsb", "sick", "nli", "allnli", "snli", "multinli")
_SCORE_LOSSES = ("cosine",)
_NLI_LOSSES = ("softmax", "mnrl", "contrastive", "triplet", "supmpn")


def read_table(path: str | Path) -> pd.DataFrame:
    """A user's training file: ``.tsv`` / ``.csv`` (header line, quotes are text in TSV) or
    ``.jsonl`` (one JSON object a line)."""
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    if ".jsonl" in suffixes or ".json" in suffixes:
        frame = pd.read_json(p, lines=True)
    elif ".csv" in suffixes:
        frame = pd.read_csv(p, keep_default_na=False)
    elif ".tsv" in suffixes or ".txt" in suffixes:
        frame = pd.read_csv(p, sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False)
    else:
        raise ValueError(f"cannot read {p}: use a .tsv, .csv or .jsonl file with a header")
    frame.attrs.update({"source": f"file {p}", "files": [str(p)]})
    return frame


def load_training_data(
    name: str,
    loss: str,
    *,
    hard_negatives: bool = False,
    num_positives: int = 2,
    num_negatives: int = 2,
    seed: int = 0,
) -> tuple[Any, tuple[float, float] | None]:
    """Load a named training set (or a file) in the shape ``loss`` reads.

    Args:
        name: one of :data:`TRAIN_SETS` or a path to a file.
        loss: an objective name (``cosine``, ``softmax``, ``triplet``, ``mnrl``, ``supmpn``,
            ``ce``, ``contrastive``).
        hard_negatives: for ``mnrl`` on NLI: triplets with the contradiction as hard negative.
        num_positives, num_negatives, seed: SupMPN group shape and padding seed.

    Returns:
        ``(data, score_range)``: data any objective accepts, and the score scale for the
        regression objective (``None`` when the data has no scores or the scale is unknown).

    Raises:
        ValueError: an unknown name, or a data set that does not carry what the loss needs.
    """
    from sbert_tutor.training.objectives import check_objective_name

    loss = check_objective_name(loss)
    path = Path(name)
    if path.suffix and path.is_file():
        return read_table(path), None
    key = str(name).strip().lower()
    if key not in TRAIN_SETS:
        close = difflib.get_close_matches(key, TRAIN_SETS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"unknown training set {name!r}; choose one of {', '.join(TRAIN_SETS)} or give a "
            f"path to a .tsv/.csv/.jsonl file.{hint}"
        )
    if loss == "ce":
        raise ValueError(
            "the ce loss regresses onto a cross-encoder's scores, which no named set carries: "
            "pass --train FILE with columns (query, document, label = the teacher's logit)"
        )
    if key == "stsb" or (key == "sick" and loss in _SCORE_LOSSES):
        if loss not in _SCORE_LOSSES:
            raise ValueError(
                f"{key} carries similarity scores, which the {loss} loss cannot use: use "
                "--loss cosine, or train on NLI (--train nli / sick) for the other losses"
            )
        data = load_sts("stsb" if key == "stsb" else "sickr", "train")
        return data, data.score_range
    if loss in _SCORE_LOSSES:
        raise ValueError(
            f"{key} carries entailment labels, not similarity scores: the cosine loss needs "
            "scores (--train stsb or sick); use softmax, mnrl, triplet, supmpn or contrastive"
        )
    pairs = nli_data.load_nli_train() if key == "nli" else nli_data.load_nli(key, "train")
    return shape_nli(pairs, loss, hard_negatives, num_positives, num_negatives, seed), None


def shape_nli(
    data: Any,
    loss: str,
    hard_negatives: bool = False,
    num_positives: int = 2,
    num_negatives: int = 2,
    seed: int = 0,
) -> pd.DataFrame:
    """NLI pairs in the shape ``loss`` reads (see the module docstring)."""
    if loss == "softmax":
        return nli_data.labelled_pairs(data)
    if loss == "triplet" or (loss == "mnrl" and hard_negatives):
        return nli_data.nli_triplets(data)
    if loss in ("mnrl", "contrastive"):
        return nli_data.entailment_pairs(data)
    if loss == "supmpn":
        return nli_data.supmpn_groups(data, num_positives, num_negatives, seed)
    raise ValueError(f"NLI pairs cannot train the {loss} loss; use one of {', '.join(_NLI_LOSSES)}")
