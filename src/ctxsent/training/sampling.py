"""Batch samplers: length-grouped batches (low padding on CPU), whole-question batches,
and a fixed stream of batches indexed by training step (pre-training: SSP, Cross-Thought,
RNN-CNN, Mean-Max AAE), :class:`StreamBatches`, which builds each batch lazily and shards it
per DDP rank (:class:`FollowTrainer` keeps it at the trainer's step).

Length grouping follows the usual recipe: shuffle, cut into mega-batches of
``group`` batches, sort each mega-batch by length, cut it into batches, and
shuffle the batches. Examples of similar length share a batch while batch
order stays random.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from lightning.pytorch.callbacks import Callback
from torch.utils.data import Sampler


def batches_done_this_epoch(checkpoint: dict) -> int:
    """Batches of its epoch a Lightning checkpoint was taken after (0 at the epoch's end).

    A resumed run sets its sampler's ``skip`` to this, since Lightning restarts the
    epoch's DataLoader from its first batch.
    """
    progress = checkpoint["loops"]["fit_loop"]["epoch_loop.batch_progress"]
    return 0 if progress["is_last_batch"] else progress["current"]["ready"]


class _EpochBatches(Sampler[list[int]]):
    """Batches that depend only on ``seed`` and the epoch, for resumable training.

    :class:`FollowTrainer` sets the epoch at each epoch start (Lightning only sets the
    epoch of a DataLoader's sampler, not of its batch sampler), so a resumed run sees
    the same batches as an uninterrupted one; ``skip`` drops the batches of the current epoch
    already trained before a mid-epoch resume. A batch is a list of units (lists of
    indices kept together); under ``torch.distributed`` each rank gets its share of
    every global batch's units, so ``batch_size`` is the global batch and DDP's averaged
    gradient equals the single-process one. A batch with fewer units than ranks (an
    epoch's short last batch) is skipped by every rank alike.
    """

    def __init__(self, units: int, units_per_batch: int, seed: int) -> None:
        if units_per_batch < 1:
            raise ValueError("a batch must hold at least one item")
        self.units = units
        self.units_per_batch = units_per_batch
        self.seed = seed
        self.epoch = 0
        self.skip = 0

    def __len__(self) -> int:
        return -(-self.units // self.units_per_batch)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def start_epoch(self, trainer) -> None:
        self.set_epoch(trainer.current_epoch)

    def resume(self, checkpoint: dict) -> None:
        self.skip = batches_done_this_epoch(checkpoint)

    def _batches(self, rng: np.random.Generator) -> list[list[list[int]]]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[list[int]]:
        skip, self.skip = self.skip, 0
        rank, world = _rank_and_world()
        if self.units_per_batch < world:
            raise ValueError(
                f"a batch holds {self.units_per_batch} items, fewer than the {world} "
                "processes: raise the batch size"
            )
        batches = self._batches(np.random.default_rng((self.seed, self.epoch)))
        for units in batches[skip:]:
            if len(units) < world:
                continue
            share = np.array_split(np.arange(len(units)), world)[rank]
            yield [index for unit in share for index in units[unit]]


class LengthGroupedBatches(_EpochBatches):
    """Random batches of indices whose items have similar ``lengths``."""

    def __init__(
        self, lengths: Sequence[int], batch_size: int, seed: int = 0, group: int = 50
    ) -> None:
        super().__init__(len(lengths), batch_size, seed)
        self.lengths = np.asarray(lengths)
        self.group = group

    def _batches(self, rng: np.random.Generator) -> list[list[list[int]]]:
        order = rng.permutation(self.units)
        size = self.units_per_batch
        batches = []
        for start in range(0, len(order), size * self.group):
            mega = order[start : start + size * self.group]
            mega = mega[np.argsort(-self.lengths[mega], kind="stable")]
            batches += [mega[i : i + size] for i in range(0, len(mega), size)]
        return [[[int(i)] for i in batches[b]] for b in rng.permutation(len(batches))]


class QuestionBatches(_EpochBatches):
    """Random batches of whole questions (all of a question's candidates), for listwise losses.

    ``groups`` holds each question's indices. A batch takes ``questions_per_batch``
    questions in a random order; under ``torch.distributed`` questions are not split
    across ranks.
    """

    def __init__(
        self, groups: Sequence[Sequence[int]], questions_per_batch: int, seed: int = 0
    ) -> None:
        super().__init__(len(groups), questions_per_batch, seed)
        self.groups = [list(group) for group in groups]

    def _batches(self, rng: np.random.Generator) -> list[list[list[int]]]:
        order = rng.permutation(self.units)
        size = self.units_per_batch
        return [
            [self.groups[q] for q in order[start : start + size]]
            for start in range(0, len(order), size)
        ]


def _rank_and_world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class StreamBatches(Sampler[list[int]]):
    """Steps ``[skip, total)`` of a seeded stream of global batches, each built when its step comes.

    The stream chains data epochs: epoch ``e`` is a random order of the ``units`` (seeded by
    ``(seed, e)``) cut into ``units // batch_size`` full batches (the few left over wait for
    another epoch, a different few each time). With ``lengths``, each mega-batch of ``group``
    batches is sorted by length before it is cut and the batches are shuffled, as in
    :class:`LengthGroupedBatches`. A batch depends only on the seed and its step, so a run
    resumed after step ``k`` sets ``skip = k`` and sees exactly what an uninterrupted run
    would. Nothing the size of the data is held but one epoch's order (4 bytes a unit) and
    the lengths (2 bytes a unit): no list of all batches is ever built.

    ``batch_size`` is the global batch: :meth:`shard` (:class:`FollowTrainer` calls it with
    the trainer's global rank and world size) makes each rank yield its own near-equal
    share of every batch, so the ranks' shares are disjoint and cover the batch. With
    ``accumulate`` k, ``batch_size`` and ``total`` count optimizer steps: the stream holds
    ``k * total`` batches of ``batch_size // k``, k for each step (gradient accumulation).
    """

    def __init__(
        self,
        units: int,
        batch_size: int,
        seed: int,
        total: int,
        lengths: Sequence[int] | np.ndarray | None = None,
        group: int = 50,
        accumulate: int = 1,
    ) -> None:
        if units < 1:
            raise ValueError("no examples to draw batches from")
        if batch_size < accumulate:
            raise ValueError("a batch must hold at least one item per accumulated part")
        self.units, self.seed, self.group = units, seed, group
        self.accumulate, self.total = accumulate, total * accumulate
        self.batch_size = min(batch_size // accumulate, units)
        self.per_epoch = units // self.batch_size
        self.lengths = None
        if lengths is not None:
            lengths = np.asarray(lengths)
            self.lengths = lengths.astype(np.uint16 if lengths.max() < 2**16 else np.int64)
        self.skip, self.rank, self.world = 0, 0, 1
        self._cached: tuple[int, np.ndarray, np.ndarray | None] = (-1, np.empty(0), None)

    def shard(self, rank: int, world: int) -> None:
        """Yield rank ``rank``'s share of each batch, of ``world`` ranks."""
        if world > self.batch_size:
            raise ValueError(
                f"a batch holds {self.batch_size} items, fewer than the {world} processes: "
                "raise the batch size"
            )
        self.rank, self.world = rank, world

    def start_epoch(self, trainer) -> None:
        self.skip = trainer.global_step * self.accumulate

    def resume(self, checkpoint: dict) -> None:
        self.skip = checkpoint["global_step"] * self.accumulate

    def __len__(self) -> int:
        """The whole stream, skipped steps included: Lightning counts a resumed epoch's
        batches on from its checkpoint's, and ends the epoch at this length (ending it
        early would step the optimizer on a partial accumulation)."""
        return self.total

    def _epoch(self, epoch: int) -> tuple[np.ndarray, np.ndarray | None]:
        if self._cached[0] != epoch:
            rng = np.random.default_rng((self.seed, epoch))
            order = rng.permutation(self.units).astype(np.int32 if self.units < 2**31 else np.int64)
            batches = None if self.lengths is None else rng.permutation(self.per_epoch)
            self._cached = (epoch, order, batches)
        return self._cached[1], self._cached[2]

    def batch(self, step: int) -> np.ndarray:
        """The global batch of ``step`` (unit indices)."""
        epoch, index = divmod(step, self.per_epoch)
        order, batches = self._epoch(epoch)
        size = self.batch_size
        if batches is None:
            return order[index * size : (index + 1) * size]
        mega, position = divmod(int(batches[index]), self.group)
        start = mega * size * self.group
        members = order[start : min(start + size * self.group, self.per_epoch * size)]
        members = members[np.argsort(-self.lengths[members].astype(np.int64), kind="stable")]
        return members[position * size : (position + 1) * size]

    def __iter__(self) -> Iterator[list[int]]:
        for step in range(self.skip, self.total):
            yield np.array_split(self.batch(step), self.world)[self.rank].tolist()

    def step_parts(self, step: int) -> list[list[int]]:
        """This rank's share of each of optimizer step ``step``'s ``accumulate`` batches."""
        first = step * self.accumulate
        return [
            np.array_split(self.batch(first + part), self.world)[self.rank].tolist()
            for part in range(self.accumulate)
        ]


class FollowTrainer(Callback):
    """Keeps a batch sampler at its trainer's rank, epoch and step.

    At setup a :class:`StreamBatches` is sharded by the trainer's global rank and world size
    (epoch batches shard themselves). When a checkpoint is restored, the sampler skips what
    the run trained before (``resume``); whenever Lightning starts an epoch, the sampler
    takes the trainer's epoch or, for a stream, its global step (after a resumed epoch ends,
    Lightning may start another one before ``max_steps``).
    """

    def __init__(self, batches: StreamBatches | _EpochBatches) -> None:
        self.batches = batches

    def setup(self, trainer, pl_module, stage: str) -> None:
        if isinstance(self.batches, StreamBatches):
            self.batches.shard(trainer.global_rank, trainer.world_size)

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        self.batches.resume(checkpoint)

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.batches.start_epoch(trainer)
