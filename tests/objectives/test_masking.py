import pytest
import torch

from ctxsent.objectives.masking import IGNORE, mask_tokens, maskable_positions, masked_lm_loss


def _batch(rows=64, width=40):
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 100, (rows, width), generator=generator)
    ids[:, 0] = 1  # [CLS]
    ids[:, -1] = 2  # [SEP]
    attention = torch.ones_like(ids)
    attention[:, 30:] = 0
    return ids, attention


def test_only_real_non_special_tokens_are_masked_and_labelled():
    ids, attention = _batch()
    maskable = maskable_positions(ids, attention, special_ids=[1, 2, 0])
    masked, labels = mask_tokens(
        ids, maskable, mask_id=3, vocab_size=100, generator=torch.Generator().manual_seed(1)
    )
    picked = labels != IGNORE
    assert not (picked & ~maskable).any()
    assert torch.equal(masked[~picked], ids[~picked])
    assert torch.equal(labels[picked], ids[picked])
    rate = picked.sum() / maskable.sum()
    assert 0.12 < rate < 0.18
    share_masked = (masked[picked] == 3).float().mean()
    assert 0.7 < share_masked < 0.9


def test_same_generator_seed_gives_same_masks():
    ids, attention = _batch()
    maskable = maskable_positions(ids, attention, special_ids=[1, 2])
    first = mask_tokens(ids, maskable, 3, 100, generator=torch.Generator().manual_seed(7))
    second = mask_tokens(ids, maskable, 3, 100, generator=torch.Generator().manual_seed(7))
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))


def test_tiny_batch_always_gets_one_target():
    ids = torch.tensor([[1, 50, 2]])
    maskable = maskable_positions(ids, torch.ones_like(ids), special_ids=[1, 2])
    _, labels = mask_tokens(
        ids, maskable, 3, 100, probability=0.01, generator=torch.Generator().manual_seed(0)
    )
    assert labels.tolist() == [[IGNORE, 50, IGNORE]]


def test_loss_projects_only_masked_positions():
    seen = []

    def head(states):
        seen.append(states.shape)
        return torch.zeros(states.shape[0], 10)

    hidden = torch.randn(2, 5, 4)
    labels = torch.full((2, 5), IGNORE)
    labels[0, 1], labels[1, 3] = 4, 7
    loss = masked_lm_loss(hidden, labels, head)
    assert seen == [torch.Size([2, 4])]
    assert loss.item() == pytest.approx(torch.log(torch.tensor(10.0)).item())
