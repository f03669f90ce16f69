"""Code that runs on a GPU must not call ``Tensor.numpy()`` on a tensor that may live there.

``.numpy()`` works only on CPU tensors; on a CUDA tensor it raises. On a CPU-only machine (CI)
such a call passes every test, so two checks catch it here (chapter 11 once failed on every GPU
this way):

* a lint over ``sbert_tutor/`` and the code cells of chapters 9-11: every ``.numpy()`` call is on
  ``.cpu()``, ``.to("cpu")``, or on a line that says why its tensor is on the host
  (``# host tensor: <why>``);
* chapter code (chapter 11's, from its page) runs with the encoder's outputs standing in for
  tensors on a GPU (:class:`OnDevice`, which refuses ``.numpy()`` as CUDA tensors do), and,
  where CUDA exists, on the real GPU.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert_tutor import SentenceEncoder

PACKAGE = Path(__file__).resolve().parents[1] / "sbert_tutor"
HOST_MARK = "# host tensor:"


def _moves_to_cpu(node: ast.expr) -> bool:
    """``x.cpu()``, ``x.to("cpu", ...)``, ``x.to(device="cpu")`` (possibly ``.detach()`` after)."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("detach", "contiguous", "float", "double")
    ):
        node = node.func.value
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr == "cpu":
        return True
    if node.func.attr == "to":
        values = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "device")]
        return any(isinstance(v, ast.Constant) and v.value == "cpu" for v in values)
    return False


def numpy_calls_without_cpu(source: str) -> list[int]:
    """Line numbers of ``<expr>.numpy()`` calls whose ``<expr>`` is not moved to the CPU first
    and whose line carries no ``# host tensor:`` reason."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "numpy"
            and not node.args
            and not _moves_to_cpu(node.func.value)
        ):
            span = lines[node.lineno - 1 : (node.end_lineno or node.lineno)]
            if not any(HOST_MARK in line for line in span):
                found.append(node.lineno)
    return found


def test_the_lint_finds_what_it_should():
    bad = "a = emb.numpy()\nb = torch.softmax(x, 0).numpy()\nc = x.detach().numpy()\n"
    assert numpy_calls_without_cpu(bad) == [1, 2, 3]
    good = (
        "a = emb.cpu().numpy()\nb = emb.detach().cpu().numpy()\nc = emb.to('cpu').numpy()\n"
        "d = emb.to(device='cpu', dtype=f).numpy()\ne = emb.cpu().detach().numpy()\n"
        "f = host.numpy()  # host tensor: pinned copy\ng = np.asarray(x)\n"
    )
    assert numpy_calls_without_cpu(good) == []


def test_no_numpy_on_a_tensor_that_may_be_on_a_gpu():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line in numpy_calls_without_cpu(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    assert not offenders, (
        "Tensor.numpy() fails on a CUDA tensor; call .cpu() first, or mark the line "
        f"'{HOST_MARK} <why it is on the host>': " + ", ".join(offenders)
    )


#: Chapters whose pages define code that runs on a GPU encoder's outputs, linted as the
#: package is (their helpers moved from sbert_tutor/book onto the page).
PAGES = [
    PACKAGE.parent / "book" / f"{name}.ipynb"
    for name in ("09_multiple_negatives_ranking", "10_supmpn", "11_semantic_search_guided")
]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_no_numpy_on_a_tensor_that_may_be_on_a_gpu_on_the_page(page):
    offenders = []
    for cell in json.loads(page.read_text(encoding="utf-8"))["cells"]:
        code = "".join(cell["source"])
        if cell["cell_type"] != "code" or "%pip" in code:  # the install cell is not Python
            continue
        offenders += [f"cell {cell['id']}, line {n}" for n in numpy_calls_without_cpu(code)]
    assert not offenders, f"Tensor.numpy() without .cpu() in {page.name}: " + ", ".join(offenders)


# --------------------------------------------------------------------------- a stand-in GPU
class OnDevice(torch.Tensor):
    """A CPU tensor that behaves like a CUDA one where it matters here: ``.numpy()`` (and so
    ``np.asarray``) refuses it, ``.cpu()`` / ``.to("cpu")`` give a plain tensor back. Every
    torch operation on it returns an :class:`OnDevice` again, as results stay on the GPU."""

    def numpy(self, *args, **kwargs):  # noqa: D102
        raise TypeError(
            "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor to host memory first."
        )

    def cpu(self, *args, **kwargs):  # noqa: D102
        return self.as_subclass(torch.Tensor)

    def to(self, *args, **kwargs):  # noqa: D102
        target = args[0] if args else kwargs.get("device")
        if isinstance(target, (str, torch.device)) and torch.device(target).type == "cpu":
            return self.as_subclass(torch.Tensor).to(*args, **kwargs)
        return super().to(*args, **kwargs)


def test_the_stand_in_refuses_numpy_like_cuda():
    x = torch.ones(3).as_subclass(OnDevice)
    y = torch.nn.functional.cosine_similarity(x[None], x[None])
    assert isinstance(y, OnDevice)
    with pytest.raises(TypeError, match="cuda"):
        y.numpy()
    with pytest.raises(TypeError, match="cuda"):
        np.asarray(y)
    assert y.cpu().numpy().tolist() == pytest.approx([1.0])
    assert type(y.to("cpu")) is torch.Tensor


@pytest.fixture
def outputs_on_device(monkeypatch):
    """Every :class:`SentenceEncoder` forward returns an :class:`OnDevice` tensor."""
    forward = SentenceEncoder.forward

    def on_device(self, *args, **kwargs):
        return forward(self, *args, **kwargs).as_subclass(OnDevice)

    monkeypatch.setattr(SentenceEncoder, "forward", on_device)


def test_chapter_11_dropout_views_with_outputs_on_a_gpu(tiny_bert, outputs_on_device):
    """Chapter 11's dropout views, as its page defines them, with the encoder's outputs where a
    GPU would hold them: it must bring them to the host itself (it once called .numpy() on the
    GPU tensor and failed on every GPU)."""
    from tests.book.pages import page_functions

    dropout_view_similarity = page_functions(
        "11_semantic_search_guided", "dropout_view_similarity"
    )["dropout_view_similarity"]
    model, tokenizer = tiny_bert
    encoder = SentenceEncoder(model, tokenizer, pooling="mean", max_seq_length=16)
    table = dropout_view_similarity(encoder, ["a cat sat", "two dogs ran off"], seed=0)
    np.testing.assert_allclose(table["cosine, eval mode"], 1.0, atol=1e-6)
    assert (table["cosine, train mode"] < 1.0).all()  # dropout: two different views


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_chapter_11_dropout_views_on_a_real_gpu(tiny_bert):
    import copy

    from tests.book.pages import page_functions

    dropout_view_similarity = page_functions(
        "11_semantic_search_guided", "dropout_view_similarity"
    )["dropout_view_similarity"]
    model, tokenizer = tiny_bert
    encoder = SentenceEncoder(copy.deepcopy(model), tokenizer, pooling="mean", max_seq_length=16)
    encoder.to("cuda")
    table = dropout_view_similarity(encoder, ["a cat sat", "two dogs ran off"])
    np.testing.assert_allclose(table["cosine, eval mode"], 1.0, atol=1e-5)
