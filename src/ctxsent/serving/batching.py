"""An asyncio micro-batcher: concurrent requests share one model call.

Each request submits a list of items (records to score, texts to encode)
under a key (what kind of call, with which options). The batcher waits up to
``max_wait_ms`` after the oldest waiting request, gathers requests with that
request's key until ``max_batch`` items, runs ``run(key, items)`` once in its
single worker thread and hands every request back its own slice of the
results. Requests with other keys wait for the next round, in arrival order.
A request larger than ``max_batch`` runs alone, never split.

If a merged call fails, each of its requests is retried alone, so one bad
request cannot fail its neighbours.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

RunFn = Callable[[Hashable, list[Any]], Sequence[Any]]


@dataclass
class BatchStats:
    """Counters for ``/health`` and the tests: model calls, requests and items served."""

    calls: int = 0
    requests: int = 0
    items: int = 0
    largest_call: int = 0


@dataclass
class _Job:
    key: Hashable
    items: list[Any]
    future: asyncio.Future
    arrived: float = field(default_factory=time.monotonic)


class MicroBatcher:
    """Groups concurrent :meth:`submit` calls into calls of ``run`` in one worker thread.

    ``merge=False`` runs every request on its own (for models whose scores depend
    on the other records of a call, like BM25's IDF over the scored candidates).
    """

    def __init__(
        self, run: RunFn, max_batch: int = 256, max_wait_ms: float = 5.0, merge: bool = True
    ) -> None:
        self.run = run
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000
        self.merge = merge
        self.stats = BatchStats()
        self._pending: deque[_Job] = deque()
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxsent-model")

    async def submit(self, key: Hashable, items: list[Any]) -> list[Any]:
        """Results of ``run`` for ``items``, computed together with concurrent requests."""
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
            if not job.future.done():
                job.future.set_exception(RuntimeError("the service is shutting down"))
        self._worker.shutdown(wait=True)

    async def _serve(self) -> None:
        while True:
            if not self._pending:
                self._wakeup.clear()
                await self._wakeup.wait()
            oldest = self._pending[0]
            delay = oldest.arrived + self.max_wait - time.monotonic()
            if self.merge and delay > 0 and self._queued_items(oldest.key) < self.max_batch:
                await asyncio.sleep(delay)
            await self._run_jobs(self._take_batch())

    def _queued_items(self, key: Hashable) -> int:
        return sum(len(job.items) for job in self._pending if job.key == key)

    def _take_batch(self) -> list[_Job]:
        """The oldest job plus later jobs with its key, up to ``max_batch`` items."""
        first = self._pending.popleft()
        batch, size, skipped = [first], len(first.items), deque()
        while self.merge and self._pending:
            job = self._pending.popleft()
            if job.key != first.key:
                skipped.append(job)
            elif size + len(job.items) <= self.max_batch:
                batch.append(job)
                size += len(job.items)
            else:
                skipped.append(job)
                break
        self._pending.extendleft(reversed(skipped))
        return batch

    async def _run_jobs(self, jobs: list[_Job]) -> None:
        jobs = [job for job in jobs if not job.future.cancelled()]
        if not jobs:
            return
        loop = asyncio.get_running_loop()
        items = [item for job in jobs for item in job.items]
        try:
            results = await loop.run_in_executor(self._worker, self.run, jobs[0].key, items)
        except Exception as err:
            if len(jobs) == 1:
                _resolve(jobs[0], error=err)
                return
            for job in jobs:  # find the request that failed; the others still get answers
                await self._run_jobs([job])
            return
        self.stats.calls += 1
        self.stats.requests += len(jobs)
        self.stats.items += len(items)
        self.stats.largest_call = max(self.stats.largest_call, len(items))
        start = 0
        for job in jobs:
            _resolve(job, result=list(results[start : start + len(job.items)]))
            start += len(job.items)


def _resolve(job: _Job, result: Any = None, error: Exception | None = None) -> None:
    if job.future.done():  # the client went away
        return
    if error is not None:
        job.future.set_exception(error)
    else:
        job.future.set_result(result)
