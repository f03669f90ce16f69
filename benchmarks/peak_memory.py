"""A process's resident memory, read the same way by every memory benchmark: the current and
peak resident set from ``/proc/self/status`` (``VmRSS``, ``VmHWM``), with ``getrusage`` where
that file does not exist, and a reset of the peak so a measurement counts only what follows it.

Imported by the benchmark scripts that run each variant in a fresh process
(``search_memory.py``, ``cached_mnrl_memory.py``), from the ``benchmarks/`` folder they run in.
"""

from __future__ import annotations

import resource
import sys

__all__ = ["current_rss", "peak_rss", "reset_peak", "status_bytes"]


def status_bytes(field: str) -> int | None:
    """``field`` of ``/proc/self/status`` (``"VmRSS"``, ``"VmHWM"``) in bytes; ``None`` where the
    file or the field does not exist (not Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def reset_peak() -> bool:
    """Reset ``VmHWM`` to the current resident set (Linux >= 4.0: ``5`` to ``clear_refs``);
    ``False`` where that is not allowed, and the peak then includes what came before."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int:
    """The process's peak resident set in bytes (``VmHWM``, else ``getrusage``'s maximum)."""
    hwm = status_bytes("VmHWM")
    if hwm is not None:
        return hwm
    ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return ru if sys.platform == "darwin" else ru * 1024  # macOS: bytes, Linux: KiB


def current_rss() -> int:
    """The process's resident set now in bytes (``VmRSS``, else the peak)."""
    rss = status_bytes("VmRSS")
    return rss if rss is not None else peak_rss()
