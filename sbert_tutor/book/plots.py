r"""Figures the chapters show. Each function takes computed results and returns the axes.

matplotlib is imported when a figure is drawn (it is not needed to compute anything).

==================================  ============================================================
chapter                             figures
==================================  ============================================================
1 introduction                      :func:`plot_similarity_matrix`
2 cost of cross-encoders, 13        :func:`plot_cost_curves`
3 pooling and STS                   :func:`plot_pooling`, :func:`plot_cosine_histograms`,
                                    :func:`plot_sts_tasks`
4-5 retrieval                       :func:`plot_metrics_vs_k`, :func:`plot_first_relevant_rank`
6-11 training runs                  :func:`plot_loss_curves`
8 triplet                           :func:`plot_margin_sweep`
9 MNRL                              :func:`plot_scale_sweep`, :func:`plot_candidate_softmax`,
                                    :func:`plot_batch_size_sweep`, :func:`plot_duplicates`
11 semantic-search guidance         :func:`plot_teacher_cosines`
12 distance dilemma                 :func:`plot_teacher_scores`, :func:`plot_training_curves`,
                                    :func:`plot_results`, :func:`plot_triplet_pca`
13 computational efficiency         :func:`plot_throughput`, :func:`plot_throughput_by_length`
==================================  ============================================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sbert_tutor.book.distance_dilemma import MEASURES
from sbert_tutor.data.table import DataTable, as_frame

if TYPE_CHECKING:  # pragma: no cover
    from sbert_tutor.book.distance_dilemma import DilemmaRun, TrainingSets
    from sbert_tutor.training import TrainingRecord


_SECONDS = {"1 s": 1, "1 min": 60, "1 h": 3600, "1 day": 86400, "1 year": 365 * 86400}


def _axes(ax=None, figsize=(7, 4)):
    """``ax``, or the axes of a new figure."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _panels(axes, cols: int, figsize: tuple[float, float], rows: int = 1):
    """``axes``, or a flat array of ``rows * cols`` panels of a new figure."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(rows, cols, figsize=figsize, squeeze=False)
        axes = axes.ravel()
    return axes


def plot_similarity_matrix(matrix: np.ndarray, labels: list[str], ax=None):
    """A heatmap of pairwise cosine similarities with the sentences as labels."""
    ax = _axes(ax, figsize=(6, 5))
    image = ax.imshow(matrix, vmin=-0.1, vmax=1.0, cmap="viridis")
    short = [s if len(s) <= 40 else s[:37] + "..." for s in labels]
    ax.set_xticks(range(len(labels)), short, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), short, fontsize=8)
    for i in range(len(labels)):
        for j in range(len(labels)):
            ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=7, color="w")
    ax.figure.colorbar(image, ax=ax, label="cosine")
    return ax


def plot_cost_curves(table: pd.DataFrame, claim: Mapping[str, float] | None = None, ax=None):
    """Seconds to find the most similar pair vs collection size, log-log (book chapter 2)."""
    ax = _axes(ax)
    ax.loglog(table["n"], table["cross_encoder_s"], "o-", label="cross-encoder (this machine)")
    ax.loglog(table["n"], table["bi_encoder_s"], "s-", label="bi-encoder / SBERT (this machine)")
    for text, seconds in _SECONDS.items():
        ax.axhline(seconds, color="grey", lw=0.5, ls=":")
        ax.text(table["n"].min(), seconds * 1.15, text, color="grey", fontsize=8)
    if claim:
        ax.loglog(
            [claim["n"]],
            [claim["cross_encoder_hours"] * 3600],
            "r*",
            ms=12,
            label="paper: BERT, 65 h (V100)",
        )
        ax.loglog(
            [claim["n"]], [claim["sbert_seconds"]], "g*", ms=12, label="paper: SBERT, 5 s (V100)"
        )
    ax.set_xlabel("number of sentences n")
    ax.set_ylabel("seconds to find the most similar pair")
    ax.legend(fontsize=8)
    return ax


def plot_pooling(table: pd.DataFrame, ax=None):
    """Spearman by pooling mode, anisotropy annotated on each bar (book chapter 3)."""
    ax = _axes(ax, figsize=(5, 3.5))
    bars = ax.bar(table["pooling"], table["spearman"], color=["C0", "C1", "C2"][: len(table)])
    for bar, a in zip(bars, table["anisotropy"], strict=False):
        ax.text(
            bar.get_x() + bar.get_width() / 2,
            bar.get_height() + 0.5,
            f"anisotropy {a:.2f}",
            ha="center",
            fontsize=8,
        )
    ax.set_ylabel("Spearman x100")
    ax.set_ylim(0, max(100, float(table["spearman"].max()) + 10))
    return ax


def plot_cosine_histograms(groups: Mapping[str, np.ndarray], ax=None, bins: int = 40):
    """Overlaid histograms of cosine similarities, one per named group."""
    ax = _axes(ax)
    for name, values in groups.items():
        ax.hist(
            values,
            bins=bins,
            range=(-0.2, 1.0),
            alpha=0.5,
            density=True,
            label=f"{name} (mean {np.mean(values):.2f})",
        )
    ax.set_xlabel("cosine similarity")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    return ax


def plot_sts_tasks(table: pd.DataFrame, published: pd.DataFrame | None = None, ax=None):
    """Our per-task Spearman beside published rows (labelled)."""
    ax = _axes(ax, figsize=(8, 4))
    ours = table[table["task"] != "avg"]
    x = np.arange(len(ours))
    rows = {"this run": ours["spearman"].to_numpy()}
    if published is not None:
        for name, row in published.iterrows():
            rows[f"{name} (published)"] = row[
                [c for c in published.columns if c != "avg"]
            ].to_numpy(dtype=float)
    width = 0.8 / len(rows)
    for k, (name, values) in enumerate(rows.items()):
        ax.bar(x + k * width - 0.4 + width / 2, values, width, label=name)
    ax.set_xticks(x, ours["task"])
    ax.set_ylabel("Spearman x100")
    ax.legend(fontsize=8)
    return ax


def plot_metrics_vs_k(
    table: pd.DataFrame, metrics: list[str] | tuple[str, ...] | None = None, ax=None
):
    """Each retrieval measure as a function of the cutoff k (book chapter 4).

    ``table``: one row a measure, one column a cutoff, as returned by
    :func:`sbert_tutor.evaluation.retrieval.evaluate_retrieval`. The k axis is logarithmic.
    """
    ax = _axes(ax)
    ks = np.asarray(table.columns, dtype=float)
    dashed = {"accuracy", "map"}  # they coincide with recall / mrr when each query has R = 1
    for name in metrics or list(table.index):
        ax.plot(
            ks,
            table.loc[name].to_numpy(dtype=float),
            ls="--" if name in dashed else "-",
            marker="." if len(ks) < 30 else None,
            label=name,
        )
    ax.set_xscale("log")
    ax.set_xlabel("cutoff k")
    ax.set_ylabel("value (fraction)")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, ncol=2)
    return ax


def plot_first_relevant_rank(ranks: pd.Series, top_k: int = 10, ax=None, label: str | None = None):
    """How many queries find their first relevant passage at rank 1, 2, ..., ``top_k`` or later.

    ``ranks``: :func:`sbert_tutor.evaluation.retrieval.first_relevant_ranks` (NaN = not
    retrieved). The last bar counts queries with no relevant passage in the top ``top_k``.
    """
    ax = _axes(ax, figsize=(7, 3.5))
    values = ranks.to_numpy(dtype=float)
    counts = [int(np.sum(values == r)) for r in range(1, top_k + 1)]
    counts.append(int(np.sum(np.isnan(values) | (values > top_k))))
    labels = [str(r) for r in range(1, top_k + 1)] + [f">{top_k}"]
    ax.bar(labels, counts, color=["C0"] * top_k + ["C3"], label=label)
    ax.set_xlabel("rank of the first relevant passage")
    ax.set_ylabel("queries")
    if label:
        ax.legend(fontsize=8)
    return ax


def plot_loss_curves(records: Mapping[str, TrainingRecord], ax=None, window: int = 10):
    """Training loss (moving average over ``window`` steps) per named run."""
    ax = _axes(ax)
    for name, record in records.items():
        steps = record.steps_frame()
        ax.plot(steps["step"], steps["loss"], alpha=0.25)
        ax.plot(
            steps["step"], record.smoothed_loss(window), label=name, color=ax.lines[-1].get_color()
        )
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(f"training loss (moving average over {window} steps)")
    ax.legend(fontsize=8)
    return ax


def plot_margin_sweep(sweep: pd.DataFrame, bound: float | None = 2.0, axes=None):
    """Two panels: share of active triplets and mean loss vs the margin, one line per distance.

    ``bound`` draws the largest separation unit-length embeddings allow (2 for both distances).
    """
    axes = _panels(axes, 2, (10, 3.8))
    for distance, part in sweep.groupby("distance", sort=False):
        axes[0].plot(part["margin"], part["active"], marker="o", label=distance)
        axes[1].plot(part["margin"], part["mean loss"], marker="o", label=distance)
    axes[0].set_ylabel("share of triplets with a non-zero hinge")
    axes[1].set_ylabel("mean triplet loss")
    for ax in axes:
        ax.set_xlabel("margin ε")
        if bound is not None:
            ax.axvline(bound, color="grey", ls="--", lw=1)
        ax.legend(fontsize=8)
    axes[0].set_ylim(-0.02, 1.02)
    return axes


def plot_scale_sweep(sweep: pd.DataFrame, ax=None):
    """Loss and chance level vs the scale (log x axis), with p(positive) on a second axis."""
    ax = _axes(ax)
    ax.semilogx(sweep["scale"], sweep["loss"], "o-", label="MNRL loss")
    ax.semilogx(sweep["scale"], sweep["chance log K"], "--", color="grey", label="chance: log K")
    ax.set_xlabel("scale s = 1 / temperature")
    ax.set_ylabel("loss (nats)")
    right = ax.twinx()
    right.semilogx(sweep["scale"], sweep["p(positive)"], "s:", color="C1", label="p(positive)")
    right.set_ylabel("mean softmax probability of the positive")
    right.set_ylim(0, 1)
    lines = ax.get_lines() + right.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], fontsize=8, loc="center right")
    return ax


def plot_candidate_softmax(table: pd.DataFrame, ax=None):
    """Softmax probability of each shown candidate at each scale (grouped bars)."""
    ax = _axes(ax, figsize=(8, 4))
    cols = [c for c in table.columns if str(c).startswith("p (s=")]
    x = np.arange(len(table))
    width = 0.8 / len(cols)
    for i, c in enumerate(cols):
        ax.bar(x + i * width, table[c], width, label=c)
    labels = [
        f"{'* ' if k == 'own positive' else ''}{cos:.2f}"
        for k, cos in zip(table["kind"], table["cosine"], strict=True)
    ]
    ax.set_xticks(x + width * (len(cols) - 1) / 2, labels)
    ax.set_xlabel("candidates by cosine with the anchor (* = its own positive)")
    ax.set_ylabel("softmax probability")
    ax.legend(fontsize=8)
    return ax


def plot_batch_size_sweep(sweep: pd.DataFrame, axes=None):
    """Loss vs chance level (left) and in-batch top-1 accuracy (right) against the batch size."""
    axes = _panels(axes, 2, (10, 3.8))
    left, right = axes
    n = sweep["batch size N"]
    left.semilogx(n, sweep["loss"], "o-", label="MNRL loss (fixed embeddings)")
    left.semilogx(n, sweep["chance log K"], "--", color="grey", label="chance: log K")
    left.set_xlabel("batch size N")
    left.set_ylabel("loss (nats)")
    left.legend(fontsize=8)
    right.semilogx(n, sweep["top-1 accuracy %"], "s-", color="C1")
    right.set_xlabel("batch size N")
    right.set_ylabel("in-batch top-1 accuracy %")
    for a in axes:
        a.set_xticks(list(n), [str(v) for v in n])
    return axes


def plot_duplicates(report: pd.DataFrame, ax=None):
    """Share of batches holding a shared text, random vs no-duplicates batches."""
    ax = _axes(ax, figsize=(6, 3.8))
    for sampler, part in report.groupby("sampler", sort=False):
        ax.plot(part["batch size"], part["batches with a shared text %"], "o-", label=sampler)
    ax.set_xscale("log", base=2)
    sizes = sorted(report["batch size"].unique())
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("batch size")
    ax.set_ylabel("batches with a text in two examples %")
    ax.set_ylim(-3, 103)
    ax.legend(fontsize=8)
    return ax


def plot_teacher_cosines(mined: DataTable | pd.DataFrame, ax=None, bins: int = 30):
    """Histogram of the teacher's cosine between each sentence and its mined positive."""
    ax = _axes(ax, figsize=(6, 3.5))
    values = as_frame(mined)["teacher cosine"]
    ax.hist(values, bins=bins, range=(0.0, 1.0), color="C0", alpha=0.8)
    ax.axvline(float(np.median(values)), color="k", ls="--", lw=1, label="median")
    ax.set_xlabel("teacher cosine(sentence, mined positive)")
    ax.set_ylabel("sentences")
    ax.legend(fontsize=8)
    return ax


def plot_teacher_scores(sets: TrainingSets, ax=None, bins: int = 30):
    """Histograms of the teacher cosine for positive and BM25-negative training pairs."""
    ax = _axes(ax, figsize=(6, 3.5))
    for label, name in ((1, "positive"), (0, "BM25 negative")):
        values = sets.pairs.loc[sets.pairs["label"] == label, "teacher_cosine"]
        ax.hist(values, bins=bins, alpha=0.6, label=name, density=True)
    ax.set_xlabel("teacher cosine c")
    ax.set_ylabel("density")
    ax.set_title("Teacher scores of the training pairs")
    ax.legend()
    return ax


def plot_training_curves(run: DilemmaRun, axes=None, window: int = 5):
    """Loss curves, one panel per architecture (a squared error and a hinge have other scales)."""
    axes = _panels(axes, 2, (11, 3.8))
    for ax, arch in zip(axes, ("Siamese", "Triplet"), strict=True):
        records = {k: v for k, v in run.records.items() if k.startswith(arch)}
        if records:
            plot_loss_curves(records, ax=ax, window=window)
        ax.set_title(f"{arch} objectives")
    return axes


def plot_results(table: pd.DataFrame, measures: Sequence[str] = MEASURES, axes=None):
    """Each measure against k, one line per setup (start model dashed)."""
    axes = _panels(axes, len(measures), (3.6 * len(measures), 3.4))
    for ax, measure in zip(axes, measures, strict=True):
        sub = table[table["measure"] == measure]
        for setup, rows in sub.groupby("setup", sort=False):
            dashed = rows["architecture"].iloc[0] == "start model"
            ax.plot(rows["k"], rows["value"], marker="o", ls="--" if dashed else "-", label=setup)
        ax.set_title(measure)
        ax.set_xlabel("k")
        ax.set_xticks(sorted(sub["k"].unique()))
    axes[0].legend(fontsize=7)
    return axes


def plot_triplet_pca(points: pd.DataFrame, n_lines: int = 15, axes=None):
    """One panel per model: queries, positives and negatives in PCA space (as in Rygaard et al.'s
    Fig. 2B).

    Thin lines join each of the first ``n_lines`` queries to its positive (green) and its
    negative (red).
    """
    models = list(dict.fromkeys(points["model"]))
    if axes is None:
        cols = min(3, len(models))
        rows = math.ceil(len(models) / cols)
        axes = _panels(None, cols, (4.2 * cols, 3.8 * rows), rows=rows)
    style = {
        "query": ("o", "tab:blue"),
        "positive": ("^", "tab:green"),
        "negative": ("x", "tab:red"),
    }
    for ax, model in zip(axes, models, strict=False):
        sub = points[points["model"] == model]
        wide = sub.pivot(index="triplet", columns="role", values=["pc1", "pc2"])
        for i in wide.index[:n_lines]:
            for role, colour in (("positive", "tab:green"), ("negative", "tab:red")):
                ax.plot(
                    [wide.loc[i, ("pc1", "query")], wide.loc[i, ("pc1", role)]],
                    [wide.loc[i, ("pc2", "query")], wide.loc[i, ("pc2", role)]],
                    color=colour,
                    lw=0.6,
                    alpha=0.5,
                )
        for role, (marker, colour) in style.items():
            r = sub[sub["role"] == role]
            ax.scatter(r["pc1"], r["pc2"], marker=marker, color=colour, s=16, label=role)
        ax.set_title(model, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in list(axes)[len(models) :]:
        ax.axis("off")
    axes[0].legend(fontsize=8, loc="best")
    return axes


def plot_throughput(table: pd.DataFrame, ax=None):
    """Sentences/s vs batch size, one line per variant (chapter 13)."""
    ax = _axes(ax, figsize=(6, 4))
    for variant, rows in table.groupby("variant", sort=False):
        ax.plot(rows["batch_size"], rows["sentences_per_s"], "o-", label=variant)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("sentences / second")
    ax.legend(fontsize=8)
    return ax


def plot_throughput_by_length(table: pd.DataFrame, ax=None):
    """Sentences/s per input-length group."""
    ax = _axes(ax, figsize=(6, 3.5))
    ax.bar(table["tokens"], table["sentences_per_s"])
    ax.set_xlabel("tokens per input")
    ax.set_ylabel("sentences / second")
    return ax
