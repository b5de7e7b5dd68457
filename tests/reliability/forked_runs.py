"""Training runs in forked children, killed (``kill -9``) a little after their first checkpoint.

Forked, a child starts with the test process's imports (an interpreter would spend seconds
of CPU importing torch and Lightning); it trains on one thread, as a run in the test
process does under the ``one_thread`` fixture, and writes no output.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path


def _own_progress_bar_lock() -> None:
    """Give this forked child tqdm write locks of its own. tqdm's lock includes a
    multiprocessing lock inherited from the parent, which every progress bar takes when it is
    made (shown or not): a child killed while holding it would leave the test process
    waiting on it forever."""
    import threading

    from tqdm.std import TqdmDefaultWriteLock, tqdm

    TqdmDefaultWriteLock.th_lock = threading.RLock()
    TqdmDefaultWriteLock.mp_lock = None  # the next lock holds the thread lock only
    classes = [tqdm]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        if "_lock" in vars(cls):
            del cls._lock


def _quietly_on_one_thread(target: Callable, args: tuple) -> None:
    import torch

    _own_progress_bar_lock()
    torch.set_num_threads(1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    target(*args)


def start(target: Callable, args: tuple) -> multiprocessing.Process:
    """``target(*args)`` in a forked child, started."""
    child = multiprocessing.get_context("fork").Process(
        target=_quietly_on_one_thread, args=(target, args)
    )
    child.start()
    return child


def kill_after_first_checkpoint(
    runs: dict[str, tuple[Callable, tuple]], root: Path, after: float = 0.3, limit: float = 300
) -> None:
    """Run ``target(*args)`` for each ``NAME: (target, args)`` of ``runs`` in a forked child,
    side by side; the run writes ``ROOT/NAME``. Each child is killed (-9) ``after`` seconds
    after ``ROOT/NAME/checkpoints/last.ckpt`` appears (a little further into its run:
    steps, maybe a checkpoint half-written). Asserts each died of the kill, with a
    checkpoint there; only a stuck child takes ``limit`` seconds."""
    children = {name: start(*run) for name, run in runs.items()}
    checkpointed: dict[str, float] = {}  # when the first checkpoint (or the end) was seen
    deadline = time.monotonic() + limit
    while any(child.exitcode is None for child in children.values()):
        for name, child in children.items():
            if child.exitcode is not None:
                continue
            done = (root / name / "checkpoints" / "last.ckpt").exists() or not child.is_alive()
            if done or time.monotonic() > deadline:
                checkpointed.setdefault(name, time.monotonic())
            if name in checkpointed and time.monotonic() > checkpointed[name] + after:
                if child.is_alive():
                    os.kill(child.pid, signal.SIGKILL)
                child.join()
        time.sleep(0.05)
    for name, child in children.items():
        assert child.exitcode == -signal.SIGKILL, f"the {name} run ended before it was killed"
        assert (root / name / "checkpoints" / "last.ckpt").exists()
