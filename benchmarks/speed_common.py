"""What the inference-speed benchmarks share: arguments, interleaved timing, the reports.

Each benchmark compares scorers (ctxsent in several precisions or runtimes, and a peer)
on the same items: timed in interleaved rounds within one process after a warm-up, so
machine noise hits all alike, then each run once on the precision set for its MAP.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from ctxsent.models.precision import cpu_has_native_bf16

#: MAP a precision may lose against fp32 on a trained model and still be an inference default.
MAP_TOLERANCE = 0.002


def add_speed_arguments(parser: argparse.ArgumentParser) -> None:
    """The data, sample sizes, batch, rounds and threads every speed benchmark takes."""
    parser.add_argument("--data", default="wikiqa:../shared/data/wikiqa")
    parser.add_argument("--split", default="test")
    parser.add_argument("--questions", type=int, default=60, help="speed: the first N questions")
    parser.add_argument("--map-questions", type=int, help="precision: the first N (default: all)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())


def precision_contenders(default: str, resolved: str, precisions: str) -> tuple[dict, str]:
    """``{name: precision}`` of the ctxsent contenders: the default as loaded (``default``,
    which resolves to ``resolved`` here), then each other of the comma-separated
    ``precisions``; and the name of the fp32 one to compare against."""
    settings = {f"ctxsent_default_{resolved}": default}
    for precision in filter(None, precisions.split(",")):
        if precision != default:  # the default's own path runs once
            settings[f"ctxsent_{precision}"] = precision
    return settings, "ctxsent_fp32" if "ctxsent_fp32" in settings else next(iter(settings))


def interleaved_seconds(contenders: Mapping[str, Callable[[], object]], rounds: int):
    """Wall and process CPU seconds per round of each contender: one warm-up call each,
    then ``rounds`` rounds that call every contender in turn. With one thread, CPU time is
    the work done whatever else runs on the machine; wall time is what a user waits."""
    for run in contenders.values():
        run()
    wall: dict[str, list[float]] = {name: [] for name in contenders}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, run in contenders.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return wall, cpu


def speed_report(
    wall: Mapping[str, list[float]],
    cpu: Mapping[str, list[float]],
    items: int,
    unit: str,
    peer: str,
) -> dict:
    """Median ``unit`` per wall and per CPU second of each contender, and their ratios to
    ``peer``'s."""

    def rates(seconds: Mapping[str, list[float]]) -> dict[str, float]:
        return {name: items / statistics.median(s) for name, s in seconds.items()}

    per_wall, per_cpu = rates(wall), rates(cpu)
    return {
        f"{unit}_per_second": {name: round(rate, 1) for name, rate in per_wall.items()},
        f"ratio_vs_{peer}": {n: round(r / per_wall[peer], 3) for n, r in per_wall.items()},
        f"{unit}_per_cpu_second": {name: round(rate, 1) for name, rate in per_cpu.items()},
        f"cpu_ratio_vs_{peer}": {n: round(r / per_cpu[peer], 3) for n, r in per_cpu.items()},
        "seconds_per_round": {name: [round(x, 2) for x in s] for name, s in wall.items()},
        "cpu_seconds_per_round": {name: [round(x, 2) for x in s] for name, s in cpu.items()},
    }


def map_report(maps: Mapping[str, float], fp32: str) -> dict:
    """Each contender's MAP, its difference from ``fp32``'s and whether it is within
    :data:`MAP_TOLERANCE`."""
    return {
        "map": {name: round(value, 4) for name, value in maps.items()},
        "map_minus_fp32": {name: round(value - maps[fp32], 4) for name, value in maps.items()},
        f"within_{MAP_TOLERANCE}_of_fp32": {
            name: abs(value - maps[fp32]) <= MAP_TOLERANCE for name, value in maps.items()
        },
    }


def instruction_set() -> str:
    """The widest of AMX, AVX512-BF16, AVX512 and AVX2 the CPU has (``/proc/cpuinfo``)."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown"
    for flag, name in (("amx_bf16", "AMX"), ("avx512_bf16", "AVX512-BF16"), ("avx512f", "AVX512")):
        if flag in flags:
            return name
    return "AVX2" if "avx2" in flags else "older than AVX2"


def machine(threads: int) -> dict:
    """The machine facts a speed number needs next to it."""
    return {
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "instruction_set": instruction_set(),
        "cpu_native_bf16": cpu_has_native_bf16(),
        "threads": threads,
    }
