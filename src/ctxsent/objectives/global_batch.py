"""A training step's global batch seen from one process, so that DDP trains as one process.

Under DDP every rank holds its share of each step's global batch
(:mod:`~ctxsent.training.sampling`) and gradients are averaged over the ranks. Two things
would still make two processes train differently from one:

* **Random draws** (MLM masks, replacement tokens, Cross-Thought's position offsets,
  ELECTRA's samples): every rank draws the tensor of the *global* batch's shape from the
  step's generator and keeps its own rows (:func:`uniform`, :func:`randint`), so example
  ``i`` gets the same draws whichever process holds it; in one process they are exactly
  ``torch.rand(shape)``'s.
* **Means over examples or tokens**: :func:`global_mean` divides a rank's sum by the global
  count (times the number of ranks, which DDP's gradient average divides out again).

Gradient accumulation runs a step's batch as ``accumulate`` batches whose losses the
trainer averages: the mean of their means. Before a step's first batch the engine counts
every part's tokens over all of the step's batches and ranks (an objective's
``step_counts``) and calls :func:`begin_accumulated_step`; until
:func:`end_accumulated_step`, :func:`global_mean` divides by those counts.

:func:`share_of` learns the rank's rows and the global shape with one all-gather of a few
integers per step. All of these are collective under DDP: every rank calls them in the same
order. :class:`StreamBatches` is the stream of global batches, indexed by step, that
pre-training draws its shares from.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import Sampler


@dataclass(frozen=True)
class Share:
    """Rows ``[start, start + rows)`` of a global batch of ``total`` rows whose other
    dimensions are at most ``dims`` (the largest over the ranks)."""

    start: int
    rows: int
    total: int
    dims: tuple[int, ...]

    @classmethod
    def whole(cls, shape: tuple[int, ...]) -> Share:
        return cls(0, shape[0], shape[0], tuple(shape[1:]))


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def share_of(shape: torch.Size | tuple[int, ...], device: torch.device) -> Share:
    """This rank's share of the step's global batch, from its local batch ``shape``."""
    shape = tuple(int(size) for size in shape)
    if not _distributed():
        return Share.whole(shape)
    local = torch.tensor(shape, dtype=torch.long, device=device)
    gathered = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, local)
    sizes = torch.stack(gathered).cpu()
    rank = dist.get_rank()
    return Share(
        start=int(sizes[:rank, 0].sum()),
        rows=shape[0],
        total=int(sizes[:, 0].sum()),
        dims=tuple(int(size) for size in sizes[:, 1:].max(dim=0).values),
    )


def _own_part(full: torch.Tensor, shape: tuple[int, ...], share: Share) -> torch.Tensor:
    rows = full[share.start : share.start + share.rows]
    return rows[(slice(None), *(slice(0, size) for size in shape[1:]))]


def uniform(
    shape: tuple[int, ...], generator: torch.Generator | None, device, share: Share | None = None
) -> torch.Tensor:
    """``torch.rand(shape)`` for this rank's rows of the global batch (module docstring)."""
    share = share or Share.whole(tuple(shape))
    full = torch.rand((share.total, *share.dims), generator=generator, device=device)
    return _own_part(full, tuple(shape), share)


def randint(
    high: int,
    shape: tuple[int, ...],
    generator: torch.Generator | None,
    device,
    share: Share | None = None,
) -> torch.Tensor:
    """``torch.randint(high, shape)`` for this rank's rows of the global batch."""
    share = share or Share.whole(tuple(shape))
    full = torch.randint(high, (share.total, *share.dims), generator=generator, device=device)
    return _own_part(full, tuple(shape), share)


@dataclass(frozen=True)
class _Step:
    """Counts of an accumulated step's batches over all ranks, by loss part, and the factor
    that undoes the averaging over its batches and (DDP) ranks."""

    counts: dict[str, float]
    scale: float


_accumulated: _Step | None = None


def begin_accumulated_step(counts: dict[str, int], accumulate: int, device) -> None:
    """From now on, :func:`global_mean` of a part in ``counts`` (this rank's counts over all
    of the step's ``accumulate`` batches) is a mean over the whole step on every rank."""
    global _accumulated
    names = sorted(counts)
    totals = torch.tensor([float(counts[name]) for name in names], dtype=torch.float64)
    world = 1
    if _distributed():
        totals = totals.to(device)
        dist.all_reduce(totals)
        world = dist.get_world_size()
    _accumulated = _Step(dict(zip(names, totals.tolist(), strict=True)), accumulate * world)


def end_accumulated_step() -> None:
    global _accumulated
    _accumulated = None


def global_mean(
    total: torch.Tensor, count: torch.Tensor | int, part: str | None = None
) -> torch.Tensor:
    """``total / count`` over the global batch: this rank's ``total`` (a sum of per-example
    or per-token losses) over the ``count`` of all ranks, times the number of ranks (DDP
    averages the ranks' gradients). The ranks' values average to the global mean. Inside an
    accumulated step that counted ``part`` (:func:`begin_accumulated_step`), the mean is over
    all of the step's batches: the trainer's average over them gives the step's mean."""
    step = _accumulated
    if part is not None and step is not None and part in step.counts:
        return total * (step.scale / step.counts[part])
    if not _distributed():
        return total / count
    counts = torch.as_tensor(count, dtype=torch.float64, device=total.device).clone()
    dist.all_reduce(counts)
    return total * (dist.get_world_size() / counts).to(total.dtype)


class StreamBatches(Sampler[list[int]]):
    """Steps ``[skip, total)`` of a seeded stream of global batches, each built when its step comes.

    Epoch ``e`` is a random order of the ``units`` (seeded by ``(seed, e)``) cut into
    ``units // batch_size`` full batches (the few left over wait for another epoch). With
    ``lengths``, each mega-batch of ``group`` batches is sorted by length before it is cut and
    the batches shuffled, as :class:`~ctxsent.training.sampling.LengthGroupedBatches` does. A
    batch depends only on the seed and its step, so a run resumed after step ``k`` sets
    ``skip = k`` and sees what an uninterrupted run would; only one epoch's order (4 bytes a
    unit) and the lengths (2 bytes a unit) are held.

    ``batch_size`` is the global batch: :meth:`shard` (called by
    :class:`~ctxsent.training.sampling.FollowTrainer` with the rank and world size) makes each
    rank yield its near-equal, disjoint share. With ``accumulate`` k, ``batch_size`` and
    ``total`` count optimizer steps: the stream holds ``k * total`` batches of
    ``batch_size // k``."""

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
