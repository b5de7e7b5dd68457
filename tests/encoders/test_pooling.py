import pytest
import torch

from ctxsent.models.pooling import masked_max, masked_mean, pool, pooled_views


def test_padding_never_changes_the_pooled_vector():
    torch.manual_seed(0)
    hidden = torch.randn(2, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    polluted = hidden.clone()
    polluted[0, 3:] = 1e6
    for pooling in ("mean-max", "mean", "max"):
        assert torch.equal(pool(hidden, mask, pooling), pool(polluted, mask, pooling))
    assert torch.allclose(masked_mean(hidden, mask)[0], hidden[0, :3].mean(dim=0))
    assert torch.equal(masked_max(hidden, mask)[0], hidden[0, :3].max(dim=0).values)


def test_views_order_and_empty_rows():
    hidden = -torch.ones(1, 3, 2)
    mask = torch.zeros(1, 3, dtype=torch.bool)
    assert torch.equal(pool(hidden, mask, "mean-max"), torch.zeros(1, 4))
    hidden = torch.tensor([[[1.0, 5.0], [3.0, -1.0]]])
    views = pooled_views(hidden, torch.ones(1, 2, dtype=torch.bool), "mean-max")
    assert views.tolist() == [[[2.0, 2.0], [3.0, 5.0]]]  # [mean, max]
    with pytest.raises(ValueError, match="pooling"):
        pool(hidden, torch.ones(1, 2, dtype=torch.bool), "sum")
