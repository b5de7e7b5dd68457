"""The micro-batcher merges concurrent requests, splits large ones into chunks that take
turns with the others, drops abandoned ones, and answers each with its own results."""

import asyncio
import threading
import time

import pytest

from ctxsent.serving.batching import Grouping, MicroBatcher
from polling import until


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


class Gate:
    """A fake model (doubles numbers) whose first call blocks until ``release`` is set, so a
    test decides what is queued while it runs."""

    def __init__(self) -> None:
        self.calls: list[list] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, key, items):
        self.calls.append(list(items))
        self.started.set()
        self.release.wait(timeout=120)  # only ends a hang
        return [2 * x for x in items]


class Steps(Gate):
    """A fake model computed in steps (as a cascade is): one step per item, each costing
    1 and recorded; its first step blocks until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[object] = []

    def __call__(self, key, items):
        self.calls.append(list(items))
        for item in items:
            self.started.set()
            self.release.wait(timeout=120)  # only ends a hang
            self.steps.append(item)
            yield 1
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


def test_calls_respect_max_batch_and_large_requests_are_split_in_order():
    model = Recorder()
    batcher = MicroBatcher(model, max_batch=10, max_wait_ms=20)
    requests = [("k", list(range(4)))] * 5 + [("k", list(range(100, 125)))]
    results = run_concurrently(batcher, requests)
    assert results == [[2 * x for x in items] for _, items in requests]
    sizes = [len(items) for _, items in model.calls]
    assert max(sizes) <= 10 and sum(sizes) == 45
    assert batcher.stats.requests == 6 and batcher.stats.largest_call <= 10


def test_chunks_are_bounded_by_cost_with_at_least_one_item_each():
    model = Recorder(delay=0.0)
    batcher = MicroBatcher(model, max_batch=4, max_wait_ms=1, cost=lambda x: x, max_chunk_cost=10)
    items = [20, 1, 2, 3, 4, 5, 1, 1, 1, 1, 1]
    assert run_concurrently(batcher, [("k", items)]) == [[2 * x for x in items]]
    assert [call for _, call in model.calls] == [[20], [1, 2, 3, 4], [5, 1, 1, 1], [1, 1]]


@pytest.mark.parametrize("grouping", [Grouping.WHOLE, Grouping.ALONE])
def test_requests_that_cannot_be_split_run_whole(grouping):
    model = Recorder(delay=0.0)
    batcher = MicroBatcher(model, max_batch=10, max_wait_ms=20, grouping=grouping)
    requests = [("k", list(range(4)))] * 3 + [("k", list(range(100, 125)))]
    results = run_concurrently(batcher, requests)
    assert results == [[2 * x for x in items] for _, items in requests]
    assert list(range(100, 125)) in [items for _, items in model.calls]


@pytest.mark.parametrize(
    "options",
    [
        # a 6-item request split into chunks of 2 by items
        {"max_batch": 2},
        # the rest of the large request fits in max_batch but not in one chunk's cost
        {"max_batch": 10, "cost": lambda x: 1, "max_chunk_cost": 2},
    ],
)
def test_a_small_request_waits_for_one_chunk_of_a_large_one_not_all_of_it(options):
    """A 1-item request that arrives while a 6-item request's first chunk runs is computed
    right after that chunk, in a call of its own, not after the whole large request."""
    model = Gate()
    batcher = MicroBatcher(model, max_wait_ms=20, **options)

    async def main():
        large = asyncio.create_task(batcher.submit("k", list(range(100, 106))))
        await asyncio.to_thread(model.started.wait, 120)
        small = asyncio.create_task(batcher.submit("k", [1]))
        await until(lambda: batcher.waiting == 1)
        model.release.set()
        results = await asyncio.gather(large, small)
        await batcher.close()
        return results

    large, small = asyncio.run(main())
    assert large == [2 * x for x in range(100, 106)] and small == [2]
    assert model.calls == [[100, 101], [1], [102, 103], [104, 105]]


@pytest.mark.parametrize("grouping", [Grouping.WHOLE, Grouping.ALONE])
def test_a_request_computed_in_steps_takes_turns_of_one_chunk(grouping):
    """A 6-item request that cannot be split by items runs 2 steps (one chunk's cost) per
    turn; a small request arriving during its first turn runs right after that turn."""
    model = Steps()
    batcher = MicroBatcher(
        model, max_batch=10, max_wait_ms=20, grouping=grouping, cost=lambda x: 1, max_chunk_cost=2
    )

    async def main():
        large = asyncio.create_task(batcher.submit("k", list(range(100, 106))))
        await asyncio.to_thread(model.started.wait, 120)
        small = asyncio.create_task(batcher.submit("k", [1]))
        await until(lambda: batcher.waiting == 1)
        model.release.set()
        results = await asyncio.gather(large, small)
        await batcher.close()
        return results

    large, small = asyncio.run(main())
    assert large == [2 * x for x in range(100, 106)] and small == [2]
    assert model.steps == [100, 101, 1, 102, 103, 104, 105]
    assert batcher.stats.calls == 2 and batcher.stats.requests == 2


def test_an_abandoned_request_computed_in_steps_stops_at_its_next_turn():
    model = Steps()
    batcher = MicroBatcher(
        model, max_batch=10, max_wait_ms=1, grouping=Grouping.WHOLE, cost=lambda x: 1,
        max_chunk_cost=2,
    )  # fmt: skip

    async def main():
        large = asyncio.create_task(batcher.submit("k", list(range(100, 106))))
        await asyncio.to_thread(model.started.wait, 120)
        large.cancel()  # the client leaves during the first turn
        model.release.set()
        after = await batcher.submit("k", [1])
        await batcher.close()
        return after

    assert asyncio.run(main()) == [2]
    assert model.steps == [100, 101, 1]  # one turn of the abandoned request, no more
    assert batcher.stats.dropped == 1


def test_an_abandoned_request_is_dropped_between_its_chunks():
    model = Gate()
    batcher = MicroBatcher(model, max_batch=2, max_wait_ms=20)

    async def main():
        large = asyncio.create_task(batcher.submit("k", list(range(100, 106))))
        await asyncio.to_thread(model.started.wait, 120)
        large.cancel()  # the caller stops waiting while the first chunk runs
        model.release.set()
        after = await batcher.submit("k", [1])  # served after anything still queued
        await batcher.close()
        return after

    assert asyncio.run(main()) == [2]
    assert model.calls == [[100, 101], [1]]
    assert batcher.stats.dropped == 1 and batcher.stats.requests == 1


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
    batcher = MicroBatcher(model, max_batch=100, max_wait_ms=20, grouping=Grouping.ALONE)
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
