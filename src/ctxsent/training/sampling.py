"""Batch samplers that keep padding low on CPU.

Length grouping follows the usual recipe: shuffle, cut into mega-batches of
``group`` batches, sort each mega-batch by length, cut it into batches, and
shuffle the batches. Examples of similar length share a batch while batch
order stays random.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from torch.utils.data import Sampler


class LengthGroupedBatches(Sampler[list[int]]):
    """Random batches of indices whose items have similar ``lengths``.

    The order depends only on ``seed`` and the epoch, which Lightning sets through
    :meth:`set_epoch`, so a resumed run sees the same batches as an uninterrupted one;
    ``skip`` drops the batches of the current epoch already trained before a mid-epoch
    resume. Under ``torch.distributed`` each rank gets its slice of every global batch,
    so ``batch_size`` is the global batch and DDP's averaged gradient equals the
    single-process one.
    """

    def __init__(
        self, lengths: Sequence[int], batch_size: int, seed: int = 0, group: int = 50
    ) -> None:
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.seed = seed
        self.group = group
        self.epoch = 0
        self.skip = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return -(-len(self.lengths) // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        skip, self.skip = self.skip, 0
        rank, world = _rank_and_world()
        rng = np.random.default_rng((self.seed, self.epoch))
        order = rng.permutation(len(self.lengths))
        span = self.batch_size * self.group
        batches = []
        for start in range(0, len(order), span):
            mega = order[start : start + span]
            mega = mega[np.argsort(-self.lengths[mega], kind="stable")]
            batches += [mega[i : i + self.batch_size] for i in range(0, len(mega), self.batch_size)]
        for index in rng.permutation(len(batches))[skip:]:
            yield np.array_split(batches[index], world)[rank].tolist()


def _rank_and_world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Deterministic batches for evaluation: longest first, so padding is minimal."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
