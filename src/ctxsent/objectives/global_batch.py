"""A training step's global batch seen from one process, so that DDP trains as one process.

Under DDP every rank holds its share of each step's global batch
(:mod:`~ctxsent.training.sampling`) and the gradients are averaged over the ranks. Two things
would still make two processes train differently from one on the same global batch:

* **Random draws** (MLM masks, replacement tokens, Cross-Thought's position offsets, ELECTRA's
  sampled tokens). Every rank draws the tensor of the *global* batch's shape from the step's
  generator and keeps its own rows (:func:`uniform`, :func:`randint`), so example ``i`` of a
  step gets the same draws whichever process holds it. In one process the draws are exactly
  those of ``torch.rand(shape)``.
* **Means over examples or tokens.** A rank's mean over its own tokens, averaged over the
  ranks, is not the mean over the global batch unless every rank holds as many.
  :func:`global_mean` divides a rank's sum by the global count (and multiplies by the number
  of ranks, which DDP's gradient average divides out again).

Gradient accumulation splits a step's batch into ``accumulate`` batches that run one after
the other, and the trainer averages their losses: the mean of their means, not the step's
mean unless each holds as many tokens. Before a step's first batch, the engine counts every
part's tokens over all of the step's batches and ranks (an objective's ``step_counts``,
drawing what the forward passes will draw) and calls :func:`begin_accumulated_step`; until
:func:`end_accumulated_step`, :func:`global_mean` divides by those counts for the loss parts
it names.

:func:`share_of` learns the rank's rows and the global batch's shape with one all-gather of a
few integers per step. All of these are collective under DDP: every rank must call them in
the same order, which training steps do.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist


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
