"""Per-chapter times (and GPU memory) as a results file the book's time table reads.

Not a test: a record. Three ways in, one layout out (``sbert_tutor/book/results/``):

``from-junit XML``
    CI's nbmake run writes JUnit XML (``.ci/task test`` passes ``--junitxml=_build/nbmake.xml``);
    each chapter notebook is one test case with its time and outcome. ``--out auto`` writes
    ``chapter_times_cpu.json``, CI's chapter times, the CPU column of
    :func:`sbert_tutor.book.run_times.time_table`.
``merge RECORD ...``
    runs of a few chapters each (``run --chapters ...``, one profile, one kind of machine) as one
    record; each chapter keeps its own run's commit, timestamp and command.
``from-durations LOG``
    the same from the log of ``pytest --nbmake --durations=0`` (lines like
    ``123.45s call     book/06_classification_objective.ipynb::06_...ipynb``; a chapter named
    on a ``FAILED`` line failed).
``run``
    on a GPU machine: every chapter, one after the other, each in a fresh Python process (its
    code cells in order, as ``shared/gpu/nb2py.py`` turns them into a script), timed, with
    ``torch.cuda.max_memory_allocated`` at its end. ``--out auto`` writes
    ``chapter_times_gpu_<gpu>.json`` (on a CPU: ``chapter_times_cpu_<profile>.json``). ``--stand-in NAME=PATH`` serves a model that cannot travel
    to the machine from a local folder of the same configuration (time and memory depend on the
    architecture, not the weights; scores of such a run mean nothing and are not recorded):
    e.g. ``--stand-in nreimers/MiniLM-L6-H384-uncased=/tmp/models/sentence-transformers/all-MiniLM-L6-v2``.

Every record carries its provenance (git commit, hardware, packages, the data files' sha256,
profile, command; :func:`sbert_tutor.provenance.provenance`), whether it is ``complete``
(every chapter of ``book/`` present and passed), and one entry a chapter: ``seconds``,
``outcome``, and for ``run`` ``peak_memory_gb``. An incomplete run is refused unless
``--allow-incomplete`` (it is then recorded as incomplete).

Examples::

    python benchmarks/chapter_times.py from-junit _build/nbmake.xml --out auto
    python benchmarks/chapter_times.py from-durations /tmp/after_nb.log --profile quick --out auto
    SBERT_TUTOR_PROFILE=t4 python benchmarks/chapter_times.py run --out auto
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "sbert_tutor" / "book" / "results"  # where the book reads them
BOOK = ROOT / "book"
NOTEBOOK = re.compile(r"(?:^|[/.])((?:\d\d[a-z]?|appendix)_[\w]+)\.ipynb")
#: nbmake's test case of a chapter: class ``book.<stem>.ipynb`` (other tests may name notebooks too)
NBMAKE_CASE = re.compile(r"^book\.([\w]+)\.ipynb$")
DURATION = re.compile(r"^\s*([\d.]+)s\s+(setup|call|teardown)\s+(\S+\.ipynb)\b")
FAILED = re.compile(r"^(?:FAILED|ERROR)\s+(\S+\.ipynb)\b")
MARKER = "CHAPTER_TIMES_JSON "


def chapters_in(book: Path = BOOK) -> list[str]:
    """The chapter notebooks of ``book/`` (stems), in order."""
    return sorted(p.stem for p in book.glob("*.ipynb"))


def _stem(text: str) -> str | None:
    found = NOTEBOOK.search(text)
    return found.group(1) if found else None


def parse_junit(path: str | Path) -> dict[str, dict[str, Any]]:
    """Chapter stem -> ``{"seconds", "outcome"}`` from a JUnit XML file (notebook cases only)."""
    chapters: dict[str, dict[str, Any]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        found = NBMAKE_CASE.match(case.get("classname", ""))
        if found is None:
            continue
        stem = found.group(1)
        outcome = "passed"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        entry = chapters.setdefault(stem, {"seconds": 0.0, "outcome": outcome})
        entry["seconds"] += float(case.get("time", 0.0))
        if outcome != "passed":
            entry["outcome"] = outcome
    return chapters


def parse_durations(text: str) -> dict[str, dict[str, Any]]:
    """Chapter stem -> ``{"seconds", "outcome"}`` from a ``pytest --durations=0`` log: setup,
    call and teardown summed; ``failed`` for a chapter on a FAILED/ERROR line."""
    chapters: dict[str, dict[str, Any]] = {}
    failed = set()
    for line in text.splitlines():
        timed = DURATION.match(line)
        if timed:
            stem = _stem(timed.group(3))
            if stem:
                entry = chapters.setdefault(stem, {"seconds": 0.0, "outcome": "passed"})
                entry["seconds"] += float(timed.group(1))
            continue
        bad = FAILED.match(line.strip())
        if bad and _stem(bad.group(1)):
            failed.add(_stem(bad.group(1)))
    for stem in failed:
        chapters.setdefault(stem, {"seconds": None, "outcome": "failed"})["outcome"] = "failed"
    return chapters


def completeness(chapters: dict[str, dict[str, Any]], expected: list[str]) -> list[str]:
    """What keeps the run from being complete: missing or not-passed chapters (empty: complete)."""
    problems = [f"{c}: missing" for c in expected if c not in chapters]
    problems += [
        f"{c}: {e['outcome']}" for c, e in sorted(chapters.items()) if e["outcome"] != "passed"
    ]
    return problems


def _data_files() -> list[Path]:
    from sbert_tutor.settings import data_dir

    folder = data_dir()
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder else []


def make_record(
    chapters: dict[str, dict[str, Any]],
    *,
    source: str,
    profile: str,
    expected: list[str],
    hardware: str | None = None,
) -> dict[str, Any]:
    """The results record: chapters, completeness, profile, source and provenance."""
    from sbert_tutor.provenance import provenance

    problems = completeness(chapters, expected)
    return {
        "benchmark": "chapter_times",
        "profile": profile,
        "source": source,
        "hardware": hardware,
        "complete": not problems,
        "problems": problems,
        "chapters": dict(sorted(chapters.items())),
        "seconds": sum(e["seconds"] or 0.0 for e in chapters.values()),
        "provenance": provenance(
            profile=profile,
            data_files=_data_files(),
            extra={"command": [sys.argv[0], *sys.argv[1:]]},
        ),
    }


def notebook_script(notebook: Path) -> str:
    """A chapter's code cells as one script (``%``/``!`` lines dropped, cells tagged
    ``raises-exception`` wrapped), ending with the peak GPU memory on a marked line."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    parts = ["import matplotlib\nmatplotlib.use('Agg')\ndisplay = print\n"]
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        code = re.sub(r"^(\s*)[%!].*$", r"\1pass", "".join(cell["source"]), flags=re.M)
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            body = "\n".join("    " + line for line in code.splitlines()) or "    pass"
            code = f"try:\n{body}\nexcept Exception as e:\n    print('expected:', type(e).__name__)"
        parts.append(code)
    parts.append(
        "import json as _j, torch as _t\n"
        "_peak = _t.cuda.max_memory_allocated() / 1e9 if _t.cuda.is_available() else None\n"
        f"print({MARKER!r} + _j.dumps({{'peak_memory_gb': _peak}}))\n"
    )
    return "\n\n".join(parts)


def _stand_ins(pairs: list[str], folder: Path) -> dict[str, str]:
    """``NAME=PATH`` -> a models folder (``SBERT_TUTOR_MODELS``) serving PATH under NAME, and
    everything the current ``SBERT_TUTOR_MODELS`` serves (linked, not copied)."""
    if not pairs:
        return {}
    folder.mkdir(parents=True, exist_ok=True)
    for pair in pairs:
        name, _, path = pair.partition("=")
        if not name or not path or not Path(path).is_dir():
            raise SystemExit(f"--stand-in wants NAME=FOLDER with an existing folder, got {pair!r}")
        link = folder / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(Path(path).resolve(), target_is_directory=True)
    existing = os.environ.get("SBERT_TUTOR_MODELS", "").strip()
    if existing and Path(existing).is_dir():
        for entry in Path(existing).iterdir():  # <org> or <name>
            here = folder / entry.name
            if not here.exists():
                here.symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
            elif here.is_dir() and not here.is_symlink() and entry.is_dir():
                for child in entry.iterdir():  # an org the stand-ins share
                    if not (here / child.name).exists():
                        (here / child.name).symlink_to(child.resolve(), target_is_directory=True)
    return {"SBERT_TUTOR_MODELS": str(folder)}


def run_chapters(
    notebooks: list[Path],
    timeout: float,
    stand_ins: list[str] | None = None,
    profile: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Run each chapter as a script in a fresh process: seconds, outcome, peak GPU memory.

    ``profile`` is set in the chapters' environment only; this process's own is left as it was.
    """
    chapters: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        if profile is not None:
            env["SBERT_TUTOR_PROFILE"] = profile
        env.update(_stand_ins(stand_ins or [], Path(tmp) / "models"))
        for notebook in notebooks:
            script = Path(tmp) / f"{notebook.stem}.py"
            script.write_text(notebook_script(notebook), encoding="utf-8")
            start = time.perf_counter()
            try:
                done = subprocess.run(
                    [sys.executable, str(script)],
                    cwd=tmp,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                outcome = "passed" if done.returncode == 0 else "failed"
                output = done.stdout
                tail = (done.stderr or "")[-1500:] if done.returncode else ""
            except subprocess.TimeoutExpired:
                outcome, output, tail = "timeout", "", f"over {timeout:.0f} s"
            seconds = time.perf_counter() - start
            peak = None
            for line in output.splitlines():
                if line.startswith(MARKER):
                    peak = json.loads(line[len(MARKER) :])["peak_memory_gb"]
            chapters[notebook.stem] = {
                "seconds": seconds,
                "outcome": outcome,
                "peak_memory_gb": peak,
            }
            if tail:
                chapters[notebook.stem]["error"] = tail
            print(
                f"{notebook.stem}: {outcome} in {seconds:.1f} s, peak GPU memory {peak} GB",
                flush=True,
            )
    return chapters


def tree_git(root: Path = ROOT) -> dict[str, Any]:
    """The commit (and dirty flag) of the tree whose chapters ran: ``provenance()`` names the
    checkout the running ``sbert_tutor`` was imported from, which may be another one."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        return {"sha": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))}
    except (OSError, subprocess.CalledProcessError):
        return {"sha": None, "dirty": None}


def _gpu_name() -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def _out_path(out: str, profile: str, gpu: str | None) -> Path:
    """``auto``: ``chapter_times_gpu_<gpu>.json`` for a GPU run, ``chapter_times_cpu.json`` for
    the quick profile on a CPU, ``chapter_times_cpu_<profile>.json`` for another profile."""
    if out != "auto":
        return Path(out)
    if gpu:
        slug = re.sub(r"[^a-z0-9]+", "_", gpu.lower()).strip("_")
        return RESULTS / f"chapter_times_gpu_{slug}.json"
    return RESULTS / (
        "chapter_times_cpu.json" if profile == "quick" else f"chapter_times_cpu_{profile}.json"
    )


def _machine(record: dict[str, Any]) -> dict[str, Any]:
    """What identifies the machine of a run: its CPU model, instruction sets, cores and threads
    (and GPU): two CPUs sold under one model name ("AMD EPYC") may differ in what they multiply
    natively, and so in speed."""
    hardware = record.get("provenance", {}).get("hardware", {})
    keys = ("cpu_model", "cpu_isa", "cpu_count", "torch_threads", "device", "gpu")
    return {k: hardware.get(k) for k in keys}


def merge_records(
    records: list[dict[str, Any]],
) -> tuple[dict[str, dict[str, Any]], str, str | None]:
    """Runs of some chapters each (one profile, one kind of machine) as one record's chapters:
    each chapter entry keeps its own run's commit, timestamp and command (``"run"``); a chapter
    in several records is taken from the last. Refuses records of different profiles or GPUs."""
    profiles = {r["profile"] for r in records}
    gpus = {r.get("hardware") for r in records}
    machines = {json.dumps(_machine(r), sort_keys=True) for r in records}
    if len(machines) != 1:
        raise SystemExit(f"merge: the records were made on different machines: {sorted(machines)}")
    if len(profiles) != 1 or len(gpus) != 1:
        raise SystemExit(
            f"merge: the records must share one profile and one GPU (or none); got profiles "
            f"{sorted(profiles)}, GPUs {sorted(map(str, gpus))}"
        )
    chapters: dict[str, dict[str, Any]] = {}
    for record in records:
        prov = record.get("provenance", {})
        for stem, entry in record["chapters"].items():
            chapters[stem] = {
                **entry,
                "run": {k: prov.get(k) for k in ("git", "timestamp", "command")},
            }
    return chapters, profiles.pop(), gpus.pop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    junit = sub.add_parser("from-junit", help="CI's JUnit XML -> chapter_times_cpu.json")
    junit.add_argument("xml")
    durations = sub.add_parser("from-durations", help="a pytest --durations=0 log")
    durations.add_argument("log")
    run = sub.add_parser("run", help="run every chapter here (a GPU machine) and time it")
    run.add_argument("--chapters", nargs="*", default=None, help="stems (default: all)")
    run.add_argument("--timeout", type=float, default=1200.0, help="seconds a chapter")
    run.add_argument("--stand-in", action="append", default=[], metavar="NAME=FOLDER")
    merge = sub.add_parser("merge", help="records of some chapters each -> one record")
    merge.add_argument("records", nargs="+", help="results files written by run")
    merge.add_argument("--note", default=None, help="how the runs were made, kept in the record")
    for p in (junit, durations, run, merge):
        p.add_argument("--profile", default=None, help="default: SBERT_TUTOR_PROFILE / resolved")
        p.add_argument("--book", default=str(BOOK), help="the chapters' folder")
        p.add_argument("--out", default=None, help="results file; 'auto' names it")
        p.add_argument("--allow-incomplete", action="store_true")
    args = parser.parse_args(argv)

    from sbert_tutor.book.profiles import get_profile

    profile = get_profile(args.profile).name
    book = Path(args.book)
    expected = chapters_in(book)
    gpu = None
    if args.mode == "from-junit":
        chapters, source = parse_junit(args.xml), f"JUnit XML {args.xml}"
    elif args.mode == "from-durations":
        text = Path(args.log).read_text(encoding="utf-8", errors="replace")
        chapters, source = parse_durations(text), f"pytest --durations log {args.log}"
    elif args.mode == "merge":
        parts = [json.loads(Path(f).read_text(encoding="utf-8")) for f in args.records]
        chapters, profile, gpu = merge_records(parts)
        if args.profile is not None and get_profile(args.profile).name != profile:
            raise SystemExit(
                f"merge: --profile {args.profile} but the records are of the {profile} profile; "
                "leave --profile out (merge takes the records' own)"
            )
        source = "benchmarks/chapter_times.py merge of " + ", ".join(
            sorted({str(r.get("source")) for r in parts})
        )
    else:
        wanted = args.chapters or expected  # a subset is an incomplete run
        notebooks = [book / f"{stem}.ipynb" for stem in wanted]
        gpu = _gpu_name()
        chapters = run_chapters(notebooks, args.timeout, args.stand_in, profile)
        source = "benchmarks/chapter_times.py run" + (
            f" (stand-ins: {', '.join(args.stand_in)})" if args.stand_in else ""
        )
    record = make_record(chapters, source=source, profile=profile, expected=expected, hardware=gpu)
    if args.mode == "run":
        record["provenance"]["git"] = tree_git(book.parent)
    if args.mode == "merge":  # the runs' machine and, when they share one, their commit
        record["provenance"]["hardware"] = parts[-1]["provenance"]["hardware"]
        commits = {json.dumps(r["provenance"].get("git"), sort_keys=True) for r in parts}
        # one commit for all, or none: each chapter's own is in its entry ("run")
        one = parts[-1]["provenance"].get("git") if len(commits) == 1 else None
        record["provenance"]["git"] = one or {"sha": None, "dirty": None}
        corrections = sorted({c for r in parts for c in r.get("corrections", [])})
        if corrections:  # what was corrected in the parts after their runs, and why
            record["corrections"] = corrections
    if getattr(args, "note", None):
        record["note"] = args.note
    for problem in record["problems"]:
        print(f"incomplete: {problem}", file=sys.stderr)
    print(json.dumps({c: e["seconds"] for c, e in record["chapters"].items()}, indent=1))
    if args.out is None:
        return 0 if record["complete"] else 1
    if not record["complete"] and not args.allow_incomplete:
        print(
            "not written: the run is incomplete (--allow-incomplete records it anyway)",
            file=sys.stderr,
        )
        return 1
    path = _out_path(args.out, profile, gpu)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
