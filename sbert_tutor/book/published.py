"""Every published number the book shows, with its source. Never computed here; shown beside ours.

Each constant (grouped below by chapter) is copied from a paper or a documentation page, next to
a :class:`Source` naming the paper, the table or section, and its entry in
``book/references.bib``. Rows built here say ``published: <source>`` wherever they appear
(:func:`~sbert_tutor.book.reporting.measured_vs_published`). Each table is checked digit by digit
against a transcription typed separately from the paper text (``tests/book/transcriptions/``),
and rows with an average against the mean of their cells (``tests/book/test_published.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sbert_tutor.data.sts import DISPLAY_NAMES
from sbert_tutor.losses import feature_label
from sbert_tutor.results import Result

__all__ = [
    "DISTANCE_DILEMMA",
    "DISTANCE_DILEMMA_SOURCE",
    "MSMARCO_CROSS_ENCODER",
    "MSMARCO_CROSS_ENCODER_SOURCE",
    "MSMARCO_DL19_COLUMN",
    "MSMARCO_MRR_COLUMN",
    "MSMARCO_PUBLISHED",
    "OH",
    "OH_SETUP",
    "OH_TABLE1",
    "OH_TABLE1_SOURCE",
    "PublishedTable",
    "RYGAARD",
    "SBERT",
    "SBERT_COST_CLAIM",
    "SBERT_COST_CLAIM_SOURCE",
    "SBERT_DOCS_MSMARCO",
    "SBERT_SETUP",
    "SBERT_SETUP_SOURCE",
    "SBERT_TABLE1",
    "SBERT_TABLE1_SOURCE",
    "SBERT_TABLE2_CROSS_VS_BI",
    "SBERT_TABLE2_SOURCE",
    "SBERT_TABLE2_STSB",
    "SBERT_TABLE5",
    "SBERT_TABLE5_SOURCE",
    "SBERT_TABLE6_CONCAT",
    "SBERT_TABLE6_POOLING",
    "SBERT_TABLE6_SOURCE",
    "SBERT_TABLE7",
    "SBERT_TABLE7_SOURCE",
    "SIMCSE",
    "STSB_METRIC",
    "STSB_TEST",
    "STS_COLUMNS",
    "SUPMPN",
    "SUPMPN_SETUP",
    "SUPMPN_TABLE2",
    "SUPMPN_TABLE2_SOURCE",
    "SUPMPN_TABLE3",
    "SUPMPN_TABLE3_SOURCE",
    "Source",
    "TANEJA",
    "TANEJA_COST_CLAIM",
    "TANEJA_COST_CLAIM_SOURCE",
    "TANEJA_SETUP",
    "TANEJA_TABLE2",
    "TANEJA_TABLE2_SOURCE",
    "WIKISEC",
    "WIKISEC_DOCS",
    "oh_table1",
    "published_cross_vs_bi",
    "published_msmarco",
    "published_stsb_rows",
    "published_table2_rows",
    "published_table6_rows",
    "published_wikisec_rows",
    "sbert_table1",
    "sbert_table7",
    "smart_batching_speedup",
    "sts_table",
    "supmpn_table2",
    "taneja_table2",
]


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
TANEJA = Source("Taneja, Vashishtha & Ratnoo (2023), MNRL-SBERT", "taneja2023efficient")
SUPMPN = Source("Dehghan & Amasyali (2022), SupMPN", "dehghan2022supmpn")
OH = Source("Oh, Kim & Lim, Guidance by Semantic Search", "oh_guidance_semantic_search")
RYGAARD = Source("Rygaard, Bramsløw, Jensen & Bagger, Distance Dilemma", "rygaard_distance_dilemma")
#: Column names of the seven-task STS tables (Spearman x100 of cosine), then the average.
STS_COLUMNS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "avg")
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

#: Taneja et al. (2023), section I, restating SBERT's claim: "a collection of 100K sentences"
#: needs 50 million inference computations, about 65 hours with BERT. 50 million is the pair
#: count of 10,000 sentences (SBERT's figure); 100,000 sentences have 4,999,950,000 pairs.
TANEJA_COST_CLAIM: dict[str, Any] = {
    "n": 100_000,
    "inference_computations": 50_000_000,
    "cross_encoder_hours": 65.0,
}
TANEJA_COST_CLAIM_SOURCE = TANEJA.at("section I")

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

#: SBERT paper, Table 6 (pooling ablation): Spearman x100 of cosine on the STSb **dev** set, for
#: SBERT-base *trained* with each pooling: on NLI with the classification objective (first
#: value) and on STSb train with the regression objective (second value).
SBERT_TABLE6_POOLING: dict[str, tuple[float, float]] = {
    "mean": (80.78, 87.44),
    "max": (79.07, 69.92),
    "cls": (79.80, 86.62),
}
SBERT_TABLE6_SOURCE = SBERT.at("Table 6")


# ------------------------------------------------------------------ chapter 11a: transfer tasks
#: SBERT paper Table 5: accuracy x100 on the SentEval tasks MR, CR, SUBJ, MPQA, SST2, TREC, MRPC
#: and the paper's average (as reproduced in the study notes, section 5).
SBERT_TABLE5: dict[str, tuple[float, ...]] = {
    "Avg. GloVe embeddings": (77.25, 78.30, 91.17, 87.85, 80.18, 83.0, 72.87, 81.52),
    "Avg. fast-text embeddings": (77.96, 79.23, 91.68, 87.81, 82.15, 83.6, 74.49, 82.42),
    "Avg. BERT embeddings": (78.66, 86.25, 94.37, 88.66, 84.40, 92.8, 69.45, 84.94),
    "BERT CLS-vector": (78.68, 84.85, 94.21, 88.23, 84.13, 91.4, 71.13, 84.66),
    "InferSent - GloVe": (81.57, 86.54, 92.50, 90.38, 84.18, 88.2, 75.77, 85.59),
    "Universal Sentence Encoder": (80.09, 85.19, 93.98, 86.70, 86.38, 93.2, 70.14, 85.10),
    "SBERT-NLI-base": (83.64, 89.43, 94.39, 89.86, 88.96, 89.6, 76.00, 87.41),
    "SBERT-NLI-large": (84.88, 90.07, 94.52, 90.33, 90.66, 87.4, 75.94, 87.69),
}
SBERT_TABLE5_SOURCE = SBERT.at("Table 5")
#: SupMPN paper Table 3, the paper's own two models (same columns). Its copies of other papers'
#: rows are not kept: two carry transcription slips (Avg. BERT embeddings' MRPC printed 69.54
#: where SBERT's Table 5 and the row's average say 69.45; SimCSE-sup's SUBJ 84.81 where the
#: row's average says 94.81).
SUPMPN_TABLE3: dict[str, tuple[float, ...]] = {
    "SupMPN-BERT-base": (82.93, 89.26, 94.76, 90.21, 86.99, 88.20, 76.35, 86.96),
    "SupMPN-BERT-large": (84.06, 90.25, 94.59, 90.26, 88.58, 91.00, 75.48, 87.75),
}
SUPMPN_TABLE3_SOURCE = SUPMPN.at("Table 3")


def sts_table(rows: dict[str, tuple[float, ...]], source: Source) -> PublishedTable:
    """A published seven-task STS table (rows: models; columns :data:`STS_COLUMNS`, shown with the
    task names the evaluator's tables use: ``STS12`` ... ``SICK-R``, then ``avg``)."""
    columns = [DISPLAY_NAMES.get(c, c) for c in STS_COLUMNS]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    frame.index.name = "model"
    return PublishedTable(table=frame, note=f"{source} (published)", source=source)


def sbert_table1() -> PublishedTable:
    """SBERT paper Table 1 (rows: models, columns: tasks + avg), with its source."""
    return sts_table(SBERT_TABLE1, SBERT_TABLE1_SOURCE)


# ------------------------------------------------------------------ chapter 5: MS MARCO
#: Published MS MARCO numbers (fractions; published as percentages): model -> (MRR@10 on MS
#: MARCO dev, nDCG@10 on TREC DL19, source). The MRR@10 is retrieval from the full 8.8M-passage
#: collection. The nDCG@10 column is labelled "NDCG@10 (TREC DL 19 Reranking)" in the source: a
#: re-ranking of given candidate lists, **not** retrieval from the full collection.
#: ``msmarco-MiniLM-L6-cos-v5`` is a sibling of ``all-MiniLM-L6-v2`` (same 6-layer MiniLM, trained
#: on MS MARCO only); no attributable number for ``all-MiniLM-L6-v2`` itself is included.
MSMARCO_PUBLISHED: dict[str, tuple[float, float, Source]] = {
    "msmarco-MiniLM-L6-cos-v5": (0.3227, 0.6746, Source(f"{SBERT_DOCS_MSMARCO} (msmarco-v5)")),
    "BM25 (ElasticSearch)": (0.1729, 0.4546, Source(f"{SBERT_DOCS_MSMARCO} (Version 3)")),
}
MSMARCO_MRR_COLUMN = "mrr@10 (MS MARCO dev, full-collection retrieval)"
MSMARCO_DL19_COLUMN = "ndcg@10 (TREC DL19, re-ranking)"


def published_msmarco() -> PublishedTable:
    """Published MS MARCO numbers, each column labelled with the task it measures."""
    frame = pd.DataFrame.from_dict(
        {name: (mrr, ndcg, str(src)) for name, (mrr, ndcg, src) in MSMARCO_PUBLISHED.items()},
        orient="index",
        columns=[MSMARCO_MRR_COLUMN, MSMARCO_DL19_COLUMN, "source"],
    )
    frame.index.name = "model (published)"
    return PublishedTable(
        table=frame,
        note=(
            "published numbers, not computed here: MRR@10 retrieves from the full "
            "8,841,823-passage collection; the DL19 column is labelled 'NDCG@10 (TREC DL 19 "
            "Reranking)' in the source, a re-ranking of candidate lists, not full-collection "
            "retrieval"
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

#: SBERT paper, its training setups: section 3 ("Training Details": NLI, the classification
#: objective), the caption of Table 2 (STSb, the regression objective), section 3's triplet
#: objective and the Wikipedia-sections experiment (section 4.4). The values the study notes in
#: ``sbert_paper_notes_korean.txt`` state are checked against them
#: (``tests/book/transcriptions/setups.tsv``); warm-up, epochs, seeds and the Wikipedia-sections
#: counts are the paper's own text, which the notes do not carry.
SBERT_SETUP: dict[str, Any] = {
    "start model": "BERT-base (uncased)",
    "pooling": "mean",
    "NLI training data": "SNLI + MultiNLI train",
    "SNLI sentence pairs": 570_000,
    "MultiNLI sentence pairs": 430_000,
    "batch size": 16,
    "optimizer": "Adam",
    "learning rate": 2e-5,
    "warm-up": "linear, over 10% of the training data",
    "warm-up ratio": 0.1,
    "NLI epochs": 1,
    "STSb epochs": 4,
    "STSb seeds": 10,
    "triplet distance": "euclidean",
    "triplet margin": 1.0,
    "triplet training data": "Wikipedia sections (Dor et al., 2018), about 1.8 million triplets",
    "triplet epochs": 1,
}
SBERT_SETUP_SOURCE = SBERT.at("section 3, Table 2 caption, section 4.4")

#: SBERT paper, Table 2 (STSb test, Spearman x100, mean and std over random seeds).
SBERT_TABLE2_STSB: dict[str, tuple[float, float, str]] = {
    "SBERT-STSb-base": (84.67, 0.19, "BERT-base, regression objective on STSb train"),
    "SBERT-NLI-STSb-base": (85.35, 0.17, "BERT-base, NLI first, then regression on STSb train"),
}

#: SBERT paper, Table 2: the cross-encoder (BERT: both sentences read together, a regression
#: head) beside the bi-encoder (SBERT) trained the same way, STSb test Spearman x100, mean and
#: std over seeds: ``(setting, model size) -> (BERT, SBERT)``, each ``(mean, std)``.
SBERT_TABLE2_CROSS_VS_BI: dict[tuple[str, str], tuple[tuple[float, float], tuple[float, float]]] = {
    ("STSb train", "base"): ((84.30, 0.76), (84.67, 0.19)),
    ("STSb train", "large"): ((85.64, 0.81), (84.45, 0.43)),
    ("NLI, then STSb train", "base"): ((88.33, 0.19), (85.35, 0.17)),
    ("NLI, then STSb train", "large"): ((88.77, 0.46), (86.10, 0.13)),
}
SBERT_TABLE2_SOURCE = SBERT.at("Table 2")


def published_cross_vs_bi() -> PublishedTable:
    """SBERT's Table 2 rows of the cross-encoder (BERT-...) and the bi-encoder (SBERT-...)
    trained the same way: one row a (training, model size), mean and std of each."""
    rows = []
    for (setting, size), ((ce, ce_sd), (bi, bi_sd)) in SBERT_TABLE2_CROSS_VS_BI.items():
        nli = "NLI-" if setting.startswith("NLI") else ""
        rows.append(
            {
                "trained on": setting,
                "BERT size": size,
                "cross-encoder": ce,
                "cross-encoder std": ce_sd,
                "bi-encoder": bi,
                "bi-encoder std": bi_sd,
                "rows of the paper": f"BERT-{nli}STSb-{size} vs SBERT-{nli}STSb-{size}",
            }
        )
    frame = pd.DataFrame(rows)
    return PublishedTable(
        table=frame.set_index(["trained on", "BERT size"]),
        note="published, not computed here: STSb test Spearman x100, mean and std over seeds; "
        "cross-encoder = the paper's BERT-...-STSb rows, bi-encoder = its SBERT-...-STSb rows",
        source=SBERT_TABLE2_SOURCE,
    )


#: The published MS MARCO cross-encoder the re-ranking chapter uses online, from its
#: documentation table: NDCG@10 on TREC DL19 and MRR@10 on MS MARCO dev, both re-ranking
#: candidate lists (fractions; published as percentages), and the documents a second the table
#: states (a V100 GPU).
MSMARCO_CROSS_ENCODER: dict[str, tuple[float, float, int]] = {
    "cross-encoder/ms-marco-MiniLM-L6-v2": (0.7430, 0.3901, 1800),
}
MSMARCO_CROSS_ENCODER_SOURCE = Source(
    "SBERT.net documentation, Pretrained Models > MS MARCO Cross-Encoders (version 2 models)"
)


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


def _rows(metric: str, rows: Iterable[tuple[str, float, Source]]) -> list[dict[str, Any]]:
    """Rows ``{"setup", "metric", "value", "source"}`` from ``(setup, value, source)``, for
    :func:`~sbert_tutor.book.reporting.measured_vs_published`."""
    return [{"setup": x, "metric": metric, "value": v, "source": str(src)} for x, v, src in rows]


def published_table6_rows() -> list[dict[str, Any]]:
    """Table 6 concatenation rows for :func:`~sbert_tutor.book.reporting.measured_vs_published`."""
    return _rows(
        "STSb dev Spearman x100",
        [
            (f"SBERT-NLI-base, softmax on {feature_label(k)}", value, SBERT_TABLE6_SOURCE)
            for k, value in SBERT_TABLE6_CONCAT.items()
        ],
    )


def published_table2_rows() -> list[dict[str, Any]]:
    """SBERT-STSb-base and SBERT-NLI-STSb-base (Table 2), with the std in the setup text."""
    return _rows(
        "STSb test Spearman x100",
        [
            (f"{name}: {what} (± {std:.2f} over seeds)", mean, SBERT_TABLE2_SOURCE)
            for name, (mean, std, what) in SBERT_TABLE2_STSB.items()
        ],
    )


def published_wikisec_rows() -> list[dict[str, Any]]:
    """Wikipedia-sections test accuracy of SBERT's triplet model and of Ein Dor et al."""
    return _rows("WikiSec test accuracy (%)", [(n, v, src) for n, (v, src) in WIKISEC.items()])


# ------------------------------------------------------------------ chapters 9-11: STSb test
STSB_METRIC = "STSb test Spearman x100"
#: Published STSb test Spearman x100 (cosine): name -> (value, source). Only numbers that are
#: attributable to a table.
STSB_TEST: dict[str, tuple[float, Source]] = {
    "unsup-SimCSE-BERT-base (Wikipedia, dropout positives)": (76.85, SIMCSE.at("Table 5")),
    "sup-SimCSE-BERT-base (NLI, contradiction hard negatives)": (84.25, SIMCSE.at("Table 5")),
    "SBERT-NLI-base (softmax objective)": (77.03, SBERT_TABLE1_SOURCE),
    "MNRL-SBERT-base (NLI entailment pairs, batch 12)": (83.78, TANEJA.at("Table 2")),
    "SupMPN-BERT-base (NLI, P = Q = 5)": (84.90, SUPMPN.at("Table 2")),
    "SupMPN-BERT-large (NLI, P = Q = 5)": (86.09, SUPMPN.at("Table 2")),
    "BERT-base + semantic-search positives (Oh et al.)": (79.20, OH.at("Table 1")),
}


def published_stsb_rows(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Published STSb test Spearman rows (with their source) from :data:`STSB_TEST`."""
    names = list(STSB_TEST) if names is None else list(names)
    unknown = [n for n in names if n not in STSB_TEST]
    if unknown:
        raise KeyError(f"no published number for {unknown}; known: {list(STSB_TEST)}")
    return _rows(STSB_METRIC, [(name, *STSB_TEST[name]) for name in names])


# ------------------------------------------------------------------ chapter 9: MNRL-SBERT
#: Taneja et al. (2023), Table 2 (supervised models; Spearman x100 of cosine, columns
#: :data:`STS_COLUMNS`, the last value the paper's own average). MNRLSBERT's row also appears in
#: its Table 1.
TANEJA_TABLE2: dict[str, tuple[float, ...]] = {
    "SBERT": (70.97, 76.53, 73.19, 79.09, 74.30, 77.03, 72.91, 74.89),
    "SimCSE-BERT": (75.30, 84.67, 80.19, 85.40, 80.82, 84.25, 80.39, 81.57),
    "MNRLSBERT": (72.84, 81.70, 74.77, 82.07, 79.19, 83.78, 75.85, 78.60),
    "SRoBERTa": (71.54, 72.49, 70.80, 78.74, 73.69, 77.77, 74.46, 74.21),
    "MNRLSRoBERTa": (72.90, 81.45, 73.84, 82.12, 79.54, 84.83, 75.32, 78.57),
}
TANEJA_TABLE2_SOURCE = TANEJA.at("Table 2")
#: Taneja et al. (2023), section IV: data and budget of MNRLSBERT.
TANEJA_SETUP: dict[str, Any] = {
    "start model": "BERT-base (Siamese, mean pooling)",
    "NLI rows (SNLI + MNLI train)": 942_854,
    "entailment pairs kept": 314_315,
    "batch size": 12,
    "epochs": 1,
    "learning rate": 2e-5,
    "warm-up": "linear, first 10% of steps",
    "hardware": "one T4 GPU (Google Colab)",
    "training time": "less than 2 hours",
}


def taneja_table2() -> PublishedTable:
    """Taneja et al. (2023) Table 2 (supervised models on seven STS tasks), with its source."""
    return sts_table(TANEJA_TABLE2, TANEJA_TABLE2_SOURCE)


# ------------------------------------------------------------------ chapter 10: SupMPN
#: Dehghan & Amasyali (2022), Table 2, the supervised BERT rows (Spearman x100 of cosine,
#: columns :data:`STS_COLUMNS`, the last value the paper's own average).
SUPMPN_TABLE2: dict[str, tuple[float, ...]] = {
    "SBERT-base": (70.97, 76.53, 73.19, 79.09, 74.30, 77.03, 72.91, 74.89),
    "SBERT-base-nli-v2": (72.50, 84.80, 80.20, 84.80, 80.00, 83.90, 78.00, 80.60),
    "SimCSE-sup-BERT-base": (75.30, 84.67, 80.19, 85.40, 80.82, 84.25, 80.39, 81.57),
    "SupMPN-BERT-base": (75.96, 84.96, 80.61, 85.63, 81.69, 84.90, 80.72, 82.07),
    "SimCSE-sup-BERT-large": (75.78, 86.33, 80.44, 86.06, 80.86, 84.87, 81.14, 82.21),
    "SupMPN-BERT-large": (77.53, 86.50, 81.68, 85.99, 82.87, 86.09, 81.38, 83.15),
}
SUPMPN_TABLE2_SOURCE = SUPMPN.at("Table 2")
#: Dehghan & Amasyali (2022), sections 5.1-5.3: data, groups and budget.
SUPMPN_SETUP: dict[str, Any] = {
    "start models": "BERT-base and BERT-large (uncased)",
    "pooling": "average of first and last layers",
    "premises (SNLI + MNLI)": "~280 K",
    "SNLI premises with >= 5 entailments and >= 5 contradictions": 7956,
    "positives P, negatives Q per anchor": (5, 5),
    "training data": "628 K",
    "batch size (base, large)": (256, 200),
    "epochs": 3,
    "hardware": "NVIDIA A100 GPUs",
}


def supmpn_table2() -> PublishedTable:
    """Dehghan & Amasyali (2022) Table 2, its supervised BERT rows, with its source."""
    return sts_table(SUPMPN_TABLE2, SUPMPN_TABLE2_SOURCE)


# ------------------------------------------------------------------ chapter 11: search guided
#: Oh, Kim & Lim, Table 1 (Spearman x100; columns :data:`STS_COLUMNS`; the paper names the SICK-R
#: column "STS-R"). "BERT" is their run of unsupervised SimCSE (dropout positives) with BERT-base.
OH_TABLE1: dict[str, tuple[float, ...]] = {
    "BERT (unsup. SimCSE, their run)": (67.58, 79.25, 72.40, 80.50, 77.97, 77.59, 71.30, 75.23),
    "w/Semantic Search": (71.52, 80.65, 72.62, 79.50, 79.21, 79.20, 72.27, 76.42),
}
OH_TABLE1_SOURCE = OH.at("Table 1")
#: Oh, Kim & Lim, section 3: the setting of Table 1.
OH_SETUP: dict[str, Any] = {
    "student": "BERT-base ([CLS] representation)",
    "batch size": 32,
    "learning rate": 3e-5,
    "hardware": "Google Colab Pro",
}


def oh_table1() -> PublishedTable:
    """Oh, Kim & Lim Table 1, with its source."""
    return sts_table(OH_TABLE1, OH_TABLE1_SOURCE)


# ------------------------------------------------------------------ chapters 4, 12: the study
#: Rygaard et al., sections 2-4: setup and the numbers stated in the text. The study's results
#: table is not in the text (its section 4.1 refers to "Table ??"); the per-metric results are
#: only drawn in its Fig. 2A.
DISTANCE_DILEMMA: dict[str, Any] = {
    "start model": "DistilBERT",
    "pooling": "mean",
    "training data": "an MS MARCO subset with cross-encoder scores and hard negatives",
    "hard-negative CE-score gap (logits)": 3,
    "CE-score transform": "sigmoid",
    "learning rate": "not stated (linearly decreasing)",
    "warm-up": "none stated (linearly decreasing)",
    "training queries": 125_000,
    "corpus passages (millions)": 8.8,
    "test queries": 200,
    "cutoffs k": (1, 5, 10),
    "triplet margin": 5.0,
    "triplet cosine margin, retried": 1.0,
    "epochs": 3,
    "batch size": 64,
    "hardware": "NVIDIA V100 GPU",
    "training hours (Siamese, Triplet)": (11, 15),
    "P@10 of the two best models": (0.6, 0.56),
    "Accuracy@10 of the two best models": 0.9,
    "PCA triplets": "70k",
}
DISTANCE_DILEMMA_SOURCE = RYGAARD.at("sections 2-4")

# ------------------------------------------------------------------ chapter 13: Table 7
#: SBERT paper, Table 7: sentences encoded per second (CPU: Intel i7-5820K; GPU: V100).
#: ``None``: not reported.
SBERT_TABLE7: dict[str, tuple[float | None, float | None]] = {
    "Avg. GloVe embeddings": (6469, None),
    "InferSent": (137, 1876),
    "Universal Sentence Encoder": (67, 1318),
    "SBERT-base": (44, 1378),
    "SBERT-base - smart batching": (83, 2042),
}
SBERT_TABLE7_SOURCE = SBERT.at("Table 7")


def sbert_table7() -> PublishedTable:
    """SBERT paper Table 7 (sentences/s on CPU and GPU) and the smart-batching speed-ups."""
    frame = pd.DataFrame.from_dict(
        SBERT_TABLE7, orient="index", columns=["CPU sentences/s", "GPU sentences/s"]
    )
    frame.index.name = "model"
    return PublishedTable(
        table=frame, note=f"{SBERT_TABLE7_SOURCE} (published)", source=SBERT_TABLE7_SOURCE
    )


def smart_batching_speedup() -> dict[str, float]:
    """The speed-up of smart batching implied by Table 7: ``{"CPU": 83/44, "GPU": 2042/1378}``."""
    plain, smart = SBERT_TABLE7["SBERT-base"], SBERT_TABLE7["SBERT-base - smart batching"]
    return {"CPU": smart[0] / plain[0], "GPU": smart[1] / plain[1]}
