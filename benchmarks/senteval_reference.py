"""SentEval's own engine on our embeddings: the reference for ``sbert-tutor eval-transfer``.

Not a test: a measurement. It imports SentEval (Conneau & Kiela 2018) from a checkout you give it
(``--senteval``; the code is not part of this project), encodes every sentence SentEval's loaders
produce with our ``SentenceEncoder`` (cached by text, so reruns and several tasks encode once) and
runs SentEval's standard transfer setting: logistic regression trained with Adam, batch 64,
tenacity 5, epoch size 4, 10 folds (``usepytorch=True``, ``kfold=10``,
``classifier={nhid: 0, optim: adam, batch_size: 64, tenacity: 5, epoch_size: 4}``), seed 1111.

SentEval was written for a CUDA machine and Python < 3.11. Three run-time shims (no file of SentEval
is edited): ``.cuda()`` returns its tensor or module unchanged, the classifier's
``torch.device("cuda")`` is the CPU, and ``inspect.getargspec`` is ``getfullargspec``. The batcher
joins SentEval's tokens with spaces (as SBERT's SentEval batcher does); an empty sentence gets a
zero vector, as in :mod:`sbert_tutor.evaluation.transfer`.

Example::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/senteval_reference.py \\
        --senteval /path/to/SentEval --tasks MR,CR --cache /tmp/emb --json out.json

On one thread the seven tasks take hours, so they may be run a few tasks at a time and the runs'
files merged into one record (``--merge a.json b.json ... --json out.json``, see
:func:`merge_runs`): every task keeps the run that made it, and every run keeps its provenance.
"""

from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
CONFIG = {
    "usepytorch": True,
    "kfold": 10,
    "classifier": {"nhid": 0, "optim": "adam", "batch_size": 64, "tenacity": 5, "epoch_size": 4},
}


def cpu_shims() -> None:
    """Let SentEval's PyTorch classifier run on a CPU-only torch under Python 3.11."""
    import torch

    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    if not hasattr(inspect, "getargspec"):
        inspect.getargspec = inspect.getfullargspec
    from senteval.tools import classifier

    class CPUTorch(types.ModuleType):
        def __getattr__(self, name):
            return getattr(torch, name)

        @staticmethod
        def device(*args, **kwargs):
            return torch.device("cpu")

    classifier.torch = CPUTorch("torch")


class EmbeddingCache:
    """Sentence -> embedding, stored as ``PREFIX.json`` (texts) + ``PREFIX.npy`` (rows)."""

    def __init__(self, encoder, prefix: str | None):
        self.encoder = encoder
        self.prefix = prefix
        self.index: dict[str, int] = {}
        self.rows = np.zeros((0, encoder.embedding_dim), dtype=np.float32)
        if prefix and Path(prefix + ".json").is_file():
            texts = json.loads(Path(prefix + ".json").read_text())
            self.index = {t: i for i, t in enumerate(texts)}
            self.rows = np.load(prefix + ".npy")

    def add(self, sentences) -> int:
        todo = [s for s in dict.fromkeys(sentences) if s and s not in self.index]
        if todo:
            new = self.encoder.encode(todo, batch_size=64)
            self.index.update({s: len(self.index) + i for i, s in enumerate(todo)})
            self.rows = np.concatenate([self.rows, new])
            if self.prefix:
                Path(self.prefix + ".json").write_text(json.dumps(list(self.index)))
                np.save(self.prefix + ".npy", self.rows)
        return len(todo)

    def lookup(self, sentences) -> np.ndarray:
        zero = np.zeros(self.rows.shape[1], dtype=np.float32)
        return np.stack([self.rows[self.index[s]] if s else zero for s in sentences])


def merge_runs(records: list[dict]) -> dict:
    """One record of several runs' files, each a few tasks of the same evaluation.

    The runs must agree on what was evaluated: the model, the engine's configuration and the
    sha256 of every data file; a task may come from one run only. The result has every task's
    output under ``results`` (with ``"run"``: the index of the run that made it) and, under
    ``runs``, each run's tasks, SentEval commit and provenance, unchanged.
    """
    if len(records) < 2:
        raise ValueError("--merge needs at least two results files")
    first = records[0]
    results: dict = {}
    runs = []
    for i, record in enumerate(records):
        for key in ("model", "engine", "config"):
            if record.get(key) != first.get(key):
                raise ValueError(
                    f"run {i} differs from run 0 in {key!r} ({record.get(key)!r} vs "
                    f"{first.get(key)!r}): only runs of the same evaluation can be merged"
                )
        # the data folder may sit elsewhere on another machine: compare paths below senteval/
        files = {
            f.rsplit("/senteval/", 1)[-1]: h
            for f, h in record["provenance"].get("data_files", {}).items()
        }
        if i == 0:
            first_files = files
        elif files != first_files:
            changed = sorted(
                k for k in files.keys() | first_files.keys() if files.get(k) != first_files.get(k)
            )
            raise ValueError(f"run {i} read other data than run 0: {', '.join(changed)}")
        for task, out in record["results"].items():
            if task in results:
                raise ValueError(f"task {task} is in run {results[task]['run']} and run {i}")
            results[task] = {**out, "run": i}
        runs.append(
            {
                "tasks": list(record["results"]),
                "senteval_commit": record.get("senteval_commit"),
                "provenance": record["provenance"],
            }
        )
    order = [t for t in TASKS if t in results] + [t for t in results if t not in TASKS]
    return {
        "model": first["model"],
        "engine": first["engine"],
        "config": first["config"],
        "results": {t: results[t] for t in order},
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="JSON",
        help="merge these results files (runs of a few tasks each) into --json; nothing is run",
    )
    parser.add_argument("--senteval", help="a SentEval checkout (its root folder)")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--cache", default=None, help="embedding cache prefix (PREFIX.json/.npy)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the classifier")
    parser.add_argument("--json", default=None)
    parser.add_argument("--log", default=None, help="write SentEval's own log (chosen L2 per fold)")
    args = parser.parse_args(argv)
    if args.merge:
        if not args.json:
            parser.error("--merge writes its record to --json: give the output path")
        from sbert_tutor.commands.common import write_json
        from sbert_tutor.provenance import provenance

        merged = merge_runs([json.loads(Path(p).read_text()) for p in args.merge])
        # how this record was put together; how each part was made is under "runs"
        merged["provenance"] = provenance(
            profile=merged["runs"][0]["provenance"].get("profile"),
            extra={
                "command": [
                    "benchmarks/senteval_reference.py",
                    *(sys.argv[1:] if argv is None else argv),
                ],
                "merged_from": [Path(p).name for p in args.merge],
            },
        )
        write_json(args.json, merged)
        print(f"wrote {args.json}", file=sys.stderr)
        return 0
    if not args.senteval:
        parser.error("--senteval (a SentEval checkout) is required to run tasks")
    if args.log:
        import logging

        logging.basicConfig(filename=args.log, level=logging.INFO, format="%(message)s")

    import torch

    from sbert_tutor import SentenceEncoder
    from sbert_tutor.commands.common import write_json
    from sbert_tutor.data.files import local_root
    from sbert_tutor.provenance import provenance

    sys.path.insert(0, str(Path(args.senteval).resolve()))
    import senteval

    cpu_shims()
    root = local_root()
    if root is None:
        parser.error("set SBERT_TUTOR_DATA to the data folder (its senteval/ is SentEval's layout)")
    task_path = Path(tempfile.mkdtemp(prefix="senteval_"))
    (task_path / "downstream").symlink_to((root / "senteval").resolve())
    encoder = SentenceEncoder.from_pretrained(args.model, device="cpu")
    cache = EmbeddingCache(encoder, args.cache)

    def prepare(params, samples):
        params.encoded_now = cache.add(" ".join(tokens) for tokens in samples)

    def batcher(params, batch):
        return cache.lookup([" ".join(tokens) for tokens in batch])

    senteval_commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=args.senteval, capture_output=True, text=True
    ).stdout.strip()
    files = sorted(p for p in (root / "senteval").rglob("*") if p.is_file())
    results = {}
    for task in args.tasks.split(","):
        torch.set_num_threads(args.threads)
        engine = senteval.engine.SE({"task_path": str(task_path), **CONFIG}, batcher, prepare)
        start = time.perf_counter()
        out = engine.eval(task)
        out = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in out.items()}
        out["seconds"] = time.perf_counter() - start
        out["sentences_encoded_now"] = engine.params.encoded_now
        results[task] = out
        print(task, {k: out[k] for k in ("acc", "devacc", "ndev", "ntest") if k in out}, flush=True)
        payload = {
            "model": args.model,
            "engine": "SentEval (facebookresearch/SentEval), standard transfer setting",
            "senteval_commit": senteval_commit or "unknown (not a git checkout)",
            "config": {**CONFIG, "seed": 1111},
            "results": results,
            "provenance": provenance(
                data_files=files,
                model=encoder.describe(),
                extra={"command": sys.argv, "shims": cpu_shims.__doc__},
            ),
        }
        if args.json:  # after every task, so a long run keeps what it has
            write_json(args.json, payload)
    if args.json:
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
