"""Training speed: our ``Trainer`` vs sentence-transformers' ``SentenceTransformerTrainer``.

Not a test: a measurement. Same model (the offline all-MiniLM-L6-v2), same loss, same data,
same batch size, learning rate, warm-up and seed, in one process, one after the other. Reports
wall time of the training call, optimizer steps/s and the ratio, and (``--eval``) STSb test
Spearman of both trained models.

Losses: ``cosine`` on STSb train (CosineSimilarityLoss, scores scaled to [0, 1]) and ``mnrl`` on
NLI (anchor, entailment) pairs (MultipleNegativesRankingLoss; no-duplicates batches in both).

``--device cuda --amp ...`` (issue 15: the trainer's precision by measurement): ``--amp``,
``--batch-size`` and ``--model`` take comma-separated lists and every combination is trained
(ours; sentence-transformers too unless ``--no-st``, with its ``fp16``/``bf16`` flags for the
same precision). ``--model bert-base-random`` is a randomly initialised BERT-base (12 layers,
768 dimensions; seed 0) with MiniLM's tokenizer: its speed is BERT-base's, its scores mean
nothing. ``--json auto`` writes ``sbert_tutor/book/results/train_step_gpu_<loss>_<gpu>.json`` (on a CPU
``train_step_<loss>_cpu_<n>threads.json``) with one row per run (seconds, steps/s, the precision actually used, STSb test Spearman with ``--eval``) and, for
each (model, batch size), ``auto`` vs ``fp32``: the checks of issue 15 in ``criteria``.

Examples::

    SBERT_TUTOR_DATA=/path/to/data HF_HUB_OFFLINE=1 python benchmarks/train_step.py --loss cosine --epochs 1 --eval --json out.json
    python benchmarks/train_step.py --device cuda --loss cosine --amp none,bf16,fp16,auto \\
        --batch-size 16,64 --model minilm,bert-base-random --no-st --eval --json auto
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
RESULTS = Path(__file__).resolve().parents[1] / "sbert_tutor" / "book" / "results"
#: Issue 15: an STSb epoch at batch 16 in amp="auto" no slower than fp32, score within 0.3.
BAR = {"auto_vs_fp32_speed": 1.0, "auto_vs_fp32_spearman": 0.3}


def training_pairs(loss: str):
    """(ours: data for fit(), theirs: a datasets.Dataset, files read)."""
    import datasets

    if loss == "cosine":
        from sbert_tutor.data import load_sts

        stsb = load_sts("stsb", "train")
        theirs = datasets.Dataset.from_dict(
            {
                "sentence1": stsb.sentences1,
                "sentence2": stsb.sentences2,
                "score": (stsb.scores / 5.0).tolist(),
            }
        )
        return stsb, theirs, [str(f) for f in stsb.files]
    from sbert_tutor.data.nli import entailment_pairs, load_nli_train

    pairs = entailment_pairs(load_nli_train())
    theirs = datasets.Dataset.from_dict(
        {"anchor": list(pairs.table["anchor"]), "positive": list(pairs.table["positive"])}
    )
    return pairs, theirs, list(pairs.files)


def model_path(name: str, folder: str) -> str:
    """A local folder for ``name``: ``minilm`` (all-MiniLM-L6-v2) or ``bert-base-random``."""
    from sbert_tutor.encoders.resolve import resolve_model

    minilm = str(resolve_model(MODEL).path)
    if name == "minilm":
        return minilm
    if name != "bert-base-random":
        raise SystemExit(f"unknown --model {name!r}; use minilm or bert-base-random")
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from sbert_tutor import SentenceEncoder

    torch.manual_seed(0)
    encoder = SentenceEncoder(
        BertModel(BertConfig()), AutoTokenizer.from_pretrained(minilm), max_seq_length=256
    )
    out = Path(folder) / "bert-base-random"
    encoder.save(out)
    return str(out)


def run_ours(loss: str, data, args, model: str, batch_size: int, amp: str) -> dict[str, Any]:
    from sbert_tutor.training import TrainingConfig
    from sbert_tutor.training.recipe import fit

    config = TrainingConfig(
        epochs=args.epochs,
        batch_size=batch_size,
        lr=2e-5,
        warmup_ratio=0.1,
        max_steps=args.max_steps,
        seed=args.seed,
        amp=None if amp == "none" else amp,
        bucket=None if args.bucket == "off" else args.bucket,
        show_progress_bar=False,
    )
    result = fit(model, loss, data, config, device=args.device)
    seconds, steps = result.seconds, int(result.log["steps_done"])
    return {
        "seconds": seconds,
        "steps": steps,
        "steps_per_s": steps / seconds,
        "precision": result.log.get("precision"),
        "encoder": result.model,
    }


def run_theirs(loss: str, dataset, args, model_dir: str, batch_size: int, amp: str):
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer import losses as st_losses

    model = SentenceTransformer(model_dir, device=args.device)
    st_loss = (
        st_losses.CosineSimilarityLoss(model)
        if loss == "cosine"
        else st_losses.MultipleNegativesRankingLoss(model)
    )
    if amp == "auto":
        from sbert_tutor.training.trainer import auto_amp

        amp = auto_amp(args.device) or "none"
    with tempfile.TemporaryDirectory() as out:
        training_args = SentenceTransformerTrainingArguments(
            output_dir=out,
            num_train_epochs=args.epochs,
            max_steps=args.max_steps or -1,
            per_device_train_batch_size=batch_size,
            learning_rate=2e-5,
            warmup_ratio=0.1,
            seed=args.seed,
            save_strategy="no",
            report_to="none",
            logging_steps=50,
            disable_tqdm=True,
            use_cpu=args.device == "cpu",
            fp16=amp == "fp16",
            bf16=amp == "bf16",
            batch_sampler="no_duplicates" if loss == "mnrl" else "batch_sampler",
        )
        trainer = SentenceTransformerTrainer(
            model=model, args=training_args, train_dataset=dataset, loss=st_loss
        )
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
        steps = trainer.state.global_step
    return {"seconds": seconds, "steps": steps, "steps_per_s": steps / seconds, "model": model}


def stsb_spearman(encoder) -> float:
    from sbert_tutor.evaluation import evaluate_sts

    return float(evaluate_sts(encoder, "stsb").table["spearman"].iloc[0])


def criteria(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (model, batch size): ``auto`` vs ``none`` (fp32) in speed and STSb score."""
    out = []
    by = {(r["model"], r["batch_size"], r["amp"]): r for r in rows}
    for (model, batch_size, amp), auto in by.items():
        fp32 = by.get((model, batch_size, "none"))
        if amp != "auto" or fp32 is None:
            continue
        speed = auto["ours"]["steps_per_s"] / fp32["ours"]["steps_per_s"]
        out.append(
            {
                "model": model,
                "batch_size": batch_size,
                "check": "auto / fp32 steps per second",
                "value": speed,
                "bar": BAR["auto_vs_fp32_speed"],
                "pass": speed >= BAR["auto_vs_fp32_speed"],
            }
        )
        a, b = auto["ours"].get("stsb_test_spearman"), fp32["ours"].get("stsb_test_spearman")
        if a is not None and b is not None:
            out.append(
                {
                    "model": model,
                    "batch_size": batch_size,
                    "check": "|STSb Spearman auto - fp32|",
                    "value": abs(a - b),
                    "bar": BAR["auto_vs_fp32_spearman"],
                    "pass": abs(a - b) <= BAR["auto_vs_fp32_spearman"],
                }
            )
    return out


def device_slug(device: str) -> str:
    import torch

    if not device.startswith("cuda"):
        return f"{device}_{torch.get_num_threads()}threads"
    name = torch.cuda.get_device_name(torch.device(device)).lower()
    known = re.search(r"\b(h200|h100|a100|a10g|l40s|l4|t4|v100|a6000|4090|b200)\b", name)
    return known.group(1) if known else re.sub(r"[^a-z0-9]+", "_", name).strip("_")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loss", default="cosine", choices=("cosine", "mnrl"))
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--batch-size", default="16", help="one or more, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1 ...")
    parser.add_argument(
        "--amp", default="none", help="none (fp32), fp16, bf16, auto; comma-separated for several"
    )
    parser.add_argument("--bucket", default="auto", help="width bucketing: auto, off or 32")
    parser.add_argument("--model", default="minilm", help="minilm, bert-base-random (comma list)")
    parser.add_argument("--no-st", action="store_true", help="skip sentence-transformers")
    parser.add_argument(
        "--eval", action="store_true", help="STSb test Spearman of both trained models"
    )
    parser.add_argument("--json", default=None, help="results file ('auto': named by device)")
    args = parser.parse_args(argv)
    if args.bucket not in ("auto", "off"):
        args.bucket = int(args.bucket)

    import torch

    from sbert_tutor.commands.common import write_json
    from sbert_tutor.provenance import provenance

    ours_data, theirs_data, files = training_pairs(args.loss)
    amps = [a.strip() for a in args.amp.split(",")]
    batch_sizes = [int(b) for b in args.batch_size.split(",")]
    models = [m.strip() for m in args.model.split(",")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        for name in models:
            path = model_path(name, folder)
            for batch_size in batch_sizes:
                for amp in amps:
                    ours = run_ours(args.loss, ours_data, args, path, batch_size, amp)
                    encoder = ours.pop("encoder")
                    print(
                        f"ours [{name}, batch {batch_size}, amp {amp} -> "
                        f"{ours['precision']}]: {ours['steps']} steps in {ours['seconds']:.1f} s "
                        f"({ours['steps_per_s']:.2f} steps/s)",
                        flush=True,
                    )
                    row: dict[str, Any] = {
                        "model": name,
                        "batch_size": batch_size,
                        "amp": amp,
                        "ours": ours,
                    }
                    if args.eval:
                        ours["stsb_test_spearman"] = stsb_spearman(encoder)
                        print(f"  STSb test Spearman {ours['stsb_test_spearman']:.2f}")
                    del encoder
                    if not args.no_st:
                        theirs = run_theirs(args.loss, theirs_data, args, path, batch_size, amp)
                        st_model = theirs.pop("model")
                        row["sentence_transformers"] = theirs
                        row["ratio_steps_per_s_ours_vs_st"] = (
                            ours["steps_per_s"] / theirs["steps_per_s"]
                        )
                        print(
                            f"sentence-transformers: {theirs['steps']} steps in "
                            f"{theirs['seconds']:.1f} s ({theirs['steps_per_s']:.2f} steps/s); "
                            f"ratio ours / sentence-transformers "
                            f"{row['ratio_steps_per_s_ours_vs_st']:.3f}",
                            flush=True,
                        )
                        if args.eval:
                            theirs["stsb_test_spearman"] = stsb_spearman(st_model)
                            print(f"  STSb test Spearman {theirs['stsb_test_spearman']:.2f}")
                        del st_model
                    rows.append(row)
                    if args.device.startswith("cuda"):
                        torch.cuda.empty_cache()
    checks = criteria(rows)
    for check in checks:
        print(check)
    if args.json:
        single = rows[0] if len(rows) == 1 else None
        payload = {
            "benchmark": "train_step",
            "args": vars(args),
            "device": args.device,
            "gpu": torch.cuda.get_device_name(torch.device(args.device))
            if args.device.startswith("cuda")
            else None,
            "runs": rows,
            "criteria": checks,
            "bar": BAR,
            "provenance": provenance(data_files=files, extra={"command": sys.argv}),
        }
        if single is not None:  # the single-run layout of earlier results files
            payload["results"] = {
                "loss": args.loss,
                "ours": single["ours"],
                **(
                    {
                        "sentence_transformers": single["sentence_transformers"],
                        "ratio_steps_per_s_ours_vs_st": single["ratio_steps_per_s_ours_vs_st"],
                    }
                    if "sentence_transformers" in single
                    else {}
                ),
            }
        gpu = "gpu_" if args.device.startswith("cuda") else ""
        path = (
            RESULTS / f"train_step_{gpu}{args.loss}_{device_slug(args.device)}.json"
            if args.json == "auto"
            else Path(args.json)
        )
        print(f"wrote {write_json(path, payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
