"""``sbert-tutor mine``: add hard negatives to (anchor, positive) pairs; write a file ``train`` reads.

::

    sbert-tutor mine --model NAME_OR_PATH --pairs pairs.tsv --out triplets.tsv \\
        [--corpus passages.tsv] [--relative-margin 0.05] [--num-negatives 3]
    sbert-tutor mine ... --cross-encoder CE --absolute-margin 0.1 --teacher-margins --out distil.tsv

The options are :func:`sbert_tutor.training.hard_negatives.mine_hard_negatives`'s (sentence-transformers'
names). ``--teacher-margins`` (with ``--cross-encoder``, triplets) adds a ``label`` column, the
cross-encoder's logit margin of each triplet: the file trains ``--loss margin_mse``.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any

from sbert_tutor.commands.common import add_model_options, load_encoder

__all__: list[str] = []

#: Options passed to mine_hard_negatives under the same name.
_MINING_OPTIONS = (
    "range_min",
    "range_max",
    "max_score",
    "min_score",
    "absolute_margin",
    "relative_margin",
    "num_negatives",
    "sampling_strategy",
    "output_format",
    "output_scores",
    "seed",
)


def _read_corpus(path: Path, column: str | None) -> list[str]:
    """Passages from ``path``: a ``.txt`` file (one a line) or a table (its ``column``, else the
    ``passage`` or ``text`` column, else its only column)."""
    from sbert_tutor.training.sources import read_training_file

    if path.suffix.lower() == ".txt":
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    frame = read_training_file(path).table
    names = [str(c) for c in frame.columns]
    if column is None:
        column = next((c for c in ("passage", "text") if c in names), None)
        if column is None and len(names) == 1:
            column = names[0]
    if column not in names:
        raise ValueError(
            f"{path} has the columns {names}: say which holds the passages with --corpus-column"
        )
    return [str(t) for t in frame[column]]


def _write_table(frame: Any, path: Path) -> Path:
    """Write ``frame`` as ``.tsv`` (tabs and line breaks in texts become spaces, no quoting: as
    ``train`` reads it), ``.csv`` or ``.jsonl``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
    elif suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".tsv":
        clean = frame.apply(
            lambda col: col.map(lambda v: " ".join(str(v).split()) if isinstance(v, str) else v)
        )
        clean.to_csv(path, sep="\t", index=False, quoting=csv.QUOTE_NONE, escapechar="\\")
    else:
        raise ValueError(f"--out must end in .tsv, .csv or .jsonl, got {path}")
    return path


def run(args: argparse.Namespace) -> int:
    from sbert_tutor.training.hard_negatives import mine_hard_negatives, teacher_margins
    from sbert_tutor.training.sources import read_training_file

    if args.teacher_margins and (args.cross_encoder is None or args.output_format != "triplet"):
        raise ValueError("--teacher-margins needs --cross-encoder and --output-format triplet")
    if args.output_scores and args.teacher_margins:
        raise ValueError("pass either --output-scores or --teacher-margins, not both")
    pairs = read_training_file(Path(args.pairs))
    corpus = None if args.corpus is None else _read_corpus(Path(args.corpus), args.corpus_column)
    encoder = load_encoder(args)
    cross_encoder = None
    if args.cross_encoder is not None:
        from sbert_tutor.encoders.cross_encoder import CrossEncoder

        cross_encoder = CrossEncoder.from_pretrained(args.cross_encoder, device=args.device)
    options = {name: getattr(args, name) for name in _MINING_OPTIONS}
    mined = mine_hard_negatives(
        pairs,
        encoder,
        anchor_column_name=args.anchor_column,
        positive_column_name=args.positive_column,
        corpus=corpus,
        cross_encoder=cross_encoder,
        batch_size=args.batch_size,
        **options,
    )
    if args.teacher_margins:
        rows = mined.iloc[:, :3].astype(str).values.tolist()
        mined["label"] = teacher_margins(cross_encoder, rows, batch_size=args.batch_size)
    out = _write_table(mined, Path(args.out))
    print(f"{len(mined)} rows from {len(pairs)} pairs -> {out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "mine", help="add hard negatives to (anchor, positive) pairs; writes a training file"
    )
    add_model_options(parser)
    parser.add_argument("--pairs", required=True, help=".tsv/.csv/.jsonl of (anchor, positive)")
    parser.add_argument("--out", required=True, help="the mined rows: .tsv, .csv or .jsonl")
    parser.add_argument("--anchor-column", default=None, help="default: the first column")
    parser.add_argument("--positive-column", default=None, help="default: the second column")
    parser.add_argument("--corpus", default=None, help="more passages to mine from (.txt/table)")
    parser.add_argument("--corpus-column", default=None, help="the corpus table's text column")
    parser.add_argument("--cross-encoder", default=None, help="rescores the candidates")
    parser.add_argument("--num-negatives", type=int, default=3)
    parser.add_argument("--range-min", type=int, default=0, help="skip the best N candidates")
    parser.add_argument("--range-max", type=int, default=None, help="look at the best N")
    parser.add_argument("--max-score", type=float, default=None)
    parser.add_argument("--min-score", type=float, default=None)
    parser.add_argument("--absolute-margin", type=float, default=None)
    parser.add_argument("--relative-margin", type=float, default=None)
    parser.add_argument("--sampling-strategy", choices=("top", "random"), default="top")
    parser.add_argument(
        "--output-format", choices=("triplet", "n-tuple", "labeled-pair"), default="triplet"
    )
    parser.add_argument("--output-scores", action="store_true", help="add the scores")
    parser.add_argument(
        "--teacher-margins",
        action="store_true",
        help="add the cross-encoder's margin as 'label' (for --loss margin_mse)",
    )
    parser.add_argument("--seed", type=int, default=0, help="for --sampling-strategy random")
    parser.set_defaults(func=run)
    return parser
