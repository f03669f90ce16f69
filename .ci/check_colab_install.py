"""Check that a chapter's install cell leaves an installed torch alone (Colab's CUDA build).

Colab ships its own torch, built for its GPU. The install cell runs
``pip install "sbert-tutor[colab] @ git+<repository>@<release>"`` (or the uploaded wheel with
``[colab]``); if any requirement made pip upgrade or reinstall torch, a reader would download
gigabytes and could lose the CUDA build. This asks pip, in an environment that already has
torch, what it *would* install (``pip install --dry-run --report``) for the wheel this checkout
builds with the ``colab`` extra, and fails if torch is in that list.

    python .ci/check_colab_install.py                   # makes /tmp/dryenv with this torch
    python .ci/check_colab_install.py --venv /tmp/dryenv --torch 2.13.0
    python .ci/check_colab_install.py --venv /tmp/bare --torch none   # control: torch listed

It needs the package index (the dependencies are resolved as on Colab), so it is a script, not
a unit test. It prints the report's install list and whether torch is in it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(out: Path) -> Path:
    """The wheel of this checkout's tracked files (``pip wheel --no-deps``)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "src"
        files = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.split(b"\0")
        for name in filter(None, files):
            target = source / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / name.decode()).is_file():
                shutil.copy2(ROOT / name.decode(), target)
        command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out)]
        if subprocess.run([*command, str(source)]).returncode != 0:  # the backend from the index
            subprocess.run([*command, "--no-build-isolation", str(source)], check=True)
    return next(out.glob("sbert_tutor-*.whl"))


def torch_in_report(report: dict) -> list[str]:
    """``name==version`` of every torch-family item pip would install."""
    return [
        f"{item['metadata']['name']}=={item['metadata']['version']}"
        for item in report.get("install", [])
        if item["metadata"]["name"].lower() in {"torch", "torchvision", "torchaudio"}
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default="/tmp/dryenv")
    parser.add_argument(
        "--torch",
        default=importlib.metadata.version("torch").split("+")[0],
        help="torch version to install first ('none': leave the environment without torch)",
    )
    parser.add_argument("--report", default=None, help="where to keep pip's report")
    args = parser.parse_args(argv)
    venv = Path(args.venv)
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if args.torch != "none":
        subprocess.run([*pip, "install", "-q", f"torch=={args.torch}"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = build_wheel(Path(tmp))
        report = Path(args.report or Path(tmp) / "report.json")
        subprocess.run(
            [*pip, "install", "--dry-run", "-q", "--report", str(report), f"{wheel}[colab]"],
            check=True,
        )
        data = json.loads(report.read_text())
    installed = subprocess.run(
        [*pip, "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout
    has_torch = [line for line in installed.splitlines() if line.lower().startswith("torch==")]
    would = sorted(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in data["install"])
    print(f"environment: {venv} with {has_torch or 'no torch'}")
    print(f"pip would install {len(would)} distributions: {', '.join(would)}")
    torch = torch_in_report(data)
    print(f"torch in the report: {torch or 'no'}")
    return 1 if torch else 0


if __name__ == "__main__":
    sys.exit(main())
