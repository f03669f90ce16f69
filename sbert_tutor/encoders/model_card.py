"""The model card (``README.md``) that :meth:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder.save` writes, from what the encoder knows.

sentence-transformers saves a ``README.md`` with every model: YAML front matter that the Hugging
Face hub reads (library, pipeline, tags, base model), then what the model is, how to use it and
how it was trained. ``model_card`` writes the same kind of card from recorded facts only:

* where the model was loaded from, its transformer class, ``max_seq_length``, pooling, dense
  layers, normalisation and output dimension (:meth:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder.describe` and the
  transformer's config);
* for every :func:`~sbert_tutor.training.recipe.fit` run on it
  (``SentenceEncoder.training_history``): the loss and its options, the training data, steps,
  batch size, learning rate and schedule, the final loss and the evaluations recorded;
* usage with sbert_tutor and with sentence-transformers;
* the versions of the packages that wrote it.

``base_model`` (front matter) is the hub id of the model it started from, given only when that is
known: a model resolved by a hub name (the hub, its local cache, a models folder, a packaged copy).
A model loaded from a local folder has none; its card says which folder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sbert_tutor.provenance import package_versions

__all__: list[str] = []

#: The card's hub metadata (as sentence-transformers writes it).
_LIBRARY_NAME = "sentence-transformers"
_PIPELINE_TAG = "sentence-similarity"
_TAGS = ("sentence-transformers", "sentence-similarity", "feature-extraction")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_EXAMPLES = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]


def model_card(
    info: dict[str, Any],
    model: Any,
    training: Sequence[dict[str, Any]] = (),
    folder: str | Path = "path/to/model",
) -> str:
    """The ``README.md`` text of a saved encoder.

    Args:
        info: :meth:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder.describe` (name, source, pooling, normalize, ...).
        model: the Hugging Face transformer (its class name and ``config`` are read).
        training: ``SentenceEncoder.training_history``, one entry a ``fit`` run, oldest first.
        folder: where the model is saved (the usage snippets load it from there).
    """
    base = base_model(info)
    parts = [
        _front_matter(base),
        _introduction(info, base, training, Path(folder).name or str(folder)),
        _details(info, model, trained=bool(training)),
        _usage(info, str(folder)),
        _training(training),
        _versions(),
    ]
    return "\n\n".join(parts) + "\n"


def base_model(info: dict[str, Any]) -> str | None:
    """The hub id of the model this one was loaded as (training keeps the name and source), or
    ``None`` when it was not resolved by a hub name (a local folder, a model built in memory)."""
    name, source = str(info.get("name") or ""), str(info.get("source") or "")
    if not _HUB_ID.match(name) or source.startswith(("local folder", "in-memory")):
        return None
    return name


def _front_matter(base: str | None) -> str:
    lines = ["---", f"library_name: {_LIBRARY_NAME}", f"pipeline_tag: {_PIPELINE_TAG}", "tags:"]
    lines += [f"- {tag}" for tag in _TAGS]
    if base is not None:
        lines.append(f"base_model: {base}")
    return "\n".join([*lines, "---"])


def _introduction(
    info: dict[str, Any], base: str | None, training: Sequence[dict[str, Any]], title: str
) -> str:
    start = f"[{base}](https://huggingface.co/{base})" if base else f"`{info['name']}`"
    how = (
        f"fine-tuned from {start} with sbert_tutor ({_runs(len(training))}, see Training)"
        if training
        else f"{start} as sbert_tutor loaded it, without training by sbert_tutor"
    )
    return (
        f"# {title}\n\n"
        f"A [sentence-transformers](https://www.SBERT.net) model saved by sbert_tutor: {how}. "
        f"It maps sentences to a {info['embedding_dim']}-dimensional dense vector space, for "
        "semantic similarity, search and clustering. Both libraries load this folder.\n\n"
        "This card was written by `SentenceEncoder.save` from what the encoder records; saving "
        "again into this folder overwrites it, as sentence-transformers does."
    )


def _runs(n: int) -> str:
    return "1 run" if n == 1 else f"{n} runs"


def _details(info: dict[str, Any], model: Any, trained: bool) -> str:
    config = getattr(model, "config", None)
    layers = getattr(config, "num_hidden_layers", None)
    hidden = getattr(config, "hidden_size", None)
    transformer = f"`{type(model).__name__}` ({getattr(config, 'model_type', '?')}"
    transformer += f", {layers} layers" if layers else ""
    transformer += f", hidden size {hidden})" if hidden else ")"
    dense = info.get("dense") or []
    rows = [
        ("Loaded from", info["source"] + (", then trained (see Training)" if trained else "")),
        ("Transformer", transformer),
        ("Maximum sequence length", f"{info['max_seq_length']} tokens (longer inputs are cut)"),
        ("Pooling", f"`{info['pooling']}`"),
    ]
    if dense:
        rows.append(("Dense layers", "; ".join(_dense(layer) for layer in dense)))
    rows += [
        (
            "Normalisation",
            "L2: unit-length embeddings (cosine = dot product)" if info["normalize"] else "none",
        ),
        ("Output dimension", str(info["embedding_dim"])),
        ("Similarity function", "cosine"),
    ]
    if "default_prompt" in info:
        rows.append(("Default prompt", f"`{info['default_prompt']!r}`, put before every input"))
    pipeline = ["Transformer", f"Pooling ({info['pooling']})"]
    pipeline += [f"Dense ({d['in_features']} -> {d['out_features']})" for d in dense]
    pipeline += ["Normalize"] if info["normalize"] else []
    return "## Model details\n\n" + _table(rows) + "\n\nPipeline: " + " -> ".join(pipeline)


def _dense(layer: dict[str, Any]) -> str:
    bias = "with bias" if layer.get("bias", True) else "no bias"
    activation = str(layer.get("activation_function", "?")).rsplit(".", 1)[-1]
    return f"{layer['in_features']} -> {layer['out_features']}, {activation}, {bias}"


def _usage(info: dict[str, Any], folder: str) -> str:
    path = json.dumps(folder)  # a valid Python string literal, backslashes included
    examples = json.dumps(_EXAMPLES)
    d = info["embedding_dim"]
    return f"""## Usage

With sbert_tutor (`pip install sbert-tutor`):

```python
from sbert_tutor import SentenceEncoder

encoder = SentenceEncoder.from_pretrained({path})
embeddings = encoder.encode({examples})
print(embeddings.shape)  # (3, {d})
print(encoder.similarity(embeddings, embeddings))  # 3 x 3 cosine similarities
```

With sentence-transformers (`pip install -U sentence-transformers`):

```python
from sentence_transformers import SentenceTransformer

model = SentenceTransformer({path})
embeddings = model.encode({examples})
print(embeddings.shape)  # (3, {d})
print(model.similarity(embeddings, embeddings))
```"""


def _training(training: Sequence[dict[str, Any]]) -> str:
    if not training:
        return (
            "## Training\n\nsbert_tutor records no training of this model: it was saved as loaded "
            "(see the card of the model it was loaded from for how that was trained)."
        )
    blocks = [f"## Training\n\nTrained with sbert_tutor's `fit` ({_runs(len(training))})."]
    for i, run in enumerate(training, 1):
        blocks.append(_run(i, run))
    return "\n\n".join(blocks)


def _run(i: int, run: dict[str, Any]) -> str:
    loss = dict(run.get("loss") or {})
    name = loss.pop("name", "?")
    config = run.get("config") or {}
    data = run.get("train_data") or {}
    start = run.get("base_model") or {}
    options = ", ".join(f"{k}={v}" for k, v in loss.items()) or "defaults"
    rows = [
        ("Started from", f"{start.get('name', '?')} ({start.get('source', '?')})"),
        ("Loss", f"`{name}` ({options})"),
        (
            "Training data",
            f"{data.get('source', '?')}: {data.get('examples', '?')} examples, columns "
            + ", ".join(data.get("columns") or ["?"]),
        ),
        (
            "Steps",
            f"{run.get('steps_done', '?')} of {run.get('total_steps', '?')} "
            f"({run.get('warmup_steps', '?')} warm-up), epochs {config.get('epochs', '?')}",
        ),
        ("Batch size", str(config.get("batch_size", "?"))),
        (
            "Learning rate",
            f"{config.get('lr', '?')}, {config.get('schedule', '?')} schedule, warm-up ratio "
            f"{config.get('warmup_ratio', '?')}, weight decay {config.get('weight_decay', '?')} "
            "(AdamW)",
        ),
        ("Gradient clipping", f"max norm {config.get('max_grad_norm')}"),
        ("Precision", str((run.get("precision") or {}).get("amp", "fp32"))),
        ("Seed", str(config.get("seed", "?"))),
    ]
    if run.get("final_loss") is not None:
        last = min(10, int(run.get("steps_done") or 10))
        rows.append(
            ("Final training loss", f"{run['final_loss']:.4f} (mean of the last {last} steps)")
        )
    if run.get("train_seconds") is not None:
        rows.append(("Training time", f"{run['train_seconds']:.1f} s"))
    if run.get("finished"):
        rows.append(("Finished", str(run["finished"])))
    text = f"### Run {i}: `{name}` loss\n\n" + _table(rows)
    evals = run.get("evals") or []
    if evals:
        primary = f" (main metric: {run['evaluator']})" if run.get("evaluator") else ""
        text += f"\n\nEvaluations during training{primary}:\n\n"
        text += _evals_table(evals)
    return text


def _evals_table(evals: Sequence[dict[str, Any]]) -> str:
    columns = list(dict.fromkeys(k for e in evals for k in e))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for e in evals:
        lines.append("| " + " | ".join(_number(e.get(c)) for c in columns) + " |")
    return "\n".join(lines)


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value == value else "nan"
    return "" if value is None else str(value)


def _versions() -> str:
    versions = ", ".join(f"{k} {v}" for k, v in package_versions().items())
    return f"## Framework versions\n\n{versions}"


def _table(rows: Sequence[tuple[str, str]]) -> str:
    lines = ["| | |", "|---|---|"]
    lines += [f"| {key} | {_cell(value)} |" for key, value in rows]
    return "\n".join(lines)


def _cell(value: str) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")
