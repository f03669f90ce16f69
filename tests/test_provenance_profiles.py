"""Provenance records and profile selection."""

from __future__ import annotations

import hashlib
import json

import pytest

from sbert_tutor.book.profiles import get_profile
from sbert_tutor.provenance import provenance, sha256_file
from sbert_tutor.settings import data_label


def test_provenance_hashes_files(tmp_path):
    f = tmp_path / "data.tsv"
    f.write_bytes(b"a\tb\n1\t2\n")
    record = provenance(profile="quick", data_files=[f], model={"name": "m"}, extra={"seed": 3})
    assert record["data_files"] == {str(f): hashlib.sha256(b"a\tb\n1\t2\n").hexdigest()}
    assert record["profile"] == "quick" and record["seed"] == 3 and record["model"] == {"name": "m"}
    assert record["packages"]["torch"] and record["hardware"]["cpu_count"] >= 1
    assert len(record["git"]["sha"]) == 40 or record["git"]["sha"].startswith("unknown")
    f.write_bytes(b"changed")
    assert sha256_file(f) == hashlib.sha256(b"changed").hexdigest()


def test_provenance_takes_extra_entries_only_as_a_mapping():
    with pytest.raises(TypeError, match="seed"):
        provenance(profile="quick", seed=3)  # a stray keyword is Python's error, never stored
    with pytest.raises(ValueError, match="'timestamp'.*record sets itself"):
        provenance(profile="quick", extra={"timestamp": "yesterday"})
    assert provenance(profile="quick", extra={"command": ["x"]})["command"] == ["x"]


def test_provenance_records_the_packages_asked_for_beside_its_own():
    from importlib.metadata import version

    record = provenance(packages=("pytest", "no-such-package-sbert-tutor", "numpy"))
    assert record["packages"]["pytest"] == version("pytest")
    assert record["packages"]["numpy"] == version("numpy")  # a default one, once
    assert "no-such-package-sbert-tutor" not in record["packages"]
    assert "pytest" not in provenance()["packages"]


def test_data_files_are_named_relative_to_their_folder(tmp_path, monkeypatch):
    data, cache, own = tmp_path / "data", tmp_path / "cache", tmp_path / "mine.tsv"
    (data / "stsb").mkdir(parents=True)
    (cache / "msmarco").mkdir(parents=True)
    for f, text in (
        (data / "stsb" / "a.tsv", b"a"),
        (cache / "msmarco" / "b.tsv", b"b"),
        (own, b"c"),
    ):
        f.write_bytes(text)
    monkeypatch.setenv("SBERT_TUTOR_DATA", str(data))
    monkeypatch.setenv("SBERT_TUTOR_CACHE", str(cache))
    files = [data / "stsb" / "a.tsv", cache / "msmarco" / "b.tsv", own]
    record = provenance(profile="quick", data_files=files)
    assert record["data_files"] == {
        "SBERT_TUTOR_CACHE/msmarco/b.tsv": hashlib.sha256(b"b").hexdigest(),
        "SBERT_TUTOR_DATA/stsb/a.tsv": hashlib.sha256(b"a").hexdigest(),
        str(own): hashlib.sha256(b"c").hexdigest(),
    }
    # nothing of where the data folder sits is left in the record
    assert str(data) not in json.dumps(record) and str(cache) not in json.dumps(record)
    assert data_label(data / "stsb" / ".." / "stsb" / "a.tsv") == "SBERT_TUTOR_DATA/stsb/a.tsv"


def test_profile_selection(monkeypatch):
    import torch

    monkeypatch.delenv("SBERT_TUTOR_PROFILE", raising=False)
    assert get_profile().name == ("t4" if torch.cuda.is_available() else "quick")
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "paper")
    profile = get_profile()
    assert profile.name == "paper" and "SBERT_TUTOR_PROFILE" in profile.reason
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "medium")
    with pytest.raises(ValueError, match="quick, t4, paper"):
        get_profile()


def test_cuda_picks_the_gpu_profile_and_paper_only_when_asked(monkeypatch):
    """Faked CUDA: the T4 profile, with the reason; never ``paper`` by itself."""
    import torch

    monkeypatch.delenv("SBERT_TUTOR_PROFILE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    profile = get_profile()
    assert (profile.name, profile.reason) == ("t4", "CUDA is available")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert get_profile().name == "quick"
    assert get_profile("paper").name == "paper"
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", " Paper ")
    assert get_profile().name == "paper"


def test_an_unknown_profile_is_refused_with_the_choices(monkeypatch):
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "full")
    with pytest.raises(ValueError) as err:
        get_profile()
    message = str(err.value)
    assert (
        "'full'" in message and "quick, t4, paper" in message and "SBERT_TUTOR_PROFILE" in message
    )
    with pytest.raises(ValueError, match="Did you mean 'paper'"):
        get_profile("papr")


def test_provenance_records_the_profile_setting_not_a_guess(monkeypatch):
    """The library records the book's profile only as it is set; the book passes its own."""
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "t4")
    assert provenance()["profile"] == "t4"
    monkeypatch.delenv("SBERT_TUTOR_PROFILE")
    assert provenance()["profile"] is None
    assert provenance(profile="paper")["profile"] == "paper"


def test_labels_say_what_each_profile_is(monkeypatch):
    """On a GPU the quick profile's label must not say CPU; on a CPU it does. The t4
    and paper labels say what they are; only the paper profile claims the papers' setups."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    quick = get_profile("quick")
    assert quick.label == "quick (GPU, small subsets; not a paper reproduction)"
    assert "CPU" not in quick.label
    t4, paper = get_profile("t4").label, get_profile("paper").label
    assert t4.startswith("t4 (one T4-class GPU, fp16") and "not a paper reproduction" in t4
    assert paper.startswith("paper (each paper's own setup")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert get_profile("quick").label == "quick (CPU, small subsets; not a paper reproduction)"


def test_hardware_names_the_cpu_model_and_its_instruction_sets(tmp_path):
    from sbert_tutor.book.recorded import hardware_text
    from sbert_tutor.provenance import ISA_FLAGS, cpu_model, hardware

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU 9000\nflags\t\t: fpu avx2\n")
    assert cpu_model(cpuinfo) == "Some CPU 9000"
    assert cpu_model(tmp_path / "absent") is None
    info = hardware()
    assert {"cpu_model", "cpu_isa"} <= set(info) and set(info["cpu_isa"]) <= ISA_FLAGS
    old = {"device": "cpu", "cpu": "x86_64", "cpu_count": 2, "torch_threads": 2}
    assert "model and instruction sets not recorded" in hardware_text(old)
    new = old | {"cpu_model": "Some CPU 9000", "cpu_isa": ["avx2"]}
    assert hardware_text(new).endswith("Some CPU 9000 (avx2)")
