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
    :meth:`set_epoch`, so a resumed run sees the same batches as an uninterrupted one.
    """

    def __init__(
        self, lengths: Sequence[int], batch_size: int, seed: int = 0, group: int = 50
    ) -> None:
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.seed = seed
        self.group = group
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return -(-len(self.lengths) // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        rng = np.random.default_rng((self.seed, self.epoch))
        order = rng.permutation(len(self.lengths))
        span = self.batch_size * self.group
        batches = []
        for start in range(0, len(order), span):
            mega = order[start : start + span]
            mega = mega[np.argsort(-self.lengths[mega], kind="stable")]
            batches += [mega[i : i + self.batch_size] for i in range(0, len(mega), self.batch_size)]
        for index in rng.permutation(len(batches)):
            yield batches[index].tolist()


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Deterministic batches for evaluation: longest first, so padding is minimal."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
