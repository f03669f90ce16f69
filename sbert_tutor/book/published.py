"""Numbers published in papers, labelled with their source. Never computed here; shown beside ours.

``SBERT_TABLE1``: Reimers & Gurevych (2019), Table 1 — Spearman x100 of cosine similarity on STS
tasks, models *not* trained on STS data (SBERT rows trained on SNLI + MultiNLI). STS12-16 are the
SentEval "all" setting. The last value of each row is the paper's own average (not recomputed
from the rounded cells).
"""

from __future__ import annotations

import pandas as pd

SBERT_PAPER = "Reimers & Gurevych (2019), Sentence-BERT, Table 1"
_COLUMNS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "avg")

SBERT_TABLE1: dict[str, tuple[float, ...]] = {
    "Avg. GloVe embeddings": (55.14, 70.66, 59.73, 68.25, 63.66, 58.02, 53.76, 61.32),
    "Avg. BERT embeddings": (38.78, 57.98, 57.98, 63.15, 61.06, 46.35, 58.40, 54.81),
    "BERT CLS-vector": (20.16, 30.01, 20.09, 36.88, 38.08, 16.50, 42.63, 29.19),
    "InferSent - GloVe": (52.86, 66.75, 62.15, 72.77, 66.87, 68.03, 65.65, 65.01),
    "Universal Sentence Encoder": (64.49, 67.80, 64.61, 76.83, 73.18, 74.92, 76.69, 71.22),
    "SBERT-NLI-base": (70.97, 76.53, 73.19, 79.09, 74.30, 77.03, 72.91, 74.89),
    "SBERT-NLI-large": (72.27, 78.46, 74.90, 80.99, 76.25, 79.23, 73.75, 76.55),
    "SRoBERTa-NLI-base": (71.54, 72.49, 70.80, 78.74, 73.69, 77.77, 74.46, 74.21),
    "SRoBERTa-NLI-large": (74.53, 77.00, 73.18, 81.85, 76.82, 79.10, 74.29, 76.68),
}


def sbert_table1() -> pd.DataFrame:
    """SBERT paper Table 1 as a DataFrame (rows: models, columns: tasks + avg), labelled."""
    frame = pd.DataFrame.from_dict(SBERT_TABLE1, orient="index", columns=list(_COLUMNS))
    frame.index.name = "model"
    frame.attrs["source"] = SBERT_PAPER
    return frame
