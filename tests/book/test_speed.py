"""The speed-measurement helpers: interleaved timing, output check against a reference, ratios."""

from __future__ import annotations

import pandas as pd
import pytest

from sbert_tutor import SentenceEncoder
from sbert_tutor.book.chapters.computational_efficiency import (
    encode_throughput,
    interleaved_times,
    length_cost_summary,
    speedup_against_padding,
    throughput_by_length,
    throughput_ratios,
    throughput_summary,
)


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


def test_summaries_say_what_the_tables_hold():
    rows = [
        ("sbert_tutor (smart batching)", 300.0, None),
        ("sbert_tutor (input order)", 100.0, None),
        ("sentence-transformers", 250.0, 2e-6),
    ]
    table = pd.DataFrame(
        [
            {"batch_size": b, "variant": v, "sentences_per_s": sps * b / 32, "max_abs_diff": d}
            for b in (32, 64)
            for v, sps, d in rows
        ]
    )
    text = throughput_summary(table)
    assert "3.00x to 3.00x (batch sizes 32, 64)" in text
    assert "1.20 to 1.20 times" in text and "2.0e-06" in text
    alone = throughput_summary(table[table["variant"] != "sentence-transformers"])
    assert "not run" in alone
    by_length = pd.DataFrame(
        {
            "tokens": ["0-15", "64-127"],
            "mean tokens": [10.0, 80.0],
            "sentences_per_s": [500.0, 100.0],
            "tokens_per_s": [5000.0, 8000.0],
        }
    )
    sentence, verdict = length_cost_summary(by_length)
    assert verdict == "cheaper" and "500 to 100" in sentence and "5,000 to 8,000" in sentence
    by_length.loc[1, "tokens_per_s"] = 4000.0
    assert length_cost_summary(by_length)[1] == "dearer"
    with pytest.raises(ValueError):
        length_cost_summary(by_length.iloc[:1])


def test_speedup_against_padding_sets_each_run_beside_its_own_sentences():
    savings = pd.DataFrame(
        {"positions saved (x)": [4.28, 4.06], "attention saved (x)": [7.26, 7.58]},
        index=["mixed (this chapter)", "recorded run"],
    )
    ratios = pd.DataFrame({"smart_batching_speedup": [2.58, 2.44]}, index=[32, 64])
    record = {"ratios": [{"batch_size": 32, "smart_batching_speedup": 3.646}]}
    text = speedup_against_padding(savings, ratios, record)
    assert text == (
        "this run measured 2.58x against a position ratio of 4.28 and an attention ratio of 7.26; "
        "the recorded run 3.65x against a position ratio of 4.06 and an attention ratio of 7.58"
    )
    assert "no recorded run" in speedup_against_padding(savings.iloc[:1], ratios, record)
    assert "no recorded run" in speedup_against_padding(savings, ratios, None)
    assert "no batch size 64" in speedup_against_padding(savings, ratios, record, batch_size=64)


def test_throughput_by_length_groups_by_tokens(tiny):
    table = throughput_by_length(tiny, SENTENCES, bins=(0, 8, 16, 64), batch_size=8, repeats=1)
    assert list(table["tokens"]) == ["0-7", "8-15", "16-63"]
    assert table["n"].sum() == len(SENTENCES) and (table["sentences_per_s"] > 0).all()
    lengths = [len(x) for x in tiny.token_ids(SENTENCES)[0]]
    first = [n for n in lengths if n < 8]
    assert table.loc[0, "mean tokens"] == pytest.approx(sum(first) / len(first))
    assert table["tokens_per_s"].to_numpy() == pytest.approx(
        (table["sentences_per_s"] * table["mean tokens"]).to_numpy()
    )


def test_recorded_results_and_encode_summary(tmp_path):
    import json

    from sbert_tutor.book.chapters.computational_efficiency import recorded_encode_summary
    from sbert_tutor.book.recorded import recorded_results

    assert recorded_results("absent", folder=str(tmp_path)) is None
    # the default folder is the repository's sbert_tutor/book/results, which holds the recorded CPU run
    assert recorded_results("encode_cpu_2threads")["provenance"]["git"]["sha"]
    record = {
        "model": "m",
        "n_sentences": 10,
        "repeats": 3,
        "results": [
            {"batch_size": 32, "variant": "ours", "sentences_per_s": 12.0},
            {"batch_size": 32, "variant": "ref", "sentences_per_s": 10.0, "max_abs_diff": 2e-7},
            {"batch_size": 64, "variant": "ours", "sentences_per_s": 15.0},
            {"batch_size": 64, "variant": "ref", "sentences_per_s": 10.0, "max_abs_diff": 1e-7},
        ],
        "ratios": [{"batch_size": 32, "ours_vs_ref": 1.2}, {"batch_size": 64, "ours_vs_ref": 1.5}],
        "provenance": {
            "git": {"sha": "0123456789abcdef", "dirty": False},
            "hardware": {"device": "cpu", "cpu_count": 2, "torch_threads": 2},
            "timestamp": "t",
            "command": ["benchmarks/encode.py", "--json", "x.json"],
        },
    }
    (tmp_path / "enc.json").write_text(json.dumps(record))
    loaded = recorded_results("enc", folder=str(tmp_path))
    assert loaded == record
    table, how = recorded_encode_summary(loaded)
    assert table.loc[64, "ours"] == 15.0 and table.loc[32, "ref"] == 10.0
    assert table.loc[64, "ours_vs_ref"] == 1.5
    assert how["git commit"] == "0123456789ab"
    assert how["max |ours - reference|"] == "2.0e-07"
    assert how["command"] == "benchmarks/encode.py --json x.json"


def test_padded_work_by_hand():
    from sbert_tutor.book.chapters.computational_efficiency import padded_work

    # lengths 1, 9, 2, 8 in batches of 2: input order pads to 9 and 8 -> 2*9 + 2*8 = 34 positions;
    # sorted (1, 2 | 8, 9) pads to 2 and 9 -> 2*2 + 2*9 = 22
    assert padded_work([1, 9, 2, 8], 2) == {
        "tokens": 20,
        "positions": 34,
        "attention": 2 * 81 + 2 * 64,
        "widths": 2,
    }
    assert padded_work([1, 2, 8, 9], 2) == {
        "tokens": 20,
        "positions": 22,
        "attention": 2 * 4 + 2 * 81,
        "widths": 2,
    }
    # rounded up to a multiple of 8: widths 16 and 8 -> 2*16 + 2*8 = 48 positions, one width
    assert padded_work([1, 9, 2, 8], 2, bucket=8)["positions"] == 2 * 16 + 2 * 8
    with pytest.raises(ValueError):
        padded_work([1], 0)


def test_padding_savings_are_larger_for_mixed_lengths(tiny_bert):
    from sbert_tutor import SentenceEncoder
    from sbert_tutor.book.chapters.computational_efficiency import padding_savings

    model, tokenizer = tiny_bert
    encoder = SentenceEncoder(model, tokenizer, max_seq_length=64)
    short = [f"word {i}" for i in range(8)]
    mixed = short[:4] + [" ".join(["long"] * 40) + f" {i}" for i in range(4)]
    mixed = [mixed[i] for i in (0, 4, 1, 5, 2, 6, 3, 7)]  # alternate short and long
    table = padding_savings(encoder, {"short": short, "mixed": mixed}, batch_size=2)
    assert table.loc["short", "positions saved (x)"] == pytest.approx(1.0)
    assert table.loc["mixed", "positions saved (x)"] > 1.5
    assert table.loc["mixed", "attention saved (x)"] > table.loc["mixed", "positions saved (x)"]


@pytest.mark.parametrize("which", ["CPU_PATHS_RECORD", "CPU_BACKENDS_RECORD"])
def test_the_recorded_cpu_paths_agree_with_their_own_rows(which):
    """The recorded ``benchmarks/cpu_encode.py`` runs the chapter shows: every ratio and every
    criterion recomputed from the rows' sentences/s and STSb scores, fastest path first."""
    from sbert_tutor.book.chapters import computational_efficiency
    from sbert_tutor.book.chapters.computational_efficiency import cpu_paths_summary
    from sbert_tutor.book.recorded import recorded_results

    record = recorded_results(getattr(computational_efficiency, which))
    table, how = cpu_paths_summary(record)
    rate = table["sentences_per_s"]
    assert list(rate) == sorted(rate, reverse=True)
    ours = table[table["library"] == "sbert_tutor"]
    theirs = table[table["library"] == "sentence-transformers"]
    st_fastest = theirs["sentences_per_s"].max()
    fp32 = rate["sbert_tutor fp32"]
    pd.testing.assert_series_equal(
        table["vs_sbert_tutor_fp32"], rate / fp32, check_names=False, rtol=1e-12
    )
    pd.testing.assert_series_equal(
        table["vs_sentence_transformers_fastest"], rate / st_fastest, check_names=False, rtol=1e-12
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
    spearman = table["stsb_test_spearman"]
    assert lost["value"] == pytest.approx(spearman["sbert_tutor fp32"] - spearman[fastest])
    assert lost["met"] == (lost["value"] <= lost["bar"])
    assert how["threads"] == 2 and "cpu_encode.py" in how["command"]


def test_like_with_like_pairs_the_same_runtime_and_precision_of_both_libraries():
    """The backends run: every sentence-transformers backend loaded (its int8 models included),
    each pair's ratio is the two rows' sentences/s divided, and a record without a pair's path is
    refused with the reason it recorded."""
    from sbert_tutor.book.chapters.computational_efficiency import (
        CPU_BACKENDS_RECORD,
        CPU_PATHS_RECORD,
        LIKE_WITH_LIKE,
        like_with_like,
    )
    from sbert_tutor.book.recorded import recorded_results

    record = recorded_results(CPU_BACKENDS_RECORD)
    # every backend loaded; only torch bf16 is left out, and only where the CPU would emulate it
    assert set(record["unavailable"]) <= {"sentence-transformers torch bf16"}
    assert record["provenance"]["native_bf16"] or "emulates bf16" in "".join(
        record["unavailable"].values()
    )
    assert record["provenance"]["packages"]["optimum-intel"]
    rows = {r["path"]: r for r in record["results"]}
    pairs = like_with_like(record)
    assert list(pairs.index) == [what for what, _, _ in LIKE_WITH_LIKE]
    for what, ours, theirs in LIKE_WITH_LIKE:
        assert pairs.loc[what, "ours / theirs"] == pytest.approx(
            rows[ours]["sentences_per_s"] / rows[theirs]["sentences_per_s"], rel=1e-12
        )
        assert pairs.loc[what, "sentence-transformers STSb change"] == pytest.approx(
            rows[theirs]["stsb_test_spearman"] - rows["sbert_tutor fp32"]["stsb_test_spearman"]
        )
    with pytest.raises(ValueError, match=r"sentence-transformers openvino \(Exception: Using"):
        like_with_like(recorded_results(CPU_PATHS_RECORD))
