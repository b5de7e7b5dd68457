"""Waiting in async tests without timing assumptions."""

from __future__ import annotations

import asyncio


async def until(condition) -> None:
    """Wait for ``condition()``: polls the event loop; the bound only ends a hang."""
    for _ in range(12_000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met in 120 s")
