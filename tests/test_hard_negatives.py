"""Hard-negative mining against sentence-transformers' ``mine_hard_negatives`` (the real offline
all-MiniLM-L6-v2 in both, a fixed small corpus, the shared options), its false-negative filters
on a hand-made case, and the teacher margins of Margin-MSE."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from sbert_tutor.training.hard_negatives import mine_hard_negatives, teacher_margins

pytestmark = pytest.mark.usefixtures("single_thread")

PAIRS = [
    ("how do I bake bread at home", "Mix flour, water, yeast and salt, knead, let it rise, bake."),
    ("how do I bake bread at home", "Home bread needs a hot oven and dough that has risen twice."),
    ("what is the capital of France", "Paris is the capital and largest city of France."),
    ("how tall is Mount Everest", "Mount Everest is 8,849 metres above sea level."),
    ("who wrote Hamlet", "Hamlet is a tragedy written by William Shakespeare."),
    ("how do vaccines work", "Vaccines train the immune system to recognise a pathogen."),
    ("why is the sky blue", "Air molecules scatter blue sunlight more than red light."),
    ("what do pandas eat", "Giant pandas eat almost nothing but bamboo."),
    ("how fast is the speed of light", "Light travels at about 299,792 kilometres per second."),
    ("when did World War II end", "The Second World War ended in 1945."),
    ("how many legs does a spider have", "Spiders have eight legs."),
    ("what is photosynthesis", "Plants turn light, water and carbon dioxide into sugar."),
]
CORPUS = [
    "Sourdough bread rises with wild yeast instead of baker's yeast.",
    "Baking cakes needs eggs, sugar and butter.",
    "Lyon is the third largest city in France.",
    "The Eiffel Tower stands in Paris.",
    "K2 is the second highest mountain on Earth.",
    "Macbeth is another tragedy by Shakespeare.",
    "Antibiotics kill bacteria but not viruses.",
    "Sunsets look red because light crosses more air.",
    "Red pandas also eat bamboo and fruit.",
    "Sound travels at about 343 metres per second in air.",
    "The First World War ended in 1918.",
    "Insects have six legs.",
    "Chlorophyll makes leaves green.",
    "The Moon orbits the Earth every 27 days.",
    "Bamboo is a fast-growing grass.",
    "The Pacific is the largest ocean.",
]


@pytest.fixture(scope="module")
def st_mine():
    pytest.importorskip("datasets")
    st = pytest.importorskip("sentence_transformers")
    return st.util.mine_hard_negatives


def _dataset():
    from datasets import Dataset

    return Dataset.from_dict({"query": [q for q, _ in PAIRS], "answer": [a for _, a in PAIRS]})


def _same_table(ours: pd.DataFrame, theirs: pd.DataFrame) -> None:
    assert list(ours.columns) == list(theirs.columns)
    assert len(ours) == len(theirs) and len(ours) > 0
    for column in ours.columns:
        left, right = ours[column].tolist(), theirs[column].tolist()
        if column in ("scores", "score"):
            np.testing.assert_allclose(np.array(left), np.array(right), atol=1e-5)
        else:
            assert left == right, column


CASES = {
    "defaults": {},
    "range-n-tuple-scores": {
        "range_min": 1,
        "range_max": 8,
        "num_negatives": 2,
        "output_format": "n-tuple",
        "output_scores": True,
    },
    "relative-margin": {"relative_margin": 0.05, "num_negatives": 2, "output_scores": True},
    "absolute-margin": {"absolute_margin": 0.1, "num_negatives": 2},
    "max-min-score": {"max_score": 0.6, "min_score": 0.1, "num_negatives": 2},
    "labeled-pair": {"num_negatives": 2, "output_format": "labeled-pair", "output_scores": True},
    "labeled-pair-labels": {"num_negatives": 1, "output_format": "labeled-pair"},
}


@pytest.mark.parametrize("options", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("with_corpus", [False, True], ids=["positives-only", "corpus"])
def test_mining_matches_sentence_transformers(minilm, st_minilm, st_mine, options, with_corpus):
    corpus = CORPUS if with_corpus else None
    theirs = st_mine(
        _dataset(), st_minilm, corpus=corpus, verbose=False, batch_size=8, **options
    ).to_pandas()
    ours = mine_hard_negatives(
        pd.DataFrame(PAIRS, columns=["query", "answer"]), minilm, corpus=corpus, batch_size=8,
        **options,
    )  # fmt: skip
    _same_table(ours, theirs)


def test_mining_with_a_cross_encoder_matches_sentence_transformers(
    minilm, st_minilm, st_mine, minilm_path, tmp_path
):
    from sbert_tutor import CrossEncoder
    from tests.test_cross_encoder import st_cross_encoder

    reference = st_cross_encoder(minilm_path, tmp_path / "ce")
    ours_ce = CrossEncoder.from_pretrained(tmp_path / "ce", device="cpu")
    options = {"relative_margin": 0.02, "num_negatives": 2, "output_scores": True}
    theirs = st_mine(
        _dataset(), st_minilm, corpus=CORPUS, cross_encoder=reference, verbose=False, **options
    ).to_pandas()
    ours = mine_hard_negatives(
        pd.DataFrame(PAIRS, columns=["query", "answer"]), minilm, corpus=CORPUS,
        cross_encoder=ours_ce, **options,
    )  # fmt: skip
    _same_table(ours, theirs)


# ------------------------------------------------------------------ the false-negative filters
QUERY = "how do I bake bread at home"
POSITIVE = "Mix flour, water, yeast and salt, knead, let it rise, bake."
FALSE_NEGATIVE = "To bake bread at home, mix flour, water, yeast and salt, knead and bake."
HARD = ["Baking cakes needs eggs, sugar and butter.", "Sourdough rises with wild yeast."]


class _Judge:
    """A stand-in cross-encoder: the rephrased answer is as relevant as the positive (0.95), the
    other candidates are not (0.1)."""

    def predict(self, pairs, batch_size: int = 32, activation_fn=None):
        relevant = (POSITIVE, FALSE_NEGATIVE)
        return np.array([0.95 if p in relevant else 0.1 for _, p in pairs], dtype=np.float32)


def _mine(minilm, **options) -> list[str]:
    out = mine_hard_negatives(
        [(QUERY, POSITIVE)], minilm, corpus=[FALSE_NEGATIVE, *HARD], num_negatives=1, **options
    )
    return out["negative"].tolist()


def test_without_a_filter_the_rephrased_answer_is_the_hardest_negative(minilm):
    emb = minilm.encode([QUERY, POSITIVE, FALSE_NEGATIVE, *HARD], normalize_embeddings=True)
    scores = emb[1:] @ emb[0]
    assert scores[1] == scores[1:].max()  # the rephrasing is the nearest non-positive
    assert _mine(minilm) == [FALSE_NEGATIVE]


@pytest.mark.parametrize(
    "rule", [{"max_score": 0.6}, {"absolute_margin": 0.0}, {"relative_margin": 0.05}]
)
def test_score_filters_drop_the_false_negative(minilm, rule):
    emb = minilm.encode([QUERY, POSITIVE, FALSE_NEGATIVE], normalize_embeddings=True)
    positive, rephrased = float(emb[1] @ emb[0]), float(emb[2] @ emb[0])
    assert rephrased > 0.6 and rephrased > positive * 0.95  # each rule must reject it
    negatives = _mine(minilm, **rule)
    assert FALSE_NEGATIVE not in negatives and negatives[0] in HARD


def test_a_cross_encoder_drops_what_it_judges_relevant(minilm):
    # the rephrasing scores 0.95, as high as the positive: within any margin, so it goes
    negatives = _mine(minilm, cross_encoder=_Judge(), absolute_margin=0.1)
    assert negatives == [HARD[0]] or negatives == [HARD[1]]
    assert FALSE_NEGATIVE not in negatives


def test_random_sampling_takes_kept_candidates_only(minilm):
    pairs = pd.DataFrame(PAIRS, columns=["query", "answer"])
    top = mine_hard_negatives(pairs, minilm, corpus=CORPUS, num_negatives=2, range_max=6)
    drawn = mine_hard_negatives(
        pairs, minilm, corpus=CORPUS, num_negatives=2, range_max=6, sampling_strategy="random"
    )
    assert len(drawn) == len(top)
    positives = {q: {a for qq, a in PAIRS if qq == q} for q, _ in PAIRS}
    for query, negative in zip(drawn["query"], drawn["negative"], strict=True):
        assert negative not in positives[query]


def test_bad_options_are_refused(minilm):
    with pytest.raises(ValueError, match="only 2 candidates remain"):
        mine_hard_negatives(PAIRS, minilm, range_min=3, range_max=5, num_negatives=3)
    with pytest.raises(ValueError, match="unknown output_format"):
        mine_hard_negatives(PAIRS, minilm, output_format="labeled-lists")
    with pytest.raises(ValueError, match="empty"):
        mine_hard_negatives([], minilm)


def test_teacher_margins_are_logit_differences(tiny_bert):
    from tests.test_cross_encoder import tiny_cross_encoder

    model = tiny_cross_encoder(tiny_bert[1])
    triplets = [(q, a, CORPUS[i]) for i, (q, a) in enumerate(PAIRS[:4])]
    logits = model.predict(
        [(q, x) for q, a, n in triplets for x in (a, n)], activation_fn=torch.nn.Identity()
    ).reshape(-1, 2)
    np.testing.assert_allclose(
        teacher_margins(model, triplets), logits[:, 0] - logits[:, 1], atol=1e-6
    )
    sigmoid = model.predict([(q, a) for q, a, _ in triplets])
    assert not np.allclose(sigmoid, logits[:, 0])  # raw logits, not the activated scores


# ------------------------------------------------------------------ the mine command
def test_mine_cli_writes_files_that_train_reads(tiny_bert, tmp_path, capsys):
    from sbert_tutor.cli import main
    from tests.conftest import save_tiny_encoder
    from tests.test_cross_encoder import tiny_cross_encoder

    model_dir = save_tiny_encoder(tiny_bert, tmp_path / "tiny")
    ce_dir = tiny_cross_encoder(tiny_bert[1]).save(tmp_path / "ce")
    pairs_file = tmp_path / "pairs.tsv"
    pd.DataFrame(PAIRS, columns=["query", "answer"]).to_csv(pairs_file, sep="\t", index=False)
    corpus_file = tmp_path / "corpus.txt"
    corpus_file.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    base = ["mine", "--model", model_dir, "--pairs", str(pairs_file), "--device", "cpu"]
    base += ["--corpus", str(corpus_file), "--num-negatives", "2"]

    triplets = tmp_path / "triplets.tsv"
    assert main([*base, "--out", str(triplets)]) == 0
    assert "24 rows from 12 pairs" in capsys.readouterr().out
    written = pd.read_csv(triplets, sep="\t")
    assert list(written.columns) == ["query", "answer", "negative"] and len(written) == 24

    distil = tmp_path / "distil.jsonl"
    argv = [*base, "--out", str(distil), "--cross-encoder", str(ce_dir), "--max-score", "10"]
    assert main([*argv, "--teacher-margins"]) == 0
    rows = pd.read_json(distil, lines=True)
    assert list(rows.columns) == ["query", "answer", "negative", "label"]
    ce = _load_cross_encoder(ce_dir)
    expected = teacher_margins(ce, rows[["query", "answer", "negative"]].values.tolist())
    np.testing.assert_allclose(rows["label"].to_numpy(), expected, atol=1e-5)

    for loss, data in (("mnrl", triplets), ("margin_mse", distil)):
        out = tmp_path / loss
        argv = ["train", "--model", model_dir, "--loss", loss, "--train", str(data)]
        argv += ["--out", str(out), "--max-steps", "2", "--batch-size", "4", "--device", "cpu"]
        assert main([*argv, "--no-progress"]) == 0, loss
    assert main([*base, "--out", str(tmp_path / "x.tsv"), "--teacher-margins"]) == 2
    assert "--teacher-margins needs --cross-encoder" in capsys.readouterr().err


def _load_cross_encoder(folder):
    from sbert_tutor import CrossEncoder

    return CrossEncoder.from_pretrained(folder, device="cpu")


def test_bm25_mining_takes_bm25s_best_non_positives():
    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    from sbert_tutor.search.bm25 import BM25Index

    pairs = pd.DataFrame(PAIRS, columns=["query", "answer"])
    mined = mine_hard_negatives(pairs, "bm25", corpus=CORPUS, num_negatives=2, output_scores=True)
    texts = list(dict.fromkeys([*CORPUS, *(a for _, a in PAIRS)]))
    run = BM25Index(texts).search({q: q for q, _ in PAIRS}, top_k=len(texts))
    positives = {q: {texts.index(a) for qq, a in PAIRS if qq == q} for q, _ in PAIRS}
    for (query, answer), group in mined.groupby(["query", "answer"], sort=False):
        ranked = sorted(run[query].items(), key=lambda item: -item[1])
        expected = [texts[int(d)] for d, _ in ranked if int(d) not in positives[query]][:2]
        assert group["negative"].tolist() == expected  # fewer when fewer share a term
        assert group["scores"].iloc[0][0] == pytest.approx(
            run[query].get(str(texts.index(answer)), 0.0)
        )
    with pytest.raises(ValueError, match="unknown model 'bm52'"):
        mine_hard_negatives(pairs, "bm52")
