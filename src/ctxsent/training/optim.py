"""Optimiser pieces every trainer shares: weight-decay groups and the triangular schedule.

Triangular learning rate (Smith 2017), as the SSP and Cascade papers use: a
linear ramp over the warm-up steps, then linear decay to 0 at the last step.
Biases and normalisation weights get no weight decay (BERT's recipe).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import torch
from torch import nn


def triangular(step: int, warmup: int, total: int) -> float:
    """Learning-rate factor: linear ramp over ``warmup`` steps, then linear decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def triangular_schedule(
    optimizer: torch.optim.Optimizer, warmup: int, total: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """A per-step scheduler applying :func:`triangular` to every parameter group."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: triangular(step, warmup, total)
    )


def no_weight_decay(name: str, parameter: nn.Parameter) -> bool:
    """Biases and normalisation weights are not decayed."""
    return parameter.ndim < 2 or "norm" in name.lower()


def decay_groups(
    named_parameters: Iterable[tuple[str, nn.Parameter]],
    weight_decay: float,
    heads: Collection[str] = (),
    head_lr: float | None = None,
) -> list[dict]:
    """AdamW parameter groups: ``weight_decay`` for weights, 0 for biases and norms.

    Parameters named in ``heads`` (freshly initialised scoring heads) get their own
    groups with learning rate ``head_lr``; the others use the optimizer's.
    """
    groups: dict[tuple[bool, bool], list[nn.Parameter]] = {}
    for name, parameter in named_parameters:
        key = (name in heads, no_weight_decay(name, parameter))
        groups.setdefault(key, []).append(parameter)
    return [
        {
            "params": params,
            "weight_decay": 0.0 if no_decay else weight_decay,
            **({"lr": head_lr} if head and head_lr is not None else {}),
        }
        for (head, no_decay), params in sorted(groups.items())
    ]
