"""The pre-training batch stream: lazy, seeded by step, resumable, sharded per rank."""

import numpy as np
import pytest

from ctxsent.training.sampling import StreamBatches


def test_each_epoch_covers_the_full_batches_then_reshuffles_and_resumes_mid_way():
    stream = StreamBatches(units=11, batch_size=3, seed=0, total=7)  # 3 full batches an epoch
    batches = list(stream)
    assert len(batches) == 7 and all(len(batch) == 3 for batch in batches)
    for epoch in (batches[0:3], batches[3:6]):
        seen = [i for batch in epoch for i in batch]
        assert len(set(seen)) == 9 and set(seen) <= set(range(11))  # 2 left for later epochs
    assert batches[3:6] != batches[0:3]
    resumed = StreamBatches(units=11, batch_size=3, seed=0, total=7)
    resumed.skip = 4
    assert len(resumed) == 7 and list(resumed) == batches[4:]  # len: the whole stream


def test_length_grouped_batches_hold_similar_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 31, size=400)
    stream = StreamBatches(400, 8, seed=1, total=50, lengths=lengths, group=10)
    batches = [np.array(batch) for batch in stream]
    assert sorted(np.concatenate(batches).tolist()) == list(range(400))  # one epoch, each once
    spread = np.mean([np.ptp(lengths[batch]) for batch in batches])
    assert spread < 0.5 * np.mean([np.ptp(lengths[rng.permutation(400)[:8]]) for _ in range(50)])


@pytest.mark.parametrize("lengths", [None, np.arange(30) % 7])
def test_ranks_share_every_global_batch_disjointly_and_cover_it(lengths):
    whole = list(StreamBatches(30, 5, seed=3, total=12, lengths=lengths))
    shares = []
    for rank in (0, 1):
        stream = StreamBatches(30, 5, seed=3, total=12, lengths=lengths)
        stream.shard(rank, 2)
        shares.append(list(stream))
    for batch, first, second in zip(whole, *shares, strict=True):
        assert not set(first) & set(second) and sorted(first + second) == sorted(batch)
        assert abs(len(first) - len(second)) <= 1
    with pytest.raises(ValueError, match="fewer than the 6 processes"):
        StreamBatches(30, 5, seed=3, total=12).shard(0, 6)


def test_fewer_units_than_a_batch_make_one_batch_an_epoch():
    stream = StreamBatches(units=3, batch_size=8, seed=0, total=2)
    assert [sorted(batch) for batch in stream] == [[0, 1, 2], [0, 1, 2]]
    with pytest.raises(ValueError, match="no examples"):
        StreamBatches(units=0, batch_size=8, seed=0, total=2)
