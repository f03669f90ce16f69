r"""Experiments of the training-objective chapters (6 classification, 7 regression, 8 triplet).

Three kinds of helpers, each called in one line by a chapter:

* **Gradients by hand.** :func:`softmax_gradients_by_hand` and
  :func:`cosine_regression_gradients_by_hand` write out the derivations of the chapters in
  tensor code; :func:`softmax_gradient_check` and :func:`cosine_regression_gradient_check`
  compare them with autograd on the library's own loss functions.
* **Short training runs.** :func:`train_variants` trains one fresh encoder per variant (an
  objective with its options) and scores each on the same STS pairs;
  :func:`feature_ablation` is the concatenation ablation of SBERT's Table 6 built on it, and
  :func:`before_after` evaluates one run before and after training.
* **Fixed embeddings.** :func:`target_scaling_table` (what the regression loss does with each
  label scale), :func:`triplet_margin_sweep` (how many triplets a margin keeps active) and
  :func:`linear_probe` (what a softmax head can read from each feature set of a frozen
  encoder, with :func:`head_block_means` to read the head) need no encoder training: they read
  embeddings of real pairs and triplets.

Published numbers (:func:`published_table6_rows`, ...) are copied from papers, never computed,
and carry their source.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor

from sbert_tutor.losses import (
    DEFAULT_FEATURES,
    TRIPLET_DISTANCES,
    concat_features,
    cosine_regression,
    pairwise_distance,
    softmax_classification,
)
from sbert_tutor.losses.classification import _check_features

SBERT = "Reimers & Gurevych (2019), SBERT paper"


# --------------------------------------------------------------------------- gradients by hand
def softmax_gradients_by_hand(
    u: Tensor,
    v: Tensor,
    labels: Tensor,
    weight: Tensor,
    bias: Tensor,
    features: Sequence[str] = DEFAULT_FEATURES,
) -> dict[str, Tensor]:
    r"""The gradients of SBERT's classification loss, written out (chapter 6).

    With :math:`x = [f_1; \dots; f_k]` the concatenated features, :math:`z = W x + b`,
    :math:`o = \operatorname{softmax}(z)` and :math:`\mathcal{L} = -\frac1N \sum_i \log o_{i,y_i}`:

    * :math:`\partial \mathcal{L} / \partial z_i = (o_i - e_{y_i}) / N`;
    * :math:`g_i = W^\top \partial \mathcal{L} / \partial z_i`, cut into one block :math:`g^{f}`
      per feature;
    * :math:`\partial \mathcal{L} / \partial u = g^{u} + \operatorname{sign}(u - v) \odot g^{|u-v|}
      + v \odot g^{u*v}` and
      :math:`\partial \mathcal{L} / \partial v = g^{v} - \operatorname{sign}(u - v) \odot
      g^{|u-v|} + u \odot g^{u*v}` (absent features contribute nothing).

    Args:
        u, v: ``[N, d]`` embeddings; labels: ``[N]`` class ids.
        weight, bias: the classifier's ``[C, k*d]`` matrix and ``[C]`` bias.
        features: the concatenated features, in order.

    Returns:
        ``{"logits", "probabilities", "dlogits", "du", "dv"}`` (no autograd involved).
    """
    features = _check_features(features)
    n, d = u.shape
    x = concat_features(u, v, features)
    logits = x @ weight.T + bias
    probabilities = torch.softmax(logits, dim=-1)
    onehot = F.one_hot(torch.as_tensor(labels, dtype=torch.long), logits.shape[-1]).to(u.dtype)
    dlogits = (probabilities - onehot) / n
    blocks = dict(zip(features, (dlogits @ weight).split(d, dim=1), strict=True))
    zero = torch.zeros_like(u)
    sign = torch.sign(u - v)
    du = blocks.get("u", zero) + sign * blocks.get("|u-v|", zero) + v * blocks.get("u*v", zero)
    dv = blocks.get("v", zero) - sign * blocks.get("|u-v|", zero) + u * blocks.get("u*v", zero)
    return {
        "logits": logits,
        "probabilities": probabilities,
        "dlogits": dlogits,
        "du": du,
        "dv": dv,
    }


def _comparison(rows: list[tuple[str, Tensor, Tensor]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "gradient": name,
                "shape": tuple(auto.shape),
                "max |autograd|": float(auto.abs().max()),
                "max |autograd - by hand|": float((auto - hand).abs().max()),
            }
            for name, auto, hand in rows
        ]
    ).set_index("gradient")


def softmax_gradient_check(
    u: Tensor,
    v: Tensor,
    labels: Tensor,
    classifier: Any,
    features: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Autograd through :func:`~sbert_tutor.losses.softmax_classification` vs the hand derivation.

    Args:
        u, v: ``[N, d]`` embeddings; labels: ``[N]`` class ids.
        classifier: a :class:`~sbert_tutor.losses.SoftmaxClassifier` (its ``linear`` layer is read).
        features: defaults to the classifier's own.

    Returns:
        One row per gradient (``dL/dlogits``, ``dL/du``, ``dL/dv``): shape, size and the largest
        difference; ``attrs["by_hand"]`` holds the hand-computed tensors.
    """
    features = tuple(features or classifier.features)
    linear = classifier.linear
    u_ = u.detach().clone().requires_grad_()
    v_ = v.detach().clone().requires_grad_()
    softmax_classification(u_, v_, labels, classifier, features).backward()
    logits = linear(concat_features(u, v, features)).detach().requires_grad_()
    F.cross_entropy(logits, torch.as_tensor(labels, dtype=torch.long)).backward()
    with torch.no_grad():
        hand = softmax_gradients_by_hand(u, v, labels, linear.weight, linear.bias, features)
    table = _comparison(
        [
            ("dL/dlogits", logits.grad, hand["dlogits"]),
            ("dL/du", u_.grad, hand["du"]),
            ("dL/dv", v_.grad, hand["dv"]),
        ]
    )
    table.attrs["by_hand"] = hand
    return table


def cosine_regression_gradients_by_hand(
    u: Tensor, v: Tensor, scores: Tensor, score_range: tuple[float, float] = (0.0, 5.0)
) -> dict[str, Tensor]:
    r"""The gradients of SBERT's regression loss, written out (chapter 7).

    With :math:`c_i = \cos(u_i, v_i)`, :math:`t_i = (y_i - y_{\min}) / (y_{\max} - y_{\min})` and
    :math:`\mathcal{L} = \frac1N \sum_i (c_i - t_i)^2`:

    .. math::

        \frac{\partial \mathcal{L}}{\partial u_i} = \frac{2 (c_i - t_i)}{N}
        \cdot \frac{1}{\lVert u_i \rVert} \bigl(\hat v_i - c_i \hat u_i\bigr),
        \qquad \hat u = u / \lVert u \rVert,

    and the same with :math:`u, v` swapped. The bracket is orthogonal to :math:`u_i`.

    Returns:
        ``{"cosine", "targets", "dcos", "du", "dv"}`` (no autograd involved).
    """
    lo, hi = float(score_range[0]), float(score_range[1])
    n = u.shape[0]
    nu = u.norm(dim=1, keepdim=True)
    nv = v.norm(dim=1, keepdim=True)
    u_hat, v_hat = u / nu, v / nv
    cosine = (u_hat * v_hat).sum(dim=1)
    targets = (torch.as_tensor(scores, dtype=u.dtype) - lo) / (hi - lo)
    dcos = 2.0 * (cosine - targets) / n
    c = cosine[:, None]
    du = dcos[:, None] * (v_hat - c * u_hat) / nu
    dv = dcos[:, None] * (u_hat - c * v_hat) / nv
    return {"cosine": cosine, "targets": targets, "dcos": dcos, "du": du, "dv": dv}


def cosine_regression_gradient_check(
    u: Tensor, v: Tensor, scores: Tensor, score_range: tuple[float, float] = (0.0, 5.0)
) -> pd.DataFrame:
    """Autograd through :func:`~sbert_tutor.losses.cosine_regression` vs the hand derivation.

    Returns:
        Rows ``dL/du`` and ``dL/dv`` (as :func:`softmax_gradient_check`), plus the column
        ``max |x . dL/dx|``: the gradient is orthogonal to its own embedding, so it is ~0.
    """
    u_ = u.detach().clone().requires_grad_()
    v_ = v.detach().clone().requires_grad_()
    cosine_regression(u_, v_, scores, score_range).backward()
    hand = cosine_regression_gradients_by_hand(u, v, scores, score_range)
    table = _comparison([("dL/du", u_.grad, hand["du"]), ("dL/dv", v_.grad, hand["dv"])])
    table["max |x . dL/dx|"] = [
        float((u * u_.grad).sum(dim=1).abs().max()),
        float((v * v_.grad).sum(dim=1).abs().max()),
    ]
    table.attrs["by_hand"] = hand
    return table


# --------------------------------------------------------------------------- data and scoring
def sts_sample(task: str = "stsb", split: str = "dev", n: int | None = None, seed: int = 0):
    """An STS split, or a seeded random sample of ``n`` of its pairs (in data order).

    ``n=None`` (or ``n`` >= the split's size) returns the whole split. The sample keeps the
    split's files (for provenance) and records its size in ``meta["sample"]``.
    """
    from sbert_tutor.data import load_sts

    data = load_sts(task, split)
    if n is None or n >= len(data):
        return data
    if n < 2:
        raise ValueError(f"a correlation needs at least 2 pairs, got n={n}")
    keep = np.sort(np.random.default_rng(seed).choice(len(data), n, replace=False))
    return dataclasses.replace(
        data,
        sentences1=[data.sentences1[i] for i in keep],
        sentences2=[data.sentences2[i] for i in keep],
        scores=data.scores[keep],
        subsets=[data.subsets[i] for i in keep],
        labels=None if data.labels is None else [data.labels[i] for i in keep],
        meta={**data.meta, "sample": f"{n} of {len(data)} pairs, seed {seed}"},
    )


def sts_spearman(encoder: Any, data: Any) -> float:
    """Spearman x100 of :math:`\\cos(u, v)` against the gold scores of ``data`` (an ``STSData``)."""
    from sbert_tutor.training import STSEvaluator

    evaluator = STSEvaluator(data=data)
    return evaluator(encoder)[evaluator.primary_metric]


def pair_cosines(encoder: Any, data: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(cos(u, v), gold score)`` for every pair of an ``STSData`` (each sentence encoded once)."""
    from sbert_tutor.evaluation.sts import predict_similarity

    return predict_similarity(encoder, data, show_progress=False), np.asarray(data.scores)


def embed_triplets(
    encoder: Any, triplets: pd.DataFrame, n: int | None = None, seed: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """Embeddings ``(anchor, positive, negative)``, each ``[n, d]``, of (a seeded sample of) triplets.

    ``triplets`` has columns ``anchor, positive, negative`` (e.g.
    :func:`~sbert_tutor.data.nli.nli_triplets`); every distinct text is encoded once, with the
    encoder's own normalisation setting.
    """
    frame = triplets[["anchor", "positive", "negative"]]
    if n is not None and n < len(frame):
        keep = np.sort(np.random.default_rng(seed).choice(len(frame), n, replace=False))
        frame = frame.iloc[keep]
    unique = list(dict.fromkeys(frame.to_numpy().ravel().tolist()))
    position = {text: i for i, text in enumerate(unique)}
    emb = torch.from_numpy(encoder.encode(unique, batch_size=64, show_progress=False))
    a, p, q = (emb[[position[t] for t in frame[col]]] for col in ("anchor", "positive", "negative"))
    return a, p, q


# --------------------------------------------------------------------------- linear probes
def split_by_premise(
    pairs: pd.DataFrame, n_train: int | None, n_test: int, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split NLI pairs into two sets with **disjoint premises** (every hypothesis of a premise
    goes to the same side).

    Premises are shuffled with ``numpy.random.default_rng(seed)``; the first ``n_test`` go to
    the test side, the next ``n_train`` (``None``: all the others) to the train side. Both keep
    data order.
    """
    premises = list(dict.fromkeys(pairs["premise"]))
    if n_test < 1 or n_test >= len(premises):
        raise ValueError(f"n_test must be in [1, {len(premises) - 1}] premises, got {n_test}")
    order = np.random.default_rng(seed).permutation(len(premises))
    test = {premises[i] for i in order[:n_test]}
    rest = order[n_test:] if n_train is None else order[n_test : n_test + n_train]
    train = {premises[i] for i in rest}
    return (
        pairs[pairs["premise"].isin(train)].reset_index(drop=True),
        pairs[pairs["premise"].isin(test)].reset_index(drop=True),
    )


def embed_pairs(encoder: Any, pairs: pd.DataFrame) -> tuple[Tensor, Tensor, Tensor]:
    """``(u, v, labels)`` of NLI pairs (columns ``premise, hypothesis, label`` with label ids),
    every distinct text encoded once with the encoder's own normalisation."""
    texts = list(dict.fromkeys([*pairs["premise"], *pairs["hypothesis"]]))
    position = {text: i for i, text in enumerate(texts)}
    emb = torch.from_numpy(np.asarray(encoder.encode(texts, batch_size=64, show_progress=False)))
    u = emb[[position[t] for t in pairs["premise"]]]
    v = emb[[position[t] for t in pairs["hypothesis"]]]
    return u, v, torch.tensor(np.asarray(pairs["label"], dtype=np.int64))


def fit_probe(
    u: Tensor,
    v: Tensor,
    labels: Tensor,
    features: Sequence[str] = DEFAULT_FEATURES,
    num_labels: int = 3,
    l2: float = 1e-3,
    max_iter: int = 100,
    seed: int = 0,
) -> Any:
    r"""Fit a softmax head on **fixed** embeddings: a linear probe of the feature set.

    Minimises the classification loss of :func:`~sbert_tutor.losses.softmax_classification`
    plus :math:`\lambda \lVert W \rVert_F^2` (``l2``) with full-batch L-BFGS; the encoder is not
    involved, so this measures what a linear head can read from the features.

    Returns:
        The trained :class:`~sbert_tutor.losses.SoftmaxClassifier` (in eval mode).
    """
    from sbert_tutor.losses import SoftmaxClassifier

    features = _check_features(features)
    torch.manual_seed(seed)
    head = SoftmaxClassifier(u.shape[1], num_labels, features)
    x = concat_features(u.detach(), v.detach(), features)
    y = torch.as_tensor(labels, dtype=torch.long)
    optimizer = torch.optim.LBFGS(
        head.parameters(), lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe"
    )

    def closure() -> Tensor:
        optimizer.zero_grad()
        loss = F.cross_entropy(head(x), y) + l2 * head.linear.weight.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return head.eval()


def probe_accuracy(head: Any, u: Tensor, v: Tensor, labels: Tensor) -> float:
    """Share of pairs whose arg-max class is the gold label."""
    with torch.no_grad():
        predicted = head(concat_features(u, v, head.features)).argmax(dim=-1)
    return float((predicted == torch.as_tensor(labels)).double().mean())


def linear_probe(
    encoder: Any,
    train_pairs: pd.DataFrame,
    test_pairs: pd.DataFrame,
    feature_sets: Sequence[Sequence[str]],
    l2: float = 1e-3,
    max_iter: int = 100,
) -> pd.DataFrame:
    """One linear probe (:func:`fit_probe`) per feature set, on the frozen ``encoder``.

    Returns:
        Rows named like ``"(u, v, |u-v|)"``: ``train accuracy``, ``test accuracy`` and the
        number of pairs; ``attrs["heads"]`` holds the fitted heads, ``attrs["majority"]`` the
        test accuracy of always predicting the most frequent training label.
    """
    both = pd.concat([train_pairs, test_pairs], ignore_index=True)
    u, v, y = embed_pairs(encoder, both)
    n = len(train_pairs)
    rows, heads = [], {}
    for fs in feature_sets:
        name = feature_label(fs)
        head = fit_probe(u[:n], v[:n], y[:n], fs, l2=l2, max_iter=max_iter)
        heads[name] = head
        rows.append(
            {
                "features": name,
                "train accuracy": probe_accuracy(head, u[:n], v[:n], y[:n]),
                "test accuracy": probe_accuracy(head, u[n:], v[n:], y[n:]),
            }
        )
    table = pd.DataFrame(rows).set_index("features")
    majority = int(torch.mode(y[:n]).values)
    table.attrs.update(
        {
            "heads": heads,
            "majority": float((y[n:] == majority).double().mean()),
            "pairs": {"train": n, "test": len(test_pairs)},
        }
    )
    return table


def head_block_means(classifier: Any, label_names: Sequence[str] | None = None) -> pd.DataFrame:
    r"""Mean weight of each class's block of each feature, :math:`\operatorname{mean}_j W^{f}_{cj}`.

    For ``|u-v|`` the sign is readable: a negative mean lowers the class's logit as the pair
    drifts apart (the class wants the sentences close), a positive one raises it.
    """
    d = classifier.embedding_dim
    blocks = classifier.linear.weight.detach().split(d, dim=1)
    names = list(label_names) if label_names is not None else list(range(classifier.num_labels))
    return pd.DataFrame(
        {f: b.mean(dim=1).numpy() for f, b in zip(classifier.features, blocks, strict=True)},
        index=pd.Index(names, name="class"),
    )


# --------------------------------------------------------------------------- training runs
def train_variants(
    model: str,
    variants: Mapping[str, tuple[str, Mapping[str, Any]]],
    train: Any,
    config: Any,
    eval_data: Any,
    *,
    max_examples: int | None = None,
    baseline: bool = True,
) -> pd.DataFrame:
    """Train a fresh ``model`` once per variant and score each on the same STS pairs.

    Args:
        model: a hub name or folder, loaded anew for every run (``fit`` trains in place).
        variants: ``{name: (loss, objective_options)}``, e.g.
            ``{"euclidean": ("triplet", {"distance": "euclidean", "margin": 1.0})}``.
        train: a named training set or data (as :func:`~sbert_tutor.training.recipe.fit`).
        config: the :class:`~sbert_tutor.training.TrainingConfig` shared by every run.
        eval_data: an ``STSData`` (e.g. :func:`sts_sample`); Spearman x100 of cosine.
        max_examples: train on a seeded subset of this size.
        baseline: add a first row for the untrained model.

    Returns:
        One row per run: ``variant``, ``loss``, ``options``, ``spearman``, ``change`` (vs the
        untrained model, when ``baseline``), ``final_loss`` (mean of the last 10 steps) and
        ``seconds``. ``attrs`` holds the runs' ``records``, ``logs`` and the ``eval_data``
        description; the encoders are not kept.
    """
    from sbert_tutor.encoder import SentenceEncoder
    from sbert_tutor.training.recipe import fit

    rows: list[dict[str, Any]] = []
    records: dict[str, Any] = {}
    logs: dict[str, Any] = {}
    if baseline:
        encoder = SentenceEncoder.from_pretrained(model)
        rows.append(
            {
                "variant": "untrained (start model)",
                "loss": None,
                "options": None,
                "spearman": sts_spearman(encoder, eval_data),
                "final_loss": float("nan"),
                "seconds": 0.0,
            }
        )
        del encoder
    for name, (loss, options) in variants.items():
        encoder = SentenceEncoder.from_pretrained(model)
        run = fit(
            encoder,
            loss,
            train,
            config,
            objective_options=dict(options),
            max_examples=max_examples,
        )
        rows.append(
            {
                "variant": name,
                "loss": loss,
                "options": dict(options),
                "spearman": sts_spearman(run.encoder, eval_data),
                "final_loss": run.record.final_loss(),
                "seconds": run.seconds,
            }
        )
        records[name] = run.record
        logs[name] = run.log
        del encoder, run
    table = pd.DataFrame(rows)
    if baseline:
        table.insert(4, "change", table["spearman"] - table["spearman"].iloc[0])
    table = table.set_index("variant")
    table.attrs.update(
        {
            "records": records,
            "logs": logs,
            "eval_data": f"{eval_data.name}/{eval_data.split}: "
            + eval_data.meta.get("sample", f"all {len(eval_data)} pairs"),
        }
    )
    return table


def feature_label(features: Sequence[str]) -> str:
    """``("u", "v", "|u-v|")`` -> ``"(u, v, |u-v|)"``."""
    return "(" + ", ".join(_check_features(features)) + ")"


def feature_ablation(
    model: str,
    feature_sets: Sequence[Sequence[str]],
    train: Any,
    config: Any,
    eval_data: Any,
    *,
    max_examples: int | None = None,
    baseline: bool = True,
) -> pd.DataFrame:
    """SBERT Table 6's concatenation ablation: the softmax objective once per feature set.

    Each feature set trains a fresh ``model`` (and a fresh classifier head of ``len(features) *
    d`` inputs) with the same data, seed and settings; rows are named like ``"(u, v, |u-v|)"``.
    See :func:`train_variants` for the other arguments and the returned table.
    """
    variants = {
        feature_label(fs): ("softmax", {"features": tuple(_check_features(fs))})
        for fs in feature_sets
    }
    return train_variants(
        model,
        variants,
        train,
        config,
        eval_data,
        max_examples=max_examples,
        baseline=baseline,
    )


def variant_rows(
    table: pd.DataFrame,
    metric: str,
    setup_prefix: str = "",
    baseline_setup: str | None = None,
) -> list[dict[str, Any]]:
    """Rows ``{"setup", "metric", "value"}`` of a :func:`train_variants` table, for
    :func:`~sbert_tutor.reporting.measured_vs_published`.

    A trained variant's setup is ``setup_prefix`` + its name; the untrained baseline row (if
    any) is kept only when ``baseline_setup`` names it.
    """
    rows = []
    for name, row in table.iterrows():
        trained = not pd.isna(row["loss"])
        if not trained and baseline_setup is None:
            continue
        setup = f"{setup_prefix}{name}" if trained else baseline_setup
        rows.append({"setup": setup, "metric": metric, "value": float(row["spearman"])})
    return rows


def _objective_text(settings: Mapping[str, Any]) -> str:
    """``{"name": "softmax", "features": ["u", "v"], ...}`` -> ``"softmax (features=u, v)"``."""
    rest = {k: v for k, v in settings.items() if k not in ("name", "label_names")}
    options = "; ".join(
        f"{k}={', '.join(map(str, v)) if isinstance(v, list | tuple) else v}"
        for k, v in rest.items()
    )
    return f"{settings['name']} ({options})" if options else str(settings["name"])


def run_summary(logs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per training log (``TrainRun.log``): what was trained, on what, for how long."""
    rows = []
    for name, log in logs.items():
        config = log["config"]
        rows.append(
            {
                "run": name,
                "start model": (log.get("base_model") or {}).get("name"),
                "objective": _objective_text(log["loss"]),
                "train data": log["train_data"]["source"],
                "examples": log["train_data"]["examples"],
                "steps": log["steps_done"],
                "batch size": config["batch_size"],
                "lr": config["lr"],
                "warm-up steps": log["warmup_steps"],
                "seconds": round(float(log["train_seconds"]), 1),
            }
        )
    return pd.DataFrame(rows).set_index("run")


def before_after(
    model: str | Any,
    loss: str,
    train: Any,
    config: Any,
    *,
    tasks: str = "stsb",
    split: str = "test",
    max_examples: int | None = None,
    objective_options: Mapping[str, Any] | None = None,
) -> tuple[pd.DataFrame, Any]:
    """Evaluate on STS, train once, evaluate again: ``(table, run)``.

    Args:
        model: a hub name / folder (loaded here) or an encoder (trained in place).
        loss, train, config, max_examples, objective_options: as
            :func:`~sbert_tutor.training.recipe.fit`.
        tasks, split: the STS evaluation (:func:`~sbert_tutor.evaluation.evaluate_sts`).

    Returns:
        A table with one row per task: ``before``, ``after`` and ``change`` (Spearman x100; the
        evaluation's provenance in ``attrs["provenance"]``), and the
        :class:`~sbert_tutor.training.recipe.TrainRun` (training provenance in
        ``run.log["provenance"]``).
    """
    from sbert_tutor.encoder import SentenceEncoder
    from sbert_tutor.evaluation import evaluate_sts
    from sbert_tutor.training.recipe import fit

    encoder = SentenceEncoder.from_pretrained(model) if isinstance(model, str) else model
    before = evaluate_sts(encoder, tasks, split=split, show_progress=False)
    run = fit(
        encoder,
        loss,
        train,
        config,
        objective_options=dict(objective_options or {}),
        max_examples=max_examples,
    )
    after = evaluate_sts(run.encoder, tasks, split=split, show_progress=False)
    table = pd.DataFrame(
        {
            "before": before.set_index("task")["spearman"],
            "after": after.set_index("task")["spearman"],
        }
    )
    table["change"] = table["after"] - table["before"]
    table.attrs["split"] = split
    table.attrs["note"] = (
        f"Spearman x100 of cosine similarity, {split} split, before/after training"
    )
    table.attrs["provenance"] = after.attrs["provenance"]
    return table, run


def before_after_rows(
    table: pd.DataFrame, model_name: str, run: Any, task: str = "STSb"
) -> list[dict[str, Any]]:
    """The before and after rows of a :func:`before_after` table, for
    :func:`~sbert_tutor.reporting.measured_vs_published`; the setup names the training run."""
    metric = f"{task} {table.attrs.get('split', 'test')} Spearman x100"
    trained = (
        f"{model_name} + {run.log['loss']['name']} on {run.log['train_data']['examples']} "
        f"examples, {run.log['steps_done']} steps"
    )
    return [
        {
            "setup": f"{model_name}, before training",
            "metric": metric,
            "value": float(table.loc[task, "before"]),
        },
        {"setup": trained, "metric": metric, "value": float(table.loc[task, "after"])},
    ]


# --------------------------------------------------------------------------- regression targets
#: label scalings of chapter 7: name -> the interval the gold range (0..5 on STSb) is mapped onto.
TARGET_SCALINGS: dict[str, tuple[float, float]] = {
    "y / 5 (SBERT)": (0.0, 1.0),
    "(y - 2.5) / 2.5": (-1.0, 1.0),
    "y unscaled": (0.0, 5.0),
}


def target_scaling_table(
    cosines: np.ndarray,
    scores: np.ndarray,
    score_range: tuple[float, float] = (0.0, 5.0),
    scalings: Mapping[str, tuple[float, float]] | None = None,
) -> pd.DataFrame:
    r"""What the regression loss asks of fixed cosines under different label scalings.

    Each scaling maps the gold range linearly onto an interval :math:`[a, b]`:
    :math:`t = a + (b - a)(y - y_{\min}) / (y_{\max} - y_{\min})`. Per scaling:

    * ``loss now``: :math:`\frac1N \sum_i (c_i - t_i)^2` at the given cosines;
    * ``loss floor``: the smallest loss any model can reach, as a cosine lives in
      :math:`[-1, 1]`: :math:`\frac1N \sum_i (\operatorname{clip}(t_i, -1, 1) - t_i)^2`;
    * ``unreachable targets``: the share of pairs with :math:`|t_i| > 1`;
    * ``pairs pulled together``: the share with :math:`c_i < t_i`, whose gradient raises the cosine.

    Args:
        cosines: :math:`c_i`, e.g. from :func:`pair_cosines`.
        scores: the gold scores :math:`y_i`, on ``score_range``.
        scalings: ``{name: (a, b)}``; default :data:`TARGET_SCALINGS`.
    """
    c = np.asarray(cosines, dtype=np.float64)
    y = np.asarray(scores, dtype=np.float64)
    lo, hi = float(score_range[0]), float(score_range[1])
    unit = (y - lo) / (hi - lo)
    rows = []
    for name, (a, b) in (scalings or TARGET_SCALINGS).items():
        t = a + (b - a) * unit
        rows.append(
            {
                "scaling": name,
                "target interval": f"[{a:g}, {b:g}]",
                "loss now": float(np.mean((c - t) ** 2)),
                "loss floor": float(np.mean((np.clip(t, -1.0, 1.0) - t) ** 2)),
                "unreachable targets": float(np.mean(np.abs(t) > 1.0)),
                "pairs pulled together": float(np.mean(c < t)),
            }
        )
    return pd.DataFrame(rows).set_index("scaling")


# --------------------------------------------------------------------------- triplet margin
def triplet_margin_sweep(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margins: Sequence[float],
    distances: Sequence[str] = TRIPLET_DISTANCES,
) -> pd.DataFrame:
    r"""For fixed embeddings, the triplet hinge as a function of the margin :math:`\varepsilon`.

    Per distance :math:`\delta` and margin, with :math:`h_i = \max(\delta(a_i, p_i) -
    \delta(a_i, n_i) + \varepsilon, 0)`:

    * ``active``: the share of triplets with :math:`h_i > 0` (those that still get a gradient);
    * ``mean loss``: :math:`\frac1N \sum_i h_i`, the value of
      :func:`~sbert_tutor.losses.triplet`.

    ``attrs["separation"]`` holds, per distance, :math:`\delta(a_i, n_i) - \delta(a_i, p_i)`
    for every triplet (a margin larger than all of them keeps every triplet active).
    """
    rows = []
    separation: dict[str, np.ndarray] = {}
    with torch.no_grad():
        for distance in distances:
            gap = pairwise_distance(anchor, positive, distance) - pairwise_distance(
                anchor, negative, distance
            )
            separation[distance] = (-gap).numpy()
            for margin in margins:
                hinge = F.relu(gap + float(margin))
                rows.append(
                    {
                        "distance": distance,
                        "margin": float(margin),
                        "active": float((hinge > 0).double().mean()),
                        "mean loss": float(hinge.double().mean()),
                    }
                )
    table = pd.DataFrame(rows)
    table.attrs["separation"] = separation
    table.attrs["triplets"] = int(anchor.shape[0])
    return table


def plot_margin_sweep(sweep: pd.DataFrame, bound: float | None = 2.0, axes=None):
    """Two panels: share of active triplets and mean loss vs the margin, one line per distance.

    ``bound`` draws the largest separation unit-length embeddings allow (2 for both distances).
    """
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.8))
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


# --------------------------------------------------------------------------- published numbers
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
WIKISEC_DOCS = "sbert.net docs, Wikipedia Sections Models"
WIKISEC: dict[str, tuple[float, str]] = {
    "SBERT-WikiSec-base (triplet, Euclidean, ε = 1)": (
        80.42,
        f"{SBERT} (Wikipedia sections); {WIKISEC_DOCS}",
    ),
    "Ein Dor et al. (2018), triplet-sen": (
        74.0,
        f"Ein Dor et al. (2018), as quoted in {WIKISEC_DOCS}",
    ),
}


def published_table6_rows(
    feature_sets: Sequence[Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """Table 6 concatenation rows for :func:`~sbert_tutor.reporting.measured_vs_published`
    (all of them, or those of ``feature_sets``)."""
    keys = (
        list(SBERT_TABLE6_CONCAT)
        if feature_sets is None
        else [tuple(_check_features(fs)) for fs in feature_sets]
    )
    return [
        {
            "setup": f"SBERT-NLI-base, softmax on {feature_label(k)}",
            "metric": "STSb dev Spearman x100",
            "value": SBERT_TABLE6_CONCAT[k],
            "source": f"{SBERT}, Table 6",
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
            "source": f"{SBERT}, Table 2",
        }
        for name, (mean, std, what) in SBERT_TABLE2_STSB.items()
    ]


def published_wikisec_rows() -> list[dict[str, Any]]:
    """Wikipedia-sections test accuracy of SBERT's triplet model and of Ein Dor et al."""
    return [
        {"setup": name, "metric": "WikiSec test accuracy (%)", "value": value, "source": source}
        for name, (value, source) in WIKISEC.items()
    ]
