"""The speed-measurement helpers: interleaved timing, output check against a reference, ratios;
the recorded CPU runs chapter 13 shows, each ratio recomputed from the record's own rows."""

from __future__ import annotations

import pandas as pd
import pytest

from sbert_tutor import SentenceEncoder
from sbert_tutor.book.chapters import computational_efficiency
from sbert_tutor.book.chapters.computational_efficiency import (
    CPU_BACKENDS_RECORD,
    CPU_PATHS_RECORD,
    LIKE_WITH_LIKE,
    encode_throughput,
    interleaved_times,
    throughput_ratios,
)
from sbert_tutor.book.recorded import recorded_results


@pytest.fixture()
def tiny(tiny_bert):
    model, tokenizer = tiny_bert
    return SentenceEncoder(model, tokenizer, max_seq_length=48)


SENTENCES = [("word " * (1 + i % 30)).strip() + f" {i}" for i in range(96)]


def test_encode_throughput_checks_outputs_against_the_reference(tiny):
    calls = []

    def reference(sentences, batch_size):
        calls.append(batch_size)
        return (
            tiny.encode(sentences, batch_size=batch_size) + 0.5
        )  # a deliberately different output

    table = encode_throughput(
        tiny, SENTENCES, batch_sizes=(16, 32), repeats=2, reference=reference, reference_name="ref"
    )
    assert set(table["variant"]) == {
        "sbert_tutor (smart batching)",
        "sbert_tutor (input order)",
        "ref",
    }
    assert (table["sentences_per_s"] > 0).all()
    assert table.loc[table["variant"] == "ref", "max_abs_diff"].tolist() == pytest.approx(
        [0.5, 0.5], abs=1e-5
    )
    assert calls == [32, 16, 16, 32, 32]  # one warm-up at 32, then 2 repeats per batch size


def test_interleaved_times_takes_turns_and_keeps_each_median():
    calls = []

    def variant(name, result):
        def run():
            calls.append(name)
            return result

        return run

    seconds, outputs = interleaved_times({"a": variant("a", 1), "b": variant("b", 2)}, repeats=3)
    assert calls == ["a", "b"] * 3  # every round runs every variant once, in turn
    assert outputs == {"a": 1, "b": 2} and set(seconds) == {"a", "b"}
    assert all(s >= 0 for s in seconds.values())


def test_ratios_hand_worked():
    table = pd.DataFrame(
        [
            {"batch_size": 32, "variant": "sbert_tutor (smart batching)", "sentences_per_s": 300.0},
            {"batch_size": 32, "variant": "sbert_tutor (input order)", "sentences_per_s": 200.0},
            {"batch_size": 32, "variant": "sentence-transformers", "sentences_per_s": 250.0},
        ]
    )
    ratios = throughput_ratios(table)
    assert ratios.loc[32, "smart_batching_speedup"] == pytest.approx(1.5)
    assert ratios.loc[32, "ours_vs_sentence-transformers"] == pytest.approx(1.2)


def test_the_recorded_encode_run_agrees_with_its_own_rows():
    """The recorded ``benchmarks/encode.py`` run the chapter shows: its ratios are those of its
    rows (smart batching over input order, ours over sentence-transformers), and the reference
    computed the same embeddings."""
    assert recorded_results("absent") is None
    record = recorded_results("encode_cpu_2threads")
    assert record["provenance"]["git"]["sha"] and "encode.py" in record["provenance"]["command"][0]
    rows = pd.DataFrame(record["results"])
    assert len(rows) == 3 * len(record["ratios"]) and record["n_sentences"] == 2000
    recorded = pd.DataFrame(record["ratios"]).set_index("batch_size")
    pd.testing.assert_frame_equal(throughput_ratios(rows), recorded, check_names=False, rtol=1e-12)
    assert rows["max_abs_diff"].max() < 1e-6


@pytest.mark.parametrize("which", ["CPU_PATHS_RECORD", "CPU_BACKENDS_RECORD"])
def test_the_recorded_cpu_paths_agree_with_their_own_rows(which):
    """The recorded ``benchmarks/cpu_encode.py`` runs the chapter shows: every ratio and every
    criterion recomputed from the rows' sentences/s and STSb scores."""
    record = recorded_results(getattr(computational_efficiency, which))
    table = pd.DataFrame(record["results"]).set_index("path")
    rate = table["sentences_per_s"]
    ours = table[table["library"] == "sbert_tutor"]
    theirs = table[table["library"] == "sentence-transformers"]
    st_fastest = theirs["sentences_per_s"].max()
    fp32 = rate["sbert_tutor fp32"]
    spearman = table["stsb_test_spearman"]
    pd.testing.assert_series_equal(
        table["vs_sbert_tutor_fp32"], rate / fp32, check_names=False, rtol=1e-12
    )
    pd.testing.assert_series_equal(
        table["vs_sentence_transformers_fastest"], rate / st_fastest, check_names=False, rtol=1e-12
    )
    pd.testing.assert_series_equal(
        table["stsb_points_vs_fp32"],
        spearman - spearman["sbert_tutor fp32"],
        check_names=False,
        rtol=1e-12,
        atol=1e-12,
    )
    fastest = ours["sentences_per_s"].idxmax()
    by_name = {c["criterion"]: c for c in record["criteria"]}
    auto = by_name["auto vs sbert_tutor fp32"]
    assert auto["value"] == pytest.approx(rate["sbert_tutor auto"] / fp32)
    assert auto["met"] == (auto["value"] >= auto["bar"])
    speed = next(c for name, c in by_name.items() if name.startswith(f"fastest path ({fastest})"))
    assert speed["value"] == pytest.approx(rate[fastest] / st_fastest)
    assert speed["met"] == (speed["value"] >= speed["bar"])
    lost = by_name[f"STSb points lost by the fastest path ({fastest})"]
    assert lost["value"] == pytest.approx(spearman["sbert_tutor fp32"] - spearman[fastest])
    assert lost["met"] == (lost["value"] <= lost["bar"])
    assert record["threads"] == 2 and "cpu_encode.py" in " ".join(record["provenance"]["command"])


def test_like_with_like_pairs_are_in_the_backends_run_and_only_there():
    """The backends run: every sentence-transformers backend loaded (its int8 models included),
    so every path of :data:`LIKE_WITH_LIKE` is a row of it; the first run lacks the
    sentence-transformers backends that need optimum, and says why."""
    record = recorded_results(CPU_BACKENDS_RECORD)
    # every backend loaded; only torch bf16 is left out, and only where the CPU would emulate it
    assert set(record["unavailable"]) <= {"sentence-transformers torch bf16"}
    assert record["provenance"]["native_bf16"] or "emulates bf16" in "".join(
        record["unavailable"].values()
    )
    assert record["provenance"]["packages"]["optimum-intel"]
    rows = {r["path"]: r for r in record["results"]}
    for _, ours, theirs in LIKE_WITH_LIKE:
        assert rows[ours]["library"] == "sbert_tutor"
        assert rows[theirs]["library"] == "sentence-transformers"
    first = recorded_results(CPU_PATHS_RECORD)
    reason = first["unavailable"]["sentence-transformers openvino"]
    assert reason.startswith("Exception: Using the OpenVINO backend requires")
    assert "sentence-transformers openvino" not in {r["path"] for r in first["results"]}
