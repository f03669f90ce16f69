r"""A dense layer after pooling: :math:`u' = f(W u + b)` (sentence-transformers' ``Dense`` module).

Some published models project the pooled vector :math:`u \in \mathbb{R}^{d}` once more, e.g. LaBSE
(:math:`f = \tanh`), the multilingual distilled models (768 -> 512, :math:`\tanh`) and
sentence-T5 (:math:`f` = identity, no bias). With ``use_residual`` the input is added back:
:math:`u' = f(W u + b) + u` (or :math:`+ R u` with a bias-free :math:`R` when the sizes differ).

The folder layout is sentence-transformers': ``N_Dense/config.json`` (``in_features``,
``out_features``, ``bias``, ``activation_function`` as a dotted ``torch.nn`` class name) and the
weights ``linear.weight``, ``linear.bias`` (and ``residual.weight``) in ``model.safetensors`` or, in
older folders, ``pytorch_model.bin``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

__all__ = ["Dense"]

_DEFAULT_ACTIVATION = "torch.nn.modules.activation.Tanh"


def _activation_from_name(name: str | None, where: str = "") -> nn.Module:
    """A ``torch.nn`` activation from its dotted class name (only ``torch.nn`` classes are built)."""
    if name is None:
        return nn.Identity()
    short = str(name).rsplit(".", 1)[-1]
    cls = getattr(nn, short, None)
    if not str(name).startswith("torch.") or not (
        isinstance(cls, type) and issubclass(cls, nn.Module)
    ):
        raise NotImplementedError(
            f"{where}activation_function {name!r} is not a torch.nn class; sbert_tutor builds only "
            "torch.nn activations (Tanh, Identity, ReLU, GELU, ...). Load this model with "
            "sentence-transformers instead."
        )
    return cls()


def activation_name(activation: Any) -> str:
    """The dotted class name sentence-transformers saves for an activation module (a
    :class:`Dense` layer's ``activation_function``, a cross-encoder's ``activation_fn``); a
    ``TypeError`` for anything but a ``torch.nn`` module, which no folder can name."""
    if not isinstance(activation, nn.Module):
        raise TypeError(
            f"cannot save the activation {activation!r}: only a torch.nn module (e.g. "
            "torch.nn.Sigmoid(), torch.nn.Identity()) can be named in the folder"
        )
    cls = type(activation)
    return f"{cls.__module__}.{cls.__name__}"


class Dense(nn.Module):
    """``activation(linear(u))`` (+ a residual), with sentence-transformers' parameter names."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        activation: nn.Module | None = None,
        use_residual: bool = False,
    ) -> None:
        super().__init__()
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.linear = nn.Linear(self.in_features, self.out_features, bias=bias)
        self.activation = activation if activation is not None else nn.Tanh()
        self.use_residual = bool(use_residual)
        if self.use_residual and self.in_features != self.out_features:
            self.residual = nn.Linear(self.in_features, self.out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.activation(self.linear(x))
        if self.use_residual:
            out = out + (x if self.in_features == self.out_features else self.residual(x))
        return out

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {
            "in_features": self.in_features,
            "out_features": self.out_features,
            "bias": self.linear.bias is not None,
            "activation_function": activation_name(self.activation),
        }
        if self.use_residual:
            cfg["use_residual"] = True
        return cfg

    @classmethod
    def load(cls, folder: Path) -> Dense:
        """Read ``folder/config.json`` and the weights next to it."""
        where = f"{folder}: "
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if cfg.get("module_input_name", "sentence_embedding") != "sentence_embedding":
            raise NotImplementedError(
                f"{where}a Dense module on {cfg['module_input_name']!r} (not the sentence "
                "embedding) is not supported; load this model with sentence-transformers instead."
            )
        activation = _activation_from_name(
            cfg.get("activation_function", _DEFAULT_ACTIVATION), where
        )
        layer = cls(
            cfg["in_features"],
            cfg["out_features"],
            bias=cfg.get("bias", True),
            activation=activation,
            use_residual=cfg.get("use_residual", False),
        )
        layer.load_state_dict(_read_weights(folder))
        return layer

    def save(self, folder: Path) -> None:
        """Write ``config.json`` and ``model.safetensors`` the way sentence-transformers does."""
        from safetensors.torch import save_file

        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(self.config(), indent=2), encoding="utf-8")
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(folder / "model.safetensors"))


def _read_weights(folder: Path) -> dict[str, torch.Tensor]:
    safetensors_file = folder / "model.safetensors"
    if safetensors_file.is_file():
        from safetensors.torch import load_file

        return load_file(str(safetensors_file))
    bin_file = folder / "pytorch_model.bin"
    if bin_file.is_file():
        return torch.load(bin_file, map_location="cpu", weights_only=True)
    raise FileNotFoundError(
        f"{folder} holds no Dense weights (model.safetensors or pytorch_model.bin); the model "
        "folder is incomplete: download or copy it again"
    )
