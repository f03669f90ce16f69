"""Seeds, random-number-generator states and training checkpoints.

A checkpoint holds *everything* that decides the rest of a run: the encoder's and the
objective's weights, the optimizer's moments, the schedule's position, the fp16 gradient scaler,
the step, where in which epoch training stopped, the loss curve so far, and the state of every
random number generator (Python, NumPy, torch CPU and CUDA; dropout draws from torch's). Batch
order is a function of ``(seed, epoch)`` only (:mod:`sbert_tutor.training.samplers`), so resuming
replays exactly the batches and dropout masks an uninterrupted run would have used.

One checkpoint is a folder ``checkpoint-<step>/`` with one file, ``trainer_state.pt``, that
``torch.load(..., weights_only=True)`` can read (tensors, numbers, strings, lists, dicts only).
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "list_checkpoints",
    "load_checkpoint",
    "rng_state",
    "save_checkpoint",
    "set_rng_state",
    "set_seed",
]

_STATE_FILE = "trainer_state.pt"
_PATTERN = re.compile(r"^checkpoint-(\d+)$")


def set_seed(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators (all devices)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """The state of every generator, as plain lists and tensors (``weights_only``-loadable)."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss = random.getstate()
    state: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(folder: str | Path, state: dict[str, Any], keep: int | None = None) -> Path:
    """Write ``state`` to ``folder/checkpoint-<state['step']>/trainer_state.pt``.

    Args:
        folder: the checkpoint directory (created if needed).
        state: what :meth:`~sbert_tutor.training.trainer.Trainer.state_dict` returns; must hold
            ``"step"``.
        keep: keep only the newest ``keep`` checkpoints in ``folder`` (``None``: keep all).

    Returns:
        The new checkpoint's folder.
    """
    root = Path(folder)
    target = root / f"checkpoint-{int(state['step'])}"
    target.mkdir(parents=True, exist_ok=True)
    tmp = target / (_STATE_FILE + ".tmp")
    torch.save(state, tmp)
    tmp.replace(target / _STATE_FILE)  # a crash mid-write never leaves a truncated checkpoint
    if keep is not None:
        for old in list_checkpoints(root)[:-keep] if keep > 0 else []:
            shutil.rmtree(old)
    return target


def list_checkpoints(folder: str | Path) -> list[Path]:
    """Complete checkpoints in ``folder``, oldest (lowest step) first."""
    root = Path(folder)
    if not root.is_dir():
        return []
    found = []
    for child in root.iterdir():
        match = _PATTERN.match(child.name)
        if match and (child / _STATE_FILE).is_file():
            found.append((int(match.group(1)), child))
    return [path for _, path in sorted(found)]


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint: a ``checkpoint-<step>`` folder, its ``trainer_state.pt``, or a folder
    of checkpoints (the newest is taken)."""
    p = Path(path)
    if p.is_dir() and not (p / _STATE_FILE).is_file():
        found = list_checkpoints(p)
        if not found:
            raise FileNotFoundError(
                f"no checkpoint in {p}: expected {_STATE_FILE} or checkpoint-<step>/ folders "
                "(written when save_steps and checkpoint_dir are set)"
            )
        p = found[-1]
    file = p / _STATE_FILE if p.is_dir() else p
    if not file.is_file():
        raise FileNotFoundError(f"{file} does not exist: pass a checkpoint folder or file")
    return torch.load(file, map_location=map_location, weights_only=True)
