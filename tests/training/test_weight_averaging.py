"""WiSE-FT: a fine-tuned model's weights mixed with its start's, the mix chosen on dev."""

from __future__ import annotations

import pytest
import torch

from ctxsent.training.weight_averaging import choose_mixing, mix_weights


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


def test_the_mix_is_chosen_by_the_dev_metric_ties_going_to_the_trained_side():
    start = {"0.weight": torch.zeros(2, 3)}
    model = two_layers()
    tuned = model[0].weight.detach().clone()

    def dev(candidate) -> float:  # best where the weights are 0.6 of the tuned ones
        return -abs(float(candidate[0].weight.sum() / tuned.sum()) - 0.6)

    alpha, scores = choose_mixing(model, start, dev, grid=(0.2, 0.6, 1.0))
    assert alpha == 0.6 and set(scores) == {0.2, 0.6, 1.0}
    assert torch.allclose(model[0].weight, 0.6 * tuned)
    flat, _ = choose_mixing(two_layers(), start, lambda candidate: 1.0, grid=(0.5, 0.8))
    assert flat == 0.8
