"""Every published number the book shows, with its source. Never computed here; shown beside ours.

Each constant is a number (or a table of numbers) copied from a paper or a documentation page,
next to a :class:`Source` naming the paper and the table or section (and its entry in
``book/references.bib``). Rows built here say ``published: <source>`` wherever they appear
(:func:`~sbert_tutor.book.reporting.measured_vs_published`).

==========================================  ======================================  ==========
constant                                    source                                  chapter
==========================================  ======================================  ==========
:data:`SBERT_COST_CLAIM`                    SBERT paper, section 1                  2, 13
:data:`SBERT_TABLE1`                        SBERT paper, Table 1                    3
:data:`MSMARCO_FULL_COLLECTION`             SBERT.net documentation                 5
:data:`SBERT_TABLE6_CONCAT`                 SBERT paper, Table 6                    6
:data:`SBERT_TABLE2_STSB`                   SBERT paper, Table 2                    7
:data:`WIKISEC`                             SBERT paper; sbert.net documentation    8
:data:`STSB_TEST`                           SimCSE Table 5; SBERT paper, Table 1    9-11
==========================================  ======================================  ==========
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sbert_tutor.losses import check_features, feature_label
from sbert_tutor.results import Result


@dataclass(frozen=True)
class Source:
    """Where a published number comes from: the text shown in tables, and its bib key."""

    text: str
    bib: str | None = None

    def __str__(self) -> str:
        return self.text

    def at(self, where: str) -> Source:
        """The same paper, another table or section: ``Source(f"{text}, {where}")``."""
        return Source(f"{self.text}, {where}", self.bib)


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class PublishedTable(Result):
    """A table of published numbers and its :class:`Source`."""

    source: Source


SBERT = Source("Reimers & Gurevych (2019), Sentence-BERT", "reimers2019sbert")
SIMCSE = Source("Gao et al. (2021), SimCSE", "gao2021simcse")
SBERT_DOCS_MSMARCO = "SBERT.net documentation, Pretrained Models > MSMARCO Models"
WIKISEC_DOCS = "sbert.net docs, Wikipedia Sections Models"

# ------------------------------------------------------------------ chapter 2: the cost claim
#: SBERT paper, section 1: finding the most similar pair among 10,000 sentences takes a
#: BERT cross-encoder about 65 hours, SBERT about 5 seconds (V100 GPU).
SBERT_COST_CLAIM: dict[str, Any] = {
    "n": 10_000,
    "cross_encoder_hours": 65.0,
    "sbert_seconds": 5.0,
    "hardware": "V100 GPU",
}
SBERT_COST_CLAIM_SOURCE = SBERT.at("section 1")

# ------------------------------------------------------------------ chapter 3: STS, Table 1
#: SBERT paper, Table 1: Spearman x100 of cosine similarity on STS tasks, models *not* trained
#: on STS data (SBERT rows trained on SNLI + MultiNLI). STS12-16 are the SentEval "all"
#: setting. The last value of each row is the paper's own average (not recomputed from the
#: rounded cells).
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
SBERT_TABLE1_SOURCE = SBERT.at("Table 1")
_TABLE1_COLUMNS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "avg")


def sbert_table1() -> PublishedTable:
    """SBERT paper Table 1 (rows: models, columns: tasks + avg), with its source."""
    frame = pd.DataFrame.from_dict(SBERT_TABLE1, orient="index", columns=list(_TABLE1_COLUMNS))
    frame.index.name = "model"
    return PublishedTable(
        table=frame, note=f"{SBERT_TABLE1_SOURCE} (published)", source=SBERT_TABLE1_SOURCE
    )


# ------------------------------------------------------------------ chapter 5: MS MARCO
#: Published full-collection numbers (fractions; published as percentages): model ->
#: (MRR@10 on MS MARCO dev, nDCG@10 on TREC DL19, source). The nDCG@10 column is labelled
#: "NDCG@10 (TREC DL 19 Reranking)" in the source. ``msmarco-MiniLM-L6-cos-v5`` is a sibling of
#: ``all-MiniLM-L6-v2`` (same 6-layer MiniLM, trained on MS MARCO only); no attributable
#: full-collection number for ``all-MiniLM-L6-v2`` itself is included.
MSMARCO_FULL_COLLECTION: dict[str, tuple[float, float, Source]] = {
    "msmarco-MiniLM-L6-cos-v5": (0.3227, 0.6746, Source(f"{SBERT_DOCS_MSMARCO} (msmarco-v5)")),
    "BM25 (ElasticSearch)": (0.1729, 0.4546, Source(f"{SBERT_DOCS_MSMARCO} (Version 3)")),
}


def published_msmarco() -> PublishedTable:
    """Published MS MARCO numbers on the **full 8.8M collection**, labelled with their source."""
    frame = pd.DataFrame.from_dict(
        {name: (mrr, ndcg, str(src)) for name, (mrr, ndcg, src) in MSMARCO_FULL_COLLECTION.items()},
        orient="index",
        columns=["mrr@10 (MS MARCO dev, full)", "ndcg@10 (TREC DL19)", "source"],
    )
    frame.index.name = "model (published)"
    return PublishedTable(
        table=frame,
        note=(
            "published numbers on the full 8,841,823-passage collection, not computed here; the "
            "source labels the DL19 column 'NDCG@10 (TREC DL 19 Reranking)'"
        ),
        source=Source(SBERT_DOCS_MSMARCO),
    )


# ------------------------------------------------------------------ chapters 6-8: objectives
#: SBERT paper, Table 6 (concatenation ablation): SBERT trained on NLI with the classification
#: objective, Spearman x100 of cosine on the STSb **dev** set.
SBERT_TABLE6_CONCAT: dict[tuple[str, ...], float] = {
    ("u", "v"): 66.04,
    ("|u-v|",): 69.78,
    ("u*v",): 70.54,
    ("|u-v|", "u*v"): 78.37,
    ("u", "v", "u*v"): 77.44,
    ("u", "v", "|u-v|"): 80.78,
    ("u", "v", "|u-v|", "u*v"): 80.44,
}

#: SBERT paper, Table 2 (STSb test, Spearman x100, mean and std over random seeds).
SBERT_TABLE2_STSB: dict[str, tuple[float, float, str]] = {
    "SBERT-STSb-base": (84.67, 0.19, "BERT-base, regression objective on STSb train"),
    "SBERT-NLI-STSb-base": (85.35, 0.17, "BERT-base, NLI first, then regression on STSb train"),
}

#: Wikipedia section distinction (Ein Dor et al., 2018): triplet objective, test accuracy (%).
#: The SBERT paper reports SBERT-WikiSec-base in its Wikipedia-sections experiment; the same
#: model is documented as ``bert-base-wikipedia-sections-mean-tokens`` on sbert.net.
WIKISEC: dict[str, tuple[float, Source]] = {
    "SBERT-WikiSec-base (triplet, Euclidean, ε = 1)": (
        80.42,
        SBERT.at(f"Wikipedia sections experiment; {WIKISEC_DOCS}"),
    ),
    "Ein Dor et al. (2018), triplet-sen": (
        74.0,
        Source(f"Ein Dor et al. (2018), as quoted in {WIKISEC_DOCS}", "eindor2018thematic"),
    ),
}


def published_table6_rows(
    feature_sets: Sequence[Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """Table 6 concatenation rows for :func:`~sbert_tutor.book.reporting.measured_vs_published`
    (all of them, or those of ``feature_sets``)."""
    keys = (
        list(SBERT_TABLE6_CONCAT)
        if feature_sets is None
        else [check_features(fs) for fs in feature_sets]
    )
    return [
        {
            "setup": f"SBERT-NLI-base, softmax on {feature_label(k)}",
            "metric": "STSb dev Spearman x100",
            "value": SBERT_TABLE6_CONCAT[k],
            "source": str(SBERT.at("Table 6")),
        }
        for k in keys
    ]


def published_table2_rows() -> list[dict[str, Any]]:
    """SBERT-STSb-base and SBERT-NLI-STSb-base (Table 2), with the std in the setup text."""
    return [
        {
            "setup": f"{name}: {what} (± {std:.2f} over seeds)",
            "metric": "STSb test Spearman x100",
            "value": mean,
            "source": str(SBERT.at("Table 2")),
        }
        for name, (mean, std, what) in SBERT_TABLE2_STSB.items()
    ]


def published_wikisec_rows() -> list[dict[str, Any]]:
    """Wikipedia-sections test accuracy of SBERT's triplet model and of Ein Dor et al."""
    return [
        {
            "setup": name,
            "metric": "WikiSec test accuracy (%)",
            "value": value,
            "source": str(source),
        }
        for name, (value, source) in WIKISEC.items()
    ]


# ------------------------------------------------------------------ chapters 9-11: STSb test
STSB_METRIC = "STSb test Spearman x100"
#: Published STSb test Spearman x100 (cosine): name -> (value, source). Only numbers that are
#: attributable to a table.
STSB_TEST: dict[str, tuple[float, Source]] = {
    "unsup-SimCSE-BERT-base (Wikipedia, dropout positives)": (76.85, SIMCSE.at("Table 5")),
    "sup-SimCSE-BERT-base (NLI, contradiction hard negatives)": (84.25, SIMCSE.at("Table 5")),
    "SBERT-NLI-base (softmax objective)": (77.03, SBERT_TABLE1_SOURCE),
}


def published_stsb_rows(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Published STSb test Spearman rows (with their source) from :data:`STSB_TEST`."""
    names = list(STSB_TEST) if names is None else list(names)
    unknown = [n for n in names if n not in STSB_TEST]
    if unknown:
        raise KeyError(f"no published number for {unknown}; known: {list(STSB_TEST)}")
    return [
        {
            "setup": name,
            "metric": STSB_METRIC,
            "value": STSB_TEST[name][0],
            "source": str(STSB_TEST[name][1]),
        }
        for name in names
    ]
