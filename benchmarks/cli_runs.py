"""Helpers for benchmark scripts that chain ``ctxsent`` commands over seeds."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile


def ctxsent(*args: str) -> str:
    """Run ``ctxsent ARGS`` (echoed to stderr) and return its stdout; raise if it fails.

    Stdout goes to a temporary file, not a pipe: if this script is killed, a running
    command finishes instead of dying of SIGPIPE on its next write.
    """
    command = [shutil.which("ctxsent") or "ctxsent", *args]
    print("+", " ".join(command), file=sys.stderr, flush=True)
    with tempfile.TemporaryFile("w+") as stdout:
        subprocess.run(command, check=True, stdout=stdout, text=True)
        stdout.seek(0)
        return stdout.read()


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
