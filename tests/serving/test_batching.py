"""The micro-batcher merges concurrent requests and answers each with its own results."""

import asyncio
import threading
import time

import pytest

from ctxsent.serving.batching import MicroBatcher


class Recorder:
    """A fake model: doubles numbers, remembers each call, fails on "bad" items."""

    def __init__(self, delay: float = 0.01) -> None:
        self.calls: list[tuple[object, list]] = []
        self.threads: set[int] = set()
        self.delay = delay

    def __call__(self, key, items):
        self.calls.append((key, list(items)))
        self.threads.add(threading.get_ident())
        time.sleep(self.delay)
        if "bad" in items:
            raise ValueError("bad item")
        return [2 * x for x in items]


def run_concurrently(batcher: MicroBatcher, requests: list[tuple[object, list]]) -> list:
    async def main():
        results = await asyncio.gather(
            *(batcher.submit(key, items) for key, items in requests), return_exceptions=True
        )
        await batcher.close()
        return results

    return asyncio.run(main())


def test_concurrent_requests_share_calls_and_get_their_own_results():
    model = Recorder()
    batcher = MicroBatcher(model, max_batch=100, max_wait_ms=20)
    requests = [("k", list(range(10 * i, 10 * i + 3 + i))) for i in range(8)]
    results = run_concurrently(batcher, requests)
    assert results == [[2 * x for x in items] for _, items in requests]
    assert len(model.calls) < len(requests)
    assert batcher.stats.requests == 8 and batcher.stats.calls == len(model.calls)
    assert len(model.threads) == 1  # one worker thread runs the model


def test_calls_respect_max_batch_and_large_requests_run_alone():
    model = Recorder()
    batcher = MicroBatcher(model, max_batch=10, max_wait_ms=20)
    requests = [("k", list(range(4)))] * 5 + [("k", list(range(25)))]
    results = run_concurrently(batcher, requests)
    assert results[-1] == [2 * x for x in range(25)]
    sizes = sorted(len(items) for _, items in model.calls)
    assert sizes[-1] == 25 and all(size <= 10 for size in sizes[:-1])
    assert sum(sizes) == 45


def test_requests_with_different_keys_are_never_merged():
    model = Recorder()
    batcher = MicroBatcher(model, max_batch=100, max_wait_ms=20)
    requests = [("a", [1]), ("b", [2]), ("a", [3]), ("b", [4])]
    assert run_concurrently(batcher, requests) == [[2], [4], [6], [8]]
    assert sorted(key for key, _ in model.calls) == ["a", "b"]


def test_a_failing_request_does_not_fail_its_neighbours():
    model = Recorder()
    batcher = MicroBatcher(model, max_batch=100, max_wait_ms=20)
    results = run_concurrently(batcher, [("k", [1]), ("k", ["bad"]), ("k", [3])])
    assert results[0] == [2] and results[2] == [6]
    assert isinstance(results[1], ValueError)


def test_without_merging_every_request_is_its_own_call():
    model = Recorder(delay=0.0)
    batcher = MicroBatcher(model, max_batch=100, max_wait_ms=20, merge=False)
    results = run_concurrently(batcher, [("k", [i]) for i in range(5)])
    assert results == [[2 * i] for i in range(5)]
    assert [items for _, items in model.calls] == [[i] for i in range(5)]


def test_batcher_keeps_serving_across_event_loops_and_empty_requests():
    model = Recorder(delay=0.0)
    batcher = MicroBatcher(model, max_batch=8, max_wait_ms=1)

    async def once(items):
        return await batcher.submit("k", items)

    assert asyncio.run(once([])) == []
    assert asyncio.run(once([1, 2])) == [2, 4]
    assert asyncio.run(once([3])) == [6]
    with pytest.raises(ValueError):
        asyncio.run(once(["bad"]))
    assert asyncio.run(once([5])) == [10]
