"""An asyncio micro-batcher: concurrent requests share one model call, large ones are split.

Each request submits items (records to score, texts to encode) under a key (the kind of
call and its options). The batcher waits up to ``max_wait_ms`` after the oldest waiting
request, then builds one call: that request's next chunk plus later requests with its key
that fit whole in the rest of the chunk, run as ``run(key, items)`` in its one worker
thread; every request gets its own slice of the results.

A chunk holds at most ``max_batch`` items and ``max_chunk_cost`` by ``cost`` (characters:
a chunk of long texts takes no longer than one of short ones; one item at least), so a
request waits behind at most one chunk of another. With ``SPLIT`` (:class:`Grouping`) a
request is cut into chunks and goes to the back of the queue after each: requests take
turns, and a small one behind a large one waits about one chunk. A request that cannot be
split (``WHOLE``, ``ALONE``) takes turns the same way when ``run`` returns *steps*: an
iterator that yields each piece's cost and returns the results
(:meth:`~ctxsent.models.cascade.CascadeRanker.predict_steps`); a turn runs pieces worth one
chunk.

A request whose caller stops waiting (its :meth:`~MicroBatcher.submit` cancelled) is
dropped before its next chunk or turn; a piece in flight is never interrupted. If a merged
call fails, each of its requests is retried alone, so one bad request cannot fail others.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from itertools import accumulate, takewhile
from typing import Any

RunFn = Callable[[Hashable, list[Any]], Sequence[Any]]


class Grouping(Enum):
    """Which items of different requests, and of one request, may share or split model calls."""

    #: Every item is computed on its own (a cross-encoder's score, an embedding): requests
    #: share calls and a large request is split into chunks.
    SPLIT = "split"
    #: An item depends on the other items of its request (a cascade prunes each question's
    #: candidates together): requests share calls but are never split.
    WHOLE = "whole"
    #: An item depends on every item of its call (BM25's IDF over the scored candidates):
    #: every request is its own call, never split.
    ALONE = "alone"


@dataclass
class BatchStats:
    """Counters for ``/health`` and the tests."""

    #: Model calls run.
    calls: int = 0
    #: Requests answered with results.
    requests: int = 0
    #: Items computed.
    items: int = 0
    #: Most items in one call.
    largest_call: int = 0
    #: Requests whose caller stopped waiting before all their items were computed.
    dropped: int = 0


@dataclass(eq=False)
class _Job:
    key: Hashable
    items: list[Any]
    future: asyncio.Future
    arrived: float = field(default_factory=time.monotonic)
    #: Items handed to model calls so far; they are computed in order.
    taken: int = 0
    results: list[Any] = field(default_factory=list)
    #: The call this job heads whose steps are not finished (it waits for its next turn).
    call: _Call | None = None
    #: Never merged with other requests again (a merged call with it failed).
    alone: bool = False

    @property
    def remaining(self) -> int:
        return len(self.items) - self.taken


@dataclass
class _Part:
    """Items ``start:stop`` of a job, in one model call."""

    job: _Job
    start: int
    stop: int


@dataclass(eq=False)
class _Call:
    """One model call: its parts, then what ``run`` gave back (results, or steps left)."""

    parts: list[_Part]
    steps: Iterator[float] | None = None
    results: Sequence[Any] | None = None

    @property
    def abandoned(self) -> bool:
        return all(part.job.future.done() for part in self.parts)


class MicroBatcher:
    """Groups concurrent :meth:`submit` calls into calls of ``run`` in one worker thread.

    ``cost`` and ``max_chunk_cost`` bound every call (at least one item) and every turn of
    a request that ``run`` computes in steps (module docstring).
    """

    def __init__(
        self,
        run: RunFn,
        max_batch: int = 256,
        max_wait_ms: float = 5.0,
        grouping: Grouping = Grouping.SPLIT,
        cost: Callable[[Any], int] | None = None,
        max_chunk_cost: int = 0,
    ) -> None:
        self.run = run
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000
        self.grouping = grouping
        self.cost = cost
        self.max_chunk_cost = max_chunk_cost
        self.stats = BatchStats()
        self._pending: deque[_Job] = deque()
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxsent-model")

    @property
    def waiting(self) -> int:
        """Requests in the queue (not counting those in the model call now running)."""
        return len(self._pending)

    async def submit(self, key: Hashable, items: list[Any]) -> list[Any]:
        """Results of ``run`` for ``items``, computed together with concurrent requests.

        Cancelling the caller drops the request's items that no model call has taken yet.
        """
        if not items:
            return []
        self._ensure_running()
        job = _Job(key, list(items), asyncio.get_running_loop().create_future())
        self._pending.append(job)
        self._wakeup.set()
        return await job.future

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._wakeup = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._serve())

    async def close(self) -> None:
        """Stop the batching loop and the worker thread; waiting requests get an error."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        while self._pending:
            job = self._pending.popleft()
            for waiting in [part.job for part in job.call.parts] if job.call else [job]:
                _resolve(waiting, error=RuntimeError("the service is shutting down"))
        self._worker.shutdown(wait=True)

    async def _serve(self) -> None:
        while True:
            self._drop_abandoned()
            if not self._pending:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            oldest = self._pending[0]
            delay = oldest.arrived + self.max_wait - time.monotonic()
            if (
                self.grouping is not Grouping.ALONE
                and oldest.call is None
                and delay > 0
                and self._queued_items(oldest.key) < self.max_batch
            ):
                await asyncio.sleep(delay)
                continue  # requests may have arrived or been abandoned meanwhile
            await self._run_call(self._take_call())

    def _drop_abandoned(self) -> None:
        """Forget the queued requests that are answered (a failed chunk) or abandoned; the
        steps left of a call none of whose callers waits are closed unrun."""
        for job in list(self._pending):
            if job.call is None and job.future.done():
                self._pending.remove(job)
                self.stats.dropped += job.future.cancelled()
            elif job.call is not None and job.call.abandoned:
                self._pending.remove(job)
                job.call.steps.close()
                self.stats.dropped += sum(p.job.future.cancelled() for p in job.call.parts)

    def _queued_items(self, key: Hashable) -> int:
        return sum(job.remaining for job in self._pending if job.key == key)

    def _take_call(self) -> _Call:
        """The oldest job's next turn: the rest of its call in steps, or its next chunk
        followed by later jobs with its key that fit whole in the chunk.

        The chunk is the whole job unless it is ``SPLIT``. Filling stops at the first job
        with the key that does not fit whole, so a job that is waiting is never overtaken
        by ever more jobs behind it.
        """
        head = self._pending.popleft()
        if head.call is not None:
            call, head.call = head.call, None
            return call
        split = self.grouping is Grouping.SPLIT
        count = self._fitting(head, self.max_batch, self._budget) if split else head.remaining
        count = max(1, count)
        parts, skipped = [_take(head, count)], deque()
        size, spent = count, self._cost_of(parts[0])
        while self.grouping is not Grouping.ALONE and not head.alone and self._pending:
            job = self._pending.popleft()
            if job.key != head.key or job.call is not None or job.alone:
                skipped.append(job)
                continue
            count = job.remaining
            if self._fitting(job, self.max_batch - size, self._budget - spent) < count:
                skipped.append(job)
                break
            parts.append(_take(job, count))
            size, spent = size + count, spent + self._cost_of(parts[-1])
        self._pending.extendleft(reversed(skipped))
        return _Call(parts)

    @property
    def _budget(self) -> float:
        return self.max_chunk_cost if self.cost is not None else math.inf

    def _cost_of(self, part: _Part) -> float:
        if self.cost is None:
            return 0
        return sum(self.cost(item) for item in part.job.items[part.start : part.stop])

    def _fitting(self, job: _Job, max_items: int, max_cost: float) -> int:
        """How many of the job's next items fit in ``max_items`` and ``max_cost``."""
        items = job.items[job.taken : job.taken + max(0, max_items)]
        if self.cost is None:
            return len(items)
        totals = accumulate(self.cost(item) for item in items)
        return sum(1 for _ in takewhile(lambda total: total <= max_cost, totals))

    def _turn(self, call: _Call) -> None:
        """In the worker thread: start the call, or go on with its steps, for one turn."""
        if call.steps is None:
            items = [item for part in call.parts for item in part.job.items[part.start : part.stop]]
            answer = self.run(call.parts[0].job.key, items)
            if not isinstance(answer, Iterator):
                call.results = answer
                return
            call.steps = answer
        spent = 0.0
        while True:
            try:
                spent += next(call.steps)
            except StopIteration as stop:
                call.steps, call.results = None, stop.value
                return
            if spent >= self._budget:
                return

    async def _run_call(self, call: _Call) -> None:
        """Run one turn of ``call``; answer its requests or queue what is left of them."""
        head = call.parts[0].job
        if call.steps is None:
            call.parts = [part for part in call.parts if not part.job.future.done()]
            if not call.parts:
                self._pending.append(head)  # abandoned: dropped, and counted, next
                return
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._worker, self._turn, call)
        except Exception as err:
            if len(call.parts) == 1:
                _resolve(call.parts[0].job, error=err)
                return
            for part in reversed(call.parts):  # find the request that failed: each alone
                part.job.taken, part.job.alone = part.start, True
                if part.job in self._pending:
                    self._pending.remove(part.job)
                self._pending.appendleft(part.job)
            return
        if call.steps is not None:
            head.call = call
            self._pending.append(head)  # its next turn comes after the requests now waiting
            return
        items = sum(part.stop - part.start for part in call.parts)
        self.stats.calls += 1
        self.stats.items += items
        self.stats.largest_call = max(self.stats.largest_call, items)
        offset = 0
        for part in call.parts:
            job, size = part.job, part.stop - part.start
            job.results.extend(call.results[offset : offset + size])
            offset += size
            if len(job.results) == len(job.items):
                self.stats.requests += _resolve(job, result=job.results)
        if head.remaining:
            self._pending.append(head)  # its next chunk comes after the requests now waiting


def _take(job: _Job, count: int) -> _Part:
    """The job's next ``count`` items."""
    job.taken += count
    return _Part(job, job.taken - count, job.taken)


def _resolve(job: _Job, result: Any = None, error: Exception | None = None) -> bool:
    """Answer ``job`` unless its caller stopped waiting; whether it was answered."""
    if job.future.done():
        return False
    if error is not None:
        job.future.set_exception(error)
    else:
        job.future.set_result(result)
    return True
