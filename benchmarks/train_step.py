"""Training speed: our ``Trainer`` vs sentence-transformers' ``SentenceTransformerTrainer``.

Not a test: a measurement. Same model (the offline all-MiniLM-L6-v2), same loss, same data,
same batch size, learning rate, warm-up and seed, in one process, one after the other. Reports
wall time of the training call, optimizer steps/s and the ratio, and (``--eval``) STSb test
Spearman of both trained models.

Losses: ``cosine`` on STSb train (CosineSimilarityLoss, scores scaled to [0, 1]) and ``mnrl`` on
NLI (anchor, entailment) pairs (MultipleNegativesRankingLoss; no-duplicates batches in both).

Example::

    SBERT_TUTOR_DATA=../shared/data HF_HUB_OFFLINE=1 python benchmarks/train_step.py --loss cosine --epochs 1 --eval --json out.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


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


def run_ours(loss: str, data, args) -> tuple[float, int, object]:
    from sbert_tutor.training import TrainingConfig
    from sbert_tutor.training.recipe import fit

    config = TrainingConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=2e-5,
        warmup_ratio=0.1,
        max_steps=args.max_steps,
        seed=args.seed,
        show_progress=False,
    )
    result = fit(MODEL, loss, data, config, device="cpu")
    return result.seconds, int(result.log["steps_done"]), result.encoder


def run_theirs(loss: str, dataset, args) -> tuple[float, int, object]:
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer import losses as st_losses

    from sbert_tutor.resolve import resolve_model

    model = SentenceTransformer(str(resolve_model(MODEL).path), device="cpu")
    st_loss = (
        st_losses.CosineSimilarityLoss(model)
        if loss == "cosine"
        else st_losses.MultipleNegativesRankingLoss(model)
    )
    with tempfile.TemporaryDirectory() as out:
        training_args = SentenceTransformerTrainingArguments(
            output_dir=out,
            num_train_epochs=args.epochs,
            max_steps=args.max_steps or -1,
            per_device_train_batch_size=args.batch_size,
            learning_rate=2e-5,
            warmup_ratio=0.1,
            seed=args.seed,
            save_strategy="no",
            report_to="none",
            logging_steps=50,
            disable_tqdm=True,
            use_cpu=True,
            batch_sampler="no_duplicates" if loss == "mnrl" else "batch_sampler",
        )
        trainer = SentenceTransformerTrainer(
            model=model, args=training_args, train_dataset=dataset, loss=st_loss
        )
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
        steps = trainer.state.global_step
    return seconds, steps, model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loss", default="cosine", choices=("cosine", "mnrl"))
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--eval", action="store_true", help="STSb test Spearman of both trained models"
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    from sbert_tutor.commands.common import write_json
    from sbert_tutor.evaluation import evaluate_sts
    from sbert_tutor.provenance import provenance

    ours_data, theirs_data, files = training_pairs(args.loss)
    t_ours, steps_ours, enc = run_ours(args.loss, ours_data, args)
    print(
        f"ours: {steps_ours} steps in {t_ours:.1f} s ({steps_ours / t_ours:.2f} steps/s)",
        flush=True,
    )
    t_st, steps_st, st_model = run_theirs(args.loss, theirs_data, args)
    print(
        f"sentence-transformers: {steps_st} steps in {t_st:.1f} s ({steps_st / t_st:.2f} steps/s)",
        flush=True,
    )
    result = {
        "loss": args.loss,
        "ours": {"seconds": t_ours, "steps": steps_ours, "steps_per_s": steps_ours / t_ours},
        "sentence_transformers": {
            "seconds": t_st,
            "steps": steps_st,
            "steps_per_s": steps_st / t_st,
        },
    }
    result["ratio_steps_per_s_ours_vs_st"] = (
        result["ours"]["steps_per_s"] / result["sentence_transformers"]["steps_per_s"]
    )
    print(
        f"ratio (ours / sentence-transformers, steps/s): {result['ratio_steps_per_s_ours_vs_st']:.3f}"
    )
    if args.eval:
        result["ours"]["stsb_test_spearman"] = float(
            evaluate_sts(enc, "stsb").table["spearman"].iloc[0]
        )

        class _STAdapter:  # evaluate the ST model with the same evaluator
            def encode(self, sentences, batch_size=64, show_progress=None):
                return st_model.encode(sentences, batch_size=batch_size, convert_to_numpy=True)

        result["sentence_transformers"]["stsb_test_spearman"] = float(
            evaluate_sts(_STAdapter(), "stsb").table["spearman"].iloc[0]
        )
        print(
            f"STSb test Spearman: ours {result['ours']['stsb_test_spearman']:.2f}, "
            f"sentence-transformers {result['sentence_transformers']['stsb_test_spearman']:.2f}"
        )
    if args.json:
        payload = {
            "benchmark": "train_step",
            "args": vars(args),
            "results": result,
            "provenance": provenance(data_files=files, command=sys.argv),
        }
        print(f"wrote {write_json(args.json, payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
