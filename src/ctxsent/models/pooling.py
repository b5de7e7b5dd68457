"""Masked pooling over time: mean, max and their concatenation.

RNN-CNN eq. (1) and Mean-Max AAE eqs. (12)-(14): ``z = [mean_t h_t; max_t h_t]``.
Padding never takes part: the mean divides by the number of real positions and
the max ignores padded positions. A row with no real position pools to zeros.
Pooling runs in fp32 whatever the layers' precision (bf16 autocast included): a
sum of bf16 states keeps 8 bits of mantissa, and the vectors feed scores.
"""

from __future__ import annotations

from typing import Literal

import torch

Pooling = Literal["mean-max", "mean", "max"]
POOLINGS: tuple[str, ...] = ("mean-max", "mean", "max")


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(batch, time, dim)`` and a boolean ``(batch, time)`` mask -> ``(batch, dim)`` fp32."""
    hidden = hidden.float()
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def masked_max(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Maximum over real positions of each row (fp32); zeros for a row without any."""
    hidden = hidden.float()
    filled = hidden.masked_fill(~mask.unsqueeze(-1), torch.finfo(hidden.dtype).min)
    pooled = filled.max(dim=1).values
    return pooled.masked_fill(~mask.any(dim=1, keepdim=True), 0.0)


def pooled_views(hidden: torch.Tensor, mask: torch.Tensor, pooling: Pooling) -> torch.Tensor:
    """The pooled vectors stacked as ``(batch, views, dim)``: [mean, max], [mean] or [max].

    The Mean-Max AAE decoder attends over these views; :func:`pool` concatenates them.
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
    views = []
    if pooling in ("mean-max", "mean"):
        views.append(masked_mean(hidden, mask))
    if pooling in ("mean-max", "max"):
        views.append(masked_max(hidden, mask))
    return torch.stack(views, dim=1)


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: Pooling) -> torch.Tensor:
    """The sentence vector: the views of :func:`pooled_views` concatenated, ``(batch, k*dim)``."""
    return pooled_views(hidden, mask, pooling).flatten(1)
