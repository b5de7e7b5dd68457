"""Helpers for benchmark scripts that chain ``ctxsent`` commands over seeds."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys


def ctxsent(*args: str) -> str:
    """Run ``ctxsent ARGS`` (echoed to stderr) and return its stdout; raise if it fails."""
    command = [shutil.which("ctxsent") or "ctxsent", *args]
    print("+", " ".join(command), file=sys.stderr, flush=True)
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout


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
