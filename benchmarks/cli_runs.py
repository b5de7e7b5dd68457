"""Helpers for benchmark scripts that chain ``ctxsent`` commands over seeds."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass

#: ``time.monotonic()`` at which commands stop (None: no limit); set by :func:`time_budget`
_deadline: float | None = None
#: whether :func:`ctxsent` runs commands in this process; set by :func:`in_process`
_in_process = False


class OutOfTime(RuntimeError):
    """A command was not started, or was stopped, because the time budget ran out."""


@contextmanager
def time_budget(deadline: float) -> Iterator[None]:
    """Within it, :func:`run` starts nothing after ``deadline`` (``time.monotonic()``) and
    stops a command still running then (its whole process group)."""
    global _deadline
    _deadline = deadline
    try:
        yield
    finally:
        _deadline = None


def seconds_left() -> float | None:
    """Seconds to the deadline of :func:`time_budget` (None outside one)."""
    return None if _deadline is None else _deadline - time.monotonic()


@contextmanager
def in_process() -> Iterator[None]:
    """Within it, :func:`ctxsent` runs each command in this process, saving the seconds of
    imports a new process spends (dry runs at toy sizes). Commands must then run one at a
    time, and the budget only keeps them from starting."""
    global _in_process
    _in_process = True
    try:
        yield
    finally:
        _in_process = False


def run(command: list[str], env: dict[str, str] | None = None) -> str:
    """Run ``command`` (echoed to stderr) and return its stdout; raise if it fails or if it
    runs past the time budget (:class:`OutOfTime`); ``env``: its environment (default: ours).

    Stdout goes to a temporary file, not a pipe: if this script is killed, a running
    command finishes instead of dying of SIGPIPE on its next write.
    """
    timeout = None if _deadline is None else _deadline - time.monotonic()
    if timeout is not None and timeout <= 0:
        raise OutOfTime(f"not started, out of time: {' '.join(command)}")
    print("+", " ".join(command), file=sys.stderr, flush=True)
    with tempfile.TemporaryFile("w+") as stdout:
        # its own process group, so that a budget stop also ends its workers
        process = subprocess.Popen(
            command, stdout=stdout, text=True, env=env, start_new_session=True
        )
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise OutOfTime(f"stopped at the time budget: {' '.join(command)}") from None
        if code:
            raise subprocess.CalledProcessError(code, command)
        stdout.seek(0)
        return stdout.read()


def ctxsent(*args: str) -> str:
    """Run ``ctxsent ARGS`` with :func:`run` (in this process within :func:`in_process`)."""
    if not _in_process:
        return run([shutil.which("ctxsent") or "ctxsent", *args])
    if _deadline is not None and _deadline <= time.monotonic():
        raise OutOfTime(f"not started, out of time: ctxsent {' '.join(args)}")
    from ctxsent.cli import app

    print("+ ctxsent", " ".join(args), file=sys.stderr, flush=True)
    with redirect_stdout(io.StringIO()) as stdout:
        app(list(args), prog_name="ctxsent", standalone_mode=False)
    return stdout.getvalue()


def summarise(runs: list[dict], metrics: tuple[str, ...]) -> dict:
    """Every run's metrics plus each metric's mean and sample standard deviation."""
    summary: dict = {"seeds": runs}
    for metric in metrics:
        values = [run[metric] for run in runs]
        summary[metric] = {
            "mean": round(statistics.fmean(values), 4),
            "std": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0,
        }
    return summary


def print_report(args, table: dict) -> None:
    """Print the run's settings and its table as one JSON object on stdout."""
    settings = {key: str(value) for key, value in vars(args).items()}
    print(json.dumps({"settings": settings, "table": table}, indent=2))


@dataclass(frozen=True)
class Job:
    """``fn(result of needs)`` (``fn(None)`` when ``needs`` is None), known as ``key``."""

    key: Hashable
    fn: Callable
    needs: Hashable | None = None


def run_in_order(jobs: list[Job], workers: int) -> dict:
    """Run ``jobs`` on ``workers`` threads and return ``{key: result}``.

    A free worker takes the first job, in list order, whose ``needs`` is done: a job that
    waits for another holds no worker, and the order (e.g. seed-major) is kept among the
    jobs that are ready. A job whose ``needs`` failed fails with the same error; the
    first error is raised once every other job has run.
    """
    keys = [job.key for job in jobs]
    for index, job in enumerate(jobs):
        if job.needs is not None and job.needs not in keys[:index]:
            raise ValueError(f"job {job.key!r} needs {job.needs!r}, which is not listed before it")
    pending, results, errors = list(jobs), {}, {}
    changed = threading.Condition()

    def take_ready() -> Job | None:
        for job in pending:
            if job.needs is None or job.needs in results or job.needs in errors:
                pending.remove(job)
                return job
        return None

    def work() -> None:
        while True:
            with changed:
                while (job := take_ready()) is None:
                    if not pending:
                        return
                    changed.wait()
            try:
                if job.needs in errors:
                    raise errors[job.needs]
                outcome, store = job.fn(results.get(job.needs)), results
            except Exception as error:  # noqa: BLE001 - recorded, raised at the end
                outcome, store = error, errors
            with changed:
                store[job.key] = outcome
                changed.notify_all()

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise next(iter(errors.values()))
    return results
