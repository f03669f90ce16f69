"""How every result is recorded: enough to tell later how a number was made.

``provenance()`` returns a JSON-ready dict: git commit, package versions, hardware, profile, the
sha256 of every data file read, the model settings and a UTC timestamp. Every table the book
shows carries one, and every results file stores one.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from sbert_tutor.settings import PROFILE_ENV, data_label

__all__ = ["commit_label", "hardware_label", "provenance"]

_PACKAGES = (
    "sbert-tutor",
    "torch",
    "transformers",
    "numpy",
    "scipy",
    "pandas",
    "sentence-transformers",
)


@lru_cache(maxsize=256)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_file(path: str | Path) -> str:
    """sha256 of a file (memoised on path, size and modification time)."""
    stat = os.stat(path)
    return _sha256_cached(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def commit_label(provenance: dict[str, Any]) -> str:
    """The commit a result was made at, as tables show it: the first 12 hex digits of
    ``provenance["git"]["sha"]``, with ``" (dirty)"`` when the tree had uncommitted changes."""
    git = provenance.get("git") or {}
    return str(git.get("sha", ""))[:12] + (" (dirty)" if git.get("dirty") else "")


def _git_info(start: str | Path | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the repository holding ``start`` (default: this package)."""
    where = Path(start) if start else Path(__file__).resolve().parent

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=where, capture_output=True, text=True, timeout=10, check=True
        )
        return done.stdout.strip()

    try:
        sha = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return {"sha": sha, "dirty": bool(dirty)}
    except (OSError, subprocess.SubprocessError):
        return {"sha": "unknown (not a git checkout)", "dirty": None}


def package_versions(more: Iterable[str] = ()) -> dict[str, str]:
    """Installed versions of the packages that shape the numbers, and of ``more`` (a result's
    own, e.g. a runtime it times); a package that is not installed is left out."""
    versions = {"python": platform.python_version()}
    for name in dict.fromkeys((*_PACKAGES, *more)):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


#: CPU feature flags (``/proc/cpuinfo`` names) that decide which kernels fp32, bf16 and int8
#: arithmetic run on: x86's AVX2/FMA, AVX-512 and its BF16 and VNNI (int8 dot products)
#: extensions, AVX-VNNI, AMX tiles; Arm's bf16, int8 dot products and matrix multiply.
ISA_FLAGS = frozenset(
    {
        "avx2",
        "fma",
        "avx512f",
        "avx512_bf16",
        "avx512_vnni",
        "avx_vnni",
        "amx_tile",
        "amx_bf16",
        "amx_int8",
        "bf16",
        "asimddp",
        "i8mm",
    }
)


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU's model name as ``/proc/cpuinfo`` gives it (``None`` where there is none)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("model name", "cpu model") and value.strip():
            return value.strip()
    return None


def hardware() -> dict[str, Any]:
    """CPU (architecture, model, the instruction-set flags of ``ISA_FLAGS`` it has, cores),
    thread count and GPU (if any)."""
    from sbert_tutor.runtime.precision import cpu_flags

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_isa": sorted(ISA_FLAGS & cpu_flags()),
        "cpu_count": os.cpu_count(),
    }
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["device"] = "cuda"
            info["gpu"] = torch.cuda.get_device_name(0)
        else:
            info["device"] = "cpu"
    except ImportError:  # pragma: no cover
        info["device"] = "cpu"
    return info


def provenance(
    profile: str | None = None,
    data_files: Iterable[str | Path] = (),
    model: dict[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    packages: Iterable[str] = (),
) -> dict[str, Any]:
    """A JSON-ready record of how a result was made.

    Args:
        profile: the book's run size, ``"quick"``, ``"t4"`` or ``"paper"`` (``None``: the value of
            ``SBERT_TUTOR_PROFILE``, or ``None`` where it is unset; the book resolves its profile
            itself, :func:`sbert_tutor.book.profiles.get_profile`, and passes it).
        data_files: every local data file read; each is hashed (sha256) and named by
            ``sbert_tutor.settings.data_label`` (relative to the data folder).
        model: the encoder's settings (``SentenceEncoder.describe()``).
        extra: anything else worth keeping (command line, seeds, sizes), as a mapping, e.g.
            ``extra={"command": sys.argv}``; its entries are stored next to the others.
        packages: packages to record beside the default ones (``"packages"``), e.g. the
            runtimes a benchmark times.

    Raises:
        ValueError: a key of ``extra`` would replace one of the record's own entries.
    """
    if profile is None:
        profile = os.environ.get(PROFILE_ENV, "").strip() or None
    files = {data_label(f): Path(f) for f in data_files}
    record = {
        "git": _git_info(),
        "packages": package_versions(packages),
        "hardware": hardware(),
        "profile": profile,
        "data_files": {label: sha256_file(files[label]) for label in sorted(files)},
        "model": model,
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    extra = dict(extra or {})
    clash = sorted(set(extra) & set(record))
    if clash:
        raise ValueError(
            f"provenance extra={{...}} has {', '.join(map(repr, clash))}, which the record sets "
            "itself: pass profile=, data_files= or model= for those, or use another key"
        )
    return {**record, **extra}


def hardware_label() -> str:
    """A short description of where this runs, e.g. ``"CPU, 2 threads"`` or ``"NVIDIA T4"``."""
    info = hardware()
    if info.get("device") == "cuda":
        return str(info["gpu"])
    return f"CPU, {info.get('torch_threads', info['cpu_count'])} threads"
