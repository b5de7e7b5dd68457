"""Weight-space ensembling of a fine-tuned model with its start (WiSE-FT; Wortsman et al.,
"Robust fine-tuning of zero-shot models", CVPR 2022, Eq. 1).

``theta(alpha) = (1 - alpha) * theta_start + alpha * theta_fine_tuned``: alpha 1 is the
fine-tuned model, 0 the zero-shot start. The paper finds intermediate alphas keep most of the
fine-tuned accuracy in-domain and most of the zero-shot robustness elsewhere; an AS2 run mixes
at its ``wise_alpha``, chosen on the dev sets of domains it did not train on
(``benchmarks/transfer_matrix.py``). Parameters the start does not have (a freshly drawn
scoring head) stay fine-tuned: a random head is no zero-shot model to fall back on.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn


def copy_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s weights (its ``state_dict``), for :func:`mix_weights` later."""
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


@torch.no_grad()
def mix_weights(model: nn.Module, start: Mapping[str, torch.Tensor], alpha: float) -> nn.Module:
    """Set ``model``'s floating-point tensors to ``(1 - alpha) * start + alpha * model``
    (in place; names or shapes ``start`` lacks are left as they are); returns ``model``."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    for name, tensor in model.state_dict().items():
        initial = start.get(name)
        if initial is not None and initial.shape == tensor.shape and tensor.is_floating_point():
            tensor.lerp_(initial.to(tensor.device, tensor.dtype), 1 - alpha)
    return model
