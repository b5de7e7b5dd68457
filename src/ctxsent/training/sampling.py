"""Batch samplers: length-grouped batches (low padding on CPU), whole-question batches,
and a fixed stream of batches indexed by training step (pre-training: SSP, Cross-Thought,
RNN-CNN, Mean-Max AAE), :class:`~ctxsent.objectives.global_batch.StreamBatches`, which builds
each batch lazily and shards it per DDP rank (:class:`FollowTrainer` keeps it at the trainer's
step).

Length grouping follows the usual recipe: shuffle, cut into mega-batches of
``group`` batches, sort each mega-batch by length, cut it into batches, and
shuffle the batches. Examples of similar length share a batch while batch
order stays random.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
from lightning.pytorch.callbacks import Callback
from torch.utils.data import DataLoader, Sampler

from ctxsent.objectives.global_batch import StreamBatches
from ctxsent.training.settings import warn_uneven_accumulation


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


def stream_loader(
    dataset: Sequence, config, total: int, what: str, collate: Callable,
    lengths: Sequence[int] | None = None,
) -> DataLoader:  # fmt: skip
    """A pre-training run's loader: ``total`` steps of :class:`StreamBatches` of ``dataset``
    (``config``'s batch size, seed and accumulation; grouped by ``lengths`` when given);
    warns when a batch of ``what`` does not split evenly."""
    warn_uneven_accumulation(config.batch_size, config.accumulate, what)
    batches = StreamBatches(
        len(dataset), config.batch_size, config.seed, total, lengths, accumulate=config.accumulate
    )
    return DataLoader(dataset, batch_sampler=batches, collate_fn=collate)
