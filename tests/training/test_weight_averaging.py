"""WiSE-FT: a fine-tuned model's weights mixed with its start's."""

from __future__ import annotations

import pytest
import torch

from ctxsent.training.weight_averaging import mix_weights


def two_layers() -> torch.nn.Sequential:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))


def test_mixing_interpolates_shared_weights_and_keeps_new_ones():
    start = {"0.weight": torch.zeros(2, 3), "0.bias": torch.ones(2)}  # no "1.*": a new head
    model = two_layers()
    tuned = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    mix_weights(model, start, 0.25)
    assert torch.allclose(model[0].weight, 0.25 * tuned["0.weight"])
    assert torch.allclose(model[0].bias, 0.75 + 0.25 * tuned["0.bias"])
    assert torch.equal(model[1].weight, tuned["1.weight"])
    assert torch.equal(mix_weights(two_layers(), start, 1.0)[0].weight, tuned["0.weight"])
    with pytest.raises(ValueError, match="alpha"):
        mix_weights(model, start, 1.5)
