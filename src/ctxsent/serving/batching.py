"""An asyncio micro-batcher: concurrent requests share one model call, large ones are split.

Each request submits a list of items (records to score, texts to encode)
under a key (what kind of call, with which options). The batcher waits up to
``max_wait_ms`` after the oldest waiting request, then builds one call: that
request's next chunk, plus later requests with its key that fit whole in
``max_batch`` items. It runs ``run(key, items)`` in its single worker thread
and hands every request back its own slice of the results.

How requests may be grouped depends on the model (:class:`Grouping`). With
``SPLIT``, a request is cut into chunks of at most ``max_batch`` items and at
most ``max_chunk_cost`` by ``cost`` (e.g. characters, so that a chunk of long
texts takes no longer than one of short ones), and after each chunk it goes to
the back of the queue: requests take turns (round-robin), so a small request
behind a large one waits for about one chunk, not for the whole large request;
the chunks' results are put back together in order.

A request whose caller stops waiting (its :meth:`~MicroBatcher.submit` is
cancelled: client gone, deadline passed) is dropped before its next model
call; a call in flight is never interrupted. If a merged call fails, each of
its requests is retried alone, so one bad request cannot fail its neighbours.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
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

    @property
    def remaining(self) -> int:
        return len(self.items) - self.taken


@dataclass
class _Part:
    """Items ``start:stop`` of a job, in one model call."""

    job: _Job
    start: int
    stop: int


class MicroBatcher:
    """Groups concurrent :meth:`submit` calls into calls of ``run`` in one worker thread.

    ``cost`` and ``max_chunk_cost`` bound the chunks of split requests (at least one item
    each); calls that merge whole requests are bounded by ``max_batch`` items only.
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
            _resolve(self._pending.popleft(), error=RuntimeError("the service is shutting down"))
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
                and delay > 0
                and self._queued_items(oldest.key) < self.max_batch
            ):
                await asyncio.sleep(delay)
                continue  # requests may have arrived or been abandoned meanwhile
            parts = self._take_call()
            await self._run_parts(parts)
            head = parts[0].job
            if head.remaining:
                self._pending.append(head)  # its next turn comes after the requests now waiting

    def _drop_abandoned(self) -> None:
        """Forget the queued requests that are answered (a failed chunk) or abandoned."""
        for job in [job for job in self._pending if job.future.done()]:
            self._pending.remove(job)
            self.stats.dropped += job.future.cancelled()

    def _queued_items(self, key: Hashable) -> int:
        return sum(job.remaining for job in self._pending if job.key == key)

    def _take_call(self) -> list[_Part]:
        """The oldest job's next chunk, then later jobs with its key that fit whole.

        The chunk is the whole job unless it is ``SPLIT``. Filling stops at the first job
        with the key that does not fit, so a job that is waiting is never overtaken by ever
        more jobs behind it.
        """
        head = self._pending.popleft()
        count = self._chunk_size(head) if self.grouping is Grouping.SPLIT else head.remaining
        parts, size, skipped = [_take(head, count)], count, deque()
        while self.grouping is not Grouping.ALONE and self._pending:
            job = self._pending.popleft()
            if job.key != head.key:
                skipped.append(job)
            elif size + job.remaining <= self.max_batch:
                size += job.remaining
                parts.append(_take(job, job.remaining))
            else:
                skipped.append(job)
                break
        self._pending.extendleft(reversed(skipped))
        return parts

    def _chunk_size(self, job: _Job) -> int:
        """Items in the job's next chunk: at most ``max_batch``, and at least one but at
        most ``max_chunk_cost`` by ``cost``."""
        items = job.items[job.taken : job.taken + self.max_batch]
        if self.cost is None:
            return len(items)
        totals = accumulate(self.cost(item) for item in items)
        return max(1, sum(1 for _ in takewhile(lambda t: t <= self.max_chunk_cost, totals)))

    async def _run_parts(self, parts: list[_Part]) -> None:
        parts = [part for part in parts if not part.job.future.done()]
        if not parts:
            return
        items = [item for part in parts for item in part.job.items[part.start : part.stop]]
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(self._worker, self.run, parts[0].job.key, items)
        except Exception as err:
            if len(parts) == 1:
                _resolve(parts[0].job, error=err)
                return
            for part in parts:  # find the request that failed; the others still get answers
                await self._run_parts([part])
            return
        self.stats.calls += 1
        self.stats.items += len(items)
        self.stats.largest_call = max(self.stats.largest_call, len(items))
        offset = 0
        for part in parts:
            job, size = part.job, part.stop - part.start
            job.results.extend(results[offset : offset + size])
            offset += size
            if len(job.results) == len(job.items):
                self.stats.requests += _resolve(job, result=job.results)


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
