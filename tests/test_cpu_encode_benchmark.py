"""benchmarks/cpu_encode.py: sentence-transformers' ONNX int8 configuration follows the CPU's
instruction set (the best one the CPU has), and a CPU without any is refused with the flags read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import load_script

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cpu_encode():
    return load_script("benchmarks/cpu_encode.py")  # its `from encode import ...`


@pytest.mark.parametrize(
    ("flags", "config"),
    [
        ({"avx2", "fma"}, "avx2"),
        ({"avx2", "avx512f"}, "avx512"),
        ({"avx2", "avx512f", "avx512_vnni", "amx_int8"}, "avx512_vnni"),
    ],
)
def test_onnx_int8_config_is_the_best_the_cpu_runs(cpu_encode, monkeypatch, flags, config):
    monkeypatch.setattr("sbert_tutor.runtime.precision.cpu_flags", lambda: frozenset(flags))
    assert cpu_encode.onnx_int8_config() == config


def test_a_cpu_without_those_instruction_sets_is_refused(cpu_encode, monkeypatch):
    monkeypatch.setattr("sbert_tutor.runtime.precision.cpu_flags", lambda: frozenset({"asimd"}))
    with pytest.raises(SystemExit, match=r"none of avx512_vnni, avx512f, avx2.*/proc/cpuinfo"):
        cpu_encode.onnx_int8_config()
