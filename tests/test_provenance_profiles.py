"""Provenance records and profile selection."""

from __future__ import annotations

import hashlib

import pytest

from sbert_tutor.profiles import get_profile
from sbert_tutor.provenance import provenance, sha256_file


def test_provenance_hashes_files(tmp_path):
    f = tmp_path / "data.tsv"
    f.write_bytes(b"a\tb\n1\t2\n")
    record = provenance(profile="quick", data_files=[f], model={"name": "m"}, seed=3)
    assert record["data_files"] == {str(f): hashlib.sha256(b"a\tb\n1\t2\n").hexdigest()}
    assert record["profile"] == "quick" and record["seed"] == 3 and record["model"] == {"name": "m"}
    assert record["packages"]["torch"] and record["hardware"]["cpu_count"] >= 1
    assert len(record["git"]["sha"]) == 40 or record["git"]["sha"].startswith("unknown")
    f.write_bytes(b"changed")
    assert sha256_file(f) == hashlib.sha256(b"changed").hexdigest()


def test_profile_selection(monkeypatch):
    import torch

    monkeypatch.delenv("SBERT_TUTOR_PROFILE", raising=False)
    assert get_profile().name == ("full" if torch.cuda.is_available() else "quick")
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "full")
    profile = get_profile()
    assert profile.name == "full" and "SBERT_TUTOR_PROFILE" in profile.reason
    monkeypatch.setenv("SBERT_TUTOR_PROFILE", "medium")
    with pytest.raises(ValueError, match="quick, full"):
        get_profile()
