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

What NLI pairs become is the objective's choice (:meth:`Objective.shape_nli
<sbert_tutor.training.objectives.Objective.shape_nli>`): labelled pairs (softmax), (premise,
entailment) pairs (mnrl, contrastive), (premise, entailment, contradiction) triplets (triplet,
and mnrl with ``hard_negatives=True``) or SupMPN groups (supmpn); see :mod:`sbert_tutor.data.nli`.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from sbert_tutor.data import nli as nli_data
from sbert_tutor.data.sts import load_sts
from sbert_tutor.data.table import DataTable
from sbert_tutor.training.objectives import OBJECTIVES, Objective, objective_class
from sbert_tutor.validation import check_choice

#: The named training sets (``sbert-tutor train --train NAME``).
TRAIN_SETS = ("stsb", "sick", "nli", "allnli", "snli", "multinli")
#: The named sets that carry similarity scores (SICK carries entailment labels too).
SCORE_SETS = ("stsb", "sick")


def read_table(path: str | Path) -> DataTable:
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
    return DataTable(frame, source=f"file {p}", files=(str(p),))


def check_training_source(name: str) -> str | None:
    """``None`` for an existing data file, else the checked name of a set in :data:`TRAIN_SETS`.

    Raises:
        ValueError: neither a file nor a known set; the message suggests the closest name.
    """
    path = Path(name)
    if path.suffix and path.is_file():
        return None
    return check_choice(
        name, TRAIN_SETS, "training set", other=" or a path to a .tsv/.csv/.jsonl file"
    )


def load_training_data(
    name: str,
    loss: str | type[Objective],
    options: Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
) -> Any:
    """Load a named training set (or a file) in the shape ``loss`` reads.

    Args:
        name: one of :data:`TRAIN_SETS` or a path to a file.
        loss: a registered objective's name or class (:data:`~sbert_tutor.training.OBJECTIVES`).
        options: the objective's options, which may shape the data (``hard_negatives`` of mnrl,
            ``num_positives`` / ``num_negatives`` of supmpn).
        seed: for shapes that draw at random (SupMPN's padding negatives).

    Returns:
        ``STSData`` (with its ``score_range``) for objectives that read scores, a
        :class:`~sbert_tutor.data.table.DataTable` otherwise.

    Raises:
        ValueError: an unknown name, or a data set that does not carry what the loss needs.
    """
    cls = loss if isinstance(loss, type) else objective_class(loss)
    options = {**cls.option_defaults(), **(options or {})}
    key = check_training_source(name)
    if key is None:
        return read_table(Path(name))
    if not (cls.reads_scores or cls.trains_on_nli()):
        raise ValueError(
            f"no named training set carries what the {cls.name} loss needs ("
            f"{cls.describe_inputs()}): pass --train FILE (or your own rows) with those columns"
        )
    scores = [n for n, c in OBJECTIVES.items() if c.reads_scores]
    if key in SCORE_SETS and cls.reads_scores:
        return load_sts("stsb" if key == "stsb" else "sickr", "train")
    if key == "stsb":
        raise ValueError(
            f"stsb carries similarity scores, which the {cls.name} loss cannot use: use "
            f"--loss {' or '.join(scores)}, or train on NLI (--train nli / sick) for the other "
            "losses"
        )
    if cls.reads_scores:
        nli_losses = [n for n, c in OBJECTIVES.items() if c.trains_on_nli()]
        raise ValueError(
            f"{key} carries entailment labels, not similarity scores: the {cls.name} loss needs "
            f"scores (--train stsb or sick); use {', '.join(nli_losses)}"
        )
    pairs = nli_data.load_nli_train() if key == "nli" else nli_data.load_nli(key, "train")
    return cls.shape_nli(pairs, seed, options)
