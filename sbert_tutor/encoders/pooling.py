r"""Pooling: from token embeddings to one sentence embedding (book chapter 3, *Siamese SBERT*).

Given the last-layer token embeddings :math:`H \in \mathbb{R}^{T \times d}` of a sentence and its
attention mask :math:`m \in \{0, 1\}^T` (1 = real token, 0 = padding), with :math:`n = \sum_t m_t`
real tokens:

* ``mean``: :math:`u = \frac{\sum_t m_t H_t}{\max(n,\ 10^{-9})}` — padding never enters the
  average, and the clamp keeps an all-padding row finite (:func:`mean_pool`).
* ``max``: :math:`u_j = \max_{t: m_t = 1} H_{tj}` — padding is set to :math:`-\infty` first
  (:func:`max_pool`).
* ``cls``: :math:`u = H_{t_0}`, the first real token (``[CLS]`` for BERT; :math:`t_0 = 0` unless the
  tokenizer pads on the left; :func:`cls_pool`).

The SBERT paper uses these three. sentence-transformers offers three more, for models trained
with them:

* ``mean_sqrt_len_tokens``: :math:`u = \frac{\sum_t m_t H_t}{\sqrt{\max(n,\ 10^{-9})}}`.
* ``weightedmean``: :math:`u = \frac{\sum_t w_t m_t H_t}{\sum_t w_t m_t}` with position weights
  :math:`w_t = t - t_0 + 1` (later tokens weigh more; used by causal models such as SGPT).
* ``lasttoken``: :math:`u = H_{t_1}`, the last real token (decoder-style embedding models).

Modes combine by concatenation: ``"cls+mean"`` gives :math:`[u_{\mathrm{cls}}; u_{\mathrm{mean}}]`,
of size :math:`2d`, in the order written. With a prompt that must not count
(``prompt_length > 0``), the first ``prompt_length`` real tokens leave the mask before pooling, as
sentence-transformers' ``include_prompt=False`` does.

See ``book/03_siamese_pooling_sts.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["POOLING_MODES", "cls_pool", "max_pool", "mean_pool", "pool"]

#: The single pooling modes, in sentence-transformers' concatenation order for old configs.
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
#: The modes of the SBERT paper (what the book compares).
_PAPER_MODES = ("mean", "max", "cls")


def pooling_modes(mode: str | Sequence[str]) -> tuple[str, ...]:
    """The single modes of ``mode`` (``"cls+mean"`` or ``("cls", "mean")`` -> ``("cls", "mean")``)."""
    parts = tuple(mode.split("+")) if isinstance(mode, str) else tuple(mode)
    return tuple(str(p).strip() for p in parts)


def check_pooling(mode: str | Sequence[str]) -> str:
    """Return ``mode`` in canonical form (``"mean"``, ``"cls+mean"``), or raise a ``ValueError``.

    Accepts a single mode, modes joined by ``+``, or a list/tuple of modes (sentence-transformers'
    form for a concatenation).
    """
    parts = pooling_modes(mode)
    bad = [p for p in parts if p not in POOLING_MODES]
    if not parts or bad:
        known = ", ".join(dict.fromkeys(_PAPER_MODES + POOLING_MODES))
        raise ValueError(
            f"unknown pooling {mode!r}; choose one of {known}, or several "
            "joined by '+' (e.g. 'cls+mean') to concatenate them"
        )
    if len(set(parts)) != len(parts):
        raise ValueError(f"pooling {mode!r} repeats a mode; name each mode once")
    return "+".join(parts)


def pooled_dim(mode: str | Sequence[str], hidden_size: int) -> int:
    """Size of the pooled vector: ``hidden_size`` times the number of concatenated modes."""
    return len(pooling_modes(mode)) * int(hidden_size)


def _first_real(mask: torch.Tensor) -> torch.Tensor:
    """Index of the first real token of each row (0 for an all-padding row)."""
    return mask.to(torch.int32).argmax(dim=1)


def _exclude_prompt(mask: torch.Tensor, prompt_length: int) -> torch.Tensor:
    """A copy of ``mask`` without the first ``prompt_length`` real tokens of each row."""
    positions = torch.arange(mask.size(1), device=mask.device).unsqueeze(0)
    start = _first_real(mask).unsqueeze(1)
    return mask.masked_fill(positions < start + prompt_length, 0)


def cls_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``cls``: each row's first real token (``[CLS]`` for BERT), ``[batch, T, d] -> [batch, d]``."""
    first = _first_real(mask).view(-1, 1, 1).expand(-1, 1, hidden.size(-1))
    return hidden.gather(1, first).squeeze(1)


def max_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``max``: the largest value of each dimension over the real tokens; padding is ``-inf``."""
    masked = hidden.masked_fill(mask.unsqueeze(-1) == 0, float("-inf"))
    pooled = masked.max(dim=1).values
    # A row with no real token would be -inf everywhere; give it zeros instead of infinities.
    return torch.where(torch.isinf(pooled), torch.zeros_like(pooled), pooled)


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``mean``: the sum of the real tokens' vectors over their count (padding weighs 0)."""
    acc = torch.promote_types(hidden.dtype, torch.float32)  # sum in float32 at least
    weights = mask.unsqueeze(-1).to(acc)  # m_t, as [batch, T, 1]
    summed = (hidden.to(acc) * weights).sum(dim=1)  # sum_t m_t H_t
    count = weights.sum(dim=1).clamp(min=1e-9)  # max(sum_t m_t, 1e-9)
    return (summed / count).to(hidden.dtype)


def _sentence_transformers_only(
    hidden: torch.Tensor, mask: torch.Tensor, full_mask: torch.Tensor, mode: str
) -> torch.Tensor:
    """``lasttoken``, ``weightedmean`` and ``mean_sqrt_len_tokens`` (module docstring)."""
    if mode == "lasttoken":
        last = mask.size(1) - 1 - mask.flip(1).to(torch.int32).argmax(dim=1)
        index = last.view(-1, 1, 1).expand(-1, 1, hidden.size(-1))
        keep = mask.to(hidden.dtype).gather(1, last.view(-1, 1)).unsqueeze(-1)
        return (hidden.gather(1, index) * keep).squeeze(1)
    # Sums in float32 at least, so half-precision models do not overflow.
    acc = torch.promote_types(hidden.dtype, torch.float32)
    weights = mask.unsqueeze(-1).to(acc)
    if mode == "weightedmean":
        positions = torch.arange(1, hidden.size(1) + 1, device=hidden.device, dtype=acc)
        offset = _first_real(full_mask).to(acc).view(-1, 1, 1)
        weights = weights * (positions.view(1, -1, 1) - offset)
    summed = (hidden.to(acc) * weights).sum(dim=1)
    total = weights.sum(dim=1).clamp(min=1e-9)
    if mode == "mean_sqrt_len_tokens":
        total = total.sqrt()
    return (summed / total).to(hidden.dtype)


def _one(
    hidden: torch.Tensor, mask: torch.Tensor, full_mask: torch.Tensor, mode: str
) -> torch.Tensor:
    paper = {"cls": cls_pool, "max": max_pool, "mean": mean_pool}
    if mode in paper:
        return paper[mode](hidden, mask)
    return _sentence_transformers_only(hidden, mask, full_mask, mode)


def pool(
    token_embeddings: torch.Tensor,
    attention_mask: torch.Tensor,
    mode: str | Sequence[str] = "mean",
    prompt_length: int = 0,
) -> torch.Tensor:
    """Pool ``[batch, T, d]`` token embeddings into ``[batch, k d]`` sentence embeddings.

    Args:
        token_embeddings: last hidden states, shape ``[batch, T, d]``.
        attention_mask: ``[batch, T]``, 1 for real tokens and 0 for padding.
        mode: one of :data:`POOLING_MODES`, or several joined by ``+`` (``k`` of them; see the
            module docstring for the maths).
        prompt_length: leave the first ``prompt_length`` real tokens (an instruction prompt) out.
    """
    modes = pooling_modes(check_pooling(mode))
    mask = _exclude_prompt(attention_mask, prompt_length) if prompt_length else attention_mask
    parts = [_one(token_embeddings, mask, attention_mask, m) for m in modes]
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)
