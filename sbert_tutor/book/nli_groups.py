r"""How SupMPN groups are filled from the NLI data at hand (chapter 10).

:func:`premise_label_counts` counts premises by their number of entailment and contradiction
hypotheses; :func:`group_sources` says where each slot of
:func:`~sbert_tutor.data.nli.supmpn_groups` comes from.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import pandas as pd

from sbert_tutor.data import NLIData
from sbert_tutor.data.table import DataTable, as_frame
from sbert_tutor.results import Result


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class PremiseCounts(Result):
    """:func:`premise_label_counts`, and how many distinct premises there are."""

    premises: int


def premise_label_counts(nli: NLIData) -> PremiseCounts:
    """Premises by how many entailment / contradiction hypotheses they have (0, 1, 2, 3+)."""
    labels = ("entailment", "contradiction")
    per_premise = {p: dict.fromkeys(labels, 0) for p in nli.premises}
    for p, y in zip(nli.premises, nli.labels, strict=True):
        if y in labels:
            per_premise[p][y] += 1
    bins = ["0", "1", "2", "3+"]
    table = (
        pd.DataFrame(
            {
                label: Counter(bins[min(c[label], 3)] for c in per_premise.values())
                for label in labels
            },
            index=bins,
        )
        .fillna(0)
        .astype(int)
    )
    table.index.name = "hypotheses of this label per premise"
    return PremiseCounts(table=table, premises=len(per_premise))


def group_sources(groups: DataTable | pd.DataFrame, nli: NLIData) -> pd.DataFrame:
    """Where each slot of SupMPN groups comes from, in % of the groups.

    Positive slots: an entailment hypothesis of the premise (first use), the premise itself
    (SupMPN padding, or rarely an entailment hypothesis identical to its premise), or an
    entailment hypothesis used again (padding). Negative slots: a contradiction
    hypothesis of the premise, or a hypothesis of another premise (padding).
    """
    groups = as_frame(groups)
    own: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for p, h, y in zip(nli.premises, nli.hypotheses, nli.labels, strict=True):
        own[p][y].add(h)
    cats = [
        "entailment of the premise",
        "the premise itself",
        "entailment used again (padding)",
        "contradiction of the premise",
        "hypothesis of another premise (padding)",
    ]
    pos_cols = [c for c in groups.columns if str(c).startswith("positive")]
    neg_cols = [c for c in groups.columns if str(c).startswith("negative")]
    counts = {c: dict.fromkeys(cats, 0) for c in pos_cols + neg_cols}
    anchors = groups["anchor"].tolist()
    used: list[set[str]] = [set() for _ in anchors]
    for c in pos_cols:
        for i, text in enumerate(groups[c].tolist()):
            if text == anchors[i]:
                cat = cats[1]
            elif text in used[i]:
                cat = cats[2]
            else:
                cat = cats[0]
            used[i].add(text)
            counts[c][cat] += 1
    for c in neg_cols:
        for i, text in enumerate(groups[c].tolist()):
            own_contradiction = text in own[anchors[i]]["contradiction"]
            counts[c][cats[3] if own_contradiction else cats[4]] += 1
    table = pd.DataFrame.from_dict(counts, orient="index")[cats].astype(float)
    table = 100.0 * table / max(len(groups), 1)
    table.index.name = "slot"
    return table.loc[:, (table > 0).any(axis=0)]
