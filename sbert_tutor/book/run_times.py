r"""How long each chapter takes to run, by profile and machine: measured, never estimated.

:func:`time_table` reads the records ``benchmarks/chapter_times.py`` wrote into the results
folder (:func:`~sbert_tutor.book.recorded.results_folder`): ``chapter_times_cpu.json``, the
quick profile under nbmake on a 2-core CPU (``python benchmarks/chapter_times.py from-junit
_build/nbmake.xml --out auto`` after ``.ci/task test``);
``chapter_times_cpu_<profile>.json``, another profile on a 2-core CPU, each chapter in a fresh
process (``run --profile t4 --stand-in ...``: a model that cannot be downloaded there is served
by a local one of the same architecture, so the times hold and the scores are not kept); and
``chapter_times_gpu_<gpu>.json``, a run on one GPU with each chapter's peak GPU memory.

A chapter a record does not hold, or that did not pass in it, reads as not recorded: nothing is
scaled or guessed. Where no GPU run of a profile is recorded, the table states one upper bound:
with CPU cores as many and as fast as a CPU record's beside a GPU, a chapter takes at most its
time in that record, since what moves to the GPU (the transformer's passes) only gets faster
and the rest (tokenising, logistic regressions, BM25, FAISS) runs as fast as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from sbert_tutor.book.recorded import hardware_text, recorded_matching
from sbert_tutor.provenance import commit_label

__all__ = ["ISA_TAGS", "RECORDS", "time_table"]

#: The records the table reads, as glob patterns over the results folder.
RECORDS = ("chapter_times_cpu.json", "chapter_times_cpu_*.json", "chapter_times_gpu_*.json")


#: The instruction sets that name a CPU in a column, the fastest kind first (``/proc/cpuinfo``
#: flags, as :func:`sbert_tutor.provenance.provenance` records them): two CPUs of the same core
#: count run the chapters at different speeds when one multiplies in bf16 and the other does not.
ISA_TAGS = (
    ("amx_bf16", "AMX"),
    ("avx512_bf16", "AVX-512 BF16"),
    ("avx512f", "AVX-512"),
    ("avx2", "AVX2"),
)


def _column(record: Mapping[str, Any]) -> str:
    """A run in a column name (``"quick: 2-core CPU with AVX2 (min)"``, ``"t4: Tesla T4 (min)"``):
    a CPU is named by its cores and the fastest of :data:`ISA_TAGS` it has."""
    hardware = record.get("provenance", {}).get("hardware", {})
    gpu = record.get("hardware") or hardware.get("gpu")
    if gpu:
        machine = str(gpu)
    else:
        flags = set(hardware.get("cpu_isa") or ())
        tag = next((label for flag, label in ISA_TAGS if flag in flags), None)
        machine = f"{hardware.get('cpu_count', '?')}-core CPU" + (f" with {tag}" if tag else "")
    return f"{record['profile']}: {machine} (min)"


def time_table(folder: Any = None) -> pd.DataFrame:
    """Minutes each chapter (row) took in each recorded run of ``folder`` (default: the recorded
    results): columns ``"<profile>: <machine> (min)"``, ``"<profile>: peak GPU memory (GB)"`` for
    a GPU run, and for a profile with CPU records and no GPU record ``"<profile>: a GPU machine
    (min), at most"`` (each chapter's least CPU time: the module docstring's bound). ``NaN``: not
    recorded or not passed. ``attrs["runs"]`` names each column's run (commit, date, hardware,
    note, chapters passed); ``attrs["note"]`` says how to read the table."""
    records = recorded_matching(RECORDS, folder)
    columns: dict[str, dict[str, float]] = {}
    runs: dict[str, str] = {}
    made_by: dict[str, str] = {}
    for file, record in records.items():
        name = _column(record)
        if name in made_by:
            raise ValueError(
                f"time_table: the records {made_by[name]} and {file} are both '{name}': merge "
                "them into one (python benchmarks/chapter_times.py merge ...) or remove one"
            )
        made_by[name] = file
        passed = {c: e for c, e in record["chapters"].items() if e.get("outcome") == "passed"}
        columns[name] = {c: e["seconds"] / 60 for c, e in passed.items()}
        prov = record.get("provenance", {})
        runs[name] = (
            (
                f"git {commit_label(prov)}"
                if (prov.get("git") or {}).get("sha")
                else "each chapter at the commit its entry names"
            )
            + f", recorded {str(prov.get('timestamp', '?'))[:10]}, "
            f"{hardware_text(prov.get('hardware', {}), record.get('hardware'))}; "
            + (f"{record['note']}; " if record.get("note") else "")
            + (
                "every chapter passed"
                if record.get("complete")
                else f"{len(passed)} chapter(s) passed, {len(record.get('problems', []))} "
                "missing or not passed (blank in the table)"
            )
        )
        memory = {c: e.get("peak_memory_gb") for c, e in passed.items()}
        if record.get("hardware") and any(v is not None for v in memory.values()):
            columns[f"{record['profile']}: peak GPU memory (GB)"] = memory
    profiles_on_gpu = {r["profile"] for r in records.values() if r.get("hardware")}
    for record in records.values():
        profile = record["profile"]
        if profile != "quick" and not record.get("hardware") and profile not in profiles_on_gpu:
            bound = columns.setdefault(f"{profile}: a GPU machine (min), at most", {})
            for chapter, minutes in columns[_column(record)].items():  # the fastest CPU run's
                bound[chapter] = min(minutes, bound.get(chapter, minutes))
    table = pd.DataFrame(columns).sort_index()
    table.index.name = "chapter"
    table.attrs["runs"] = runs
    table.attrs["note"] = (
        "measured minutes per chapter, one column per recorded run; blank: not recorded. "
        "'at most' columns: each chapter's least recorded CPU time, an upper bound for a GPU "
        "machine whose CPU cores are at least as fast (the GPU takes only the transformer's work)."
    )
    return table
