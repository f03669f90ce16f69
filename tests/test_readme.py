"""The README's "library in ten lines" runs as written (its code blocks, in order, one namespace)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import needs_data

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## The library in ten lines"


def readme_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return re.findall(r"```python\n(.*?)```", text[start : end if end > 0 else None], re.S)


def test_the_section_has_one_block_per_task():
    blocks = readme_blocks()
    assert len(blocks) == 5
    for block, name in zip(
        blocks,
        ["SentenceEncoder", "evaluate_sts", "fit", "semantic_search", "evaluate_run"],
        strict=True,
    ):
        assert f"import {name}" in block or f", {name}" in block


@needs_data
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_readme_blocks_run_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the training block writes my-model/ here
    namespace: dict = {}
    for block in readme_blocks():
        exec(compile(block, str(README), "exec"), namespace)
    assert namespace["vectors"].shape == (2, 384)
    assert namespace["passages"][namespace["indices"][0][0]] == "A guitar usually has six strings."
    assert (tmp_path / "my-model" / "modules.json").is_file()
    assert "STSb" in capsys.readouterr().out


def openvino_block() -> str:
    """The README's OpenVINO example (section "Speed against sentence-transformers")."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    (block,) = [b for b in blocks if "to_openvino" in b]
    return block


def test_openvino_block_defines_every_name_it_uses():
    """The block runs on its own: no name comes from an earlier block (it once used
    ``sentences`` and ``train_sentences`` without defining them)."""
    import ast
    import builtins

    tree = ast.parse(openvino_block())
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert used - defined == set()


@needs_data
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_openvino_block_runs_as_written():
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    namespace: dict = {}
    exec(compile(openvino_block(), str(README), "exec"), namespace)
    assert namespace["embeddings"].shape == (2, 384)
    assert namespace["faster"].encode(namespace["sentences"]).shape == (2, 384)


def speed_row(starts: str) -> str:
    """The last cell of the one README speed-table row that begins with ``starts``."""
    rows = [
        line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith(starts)
    ]
    assert len(rows) == 1, (starts, rows)
    return rows[0].split(" | ")[-1]


def test_speed_table_ratios_are_the_records():
    """The encode and train-step ratios the README prints are the shipped records', to 2 decimals."""
    results = Path(__file__).resolve().parents[1] / "sbert_tutor" / "book" / "results"
    encode = json.loads((results / "encode_cpu_2threads.json").read_text(encoding="utf-8"))
    at_64 = next(r for r in encode["ratios"] if r["batch_size"] == 64)
    assert speed_row("| encode, batch 64") == (
        f"{at_64['ours_vs_sentence-transformers']:.2f}x sentences/s |"
    )
    train = json.loads((results / "train_step_mnrl_cpu_2threads.json").read_text(encoding="utf-8"))
    assert speed_row("| train step, MNRL") == (
        f"{train['results']['ratio_steps_per_s_ours_vs_st']:.2f}x steps/s |"
    )
