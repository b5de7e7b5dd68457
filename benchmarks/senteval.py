"""SentEval-style baselines for BENCHMARKS.md: GloVe BOW, the random control and MiniLM.

Runs every task (``DEFAULT_TASKS``) for each model through the same code path as
``ctxsent eval senteval`` and prints one JSON object (per-model reports, wall time,
machine) on stdout and the markdown results table on stderr. Embeddings are cached
(``--cache``), so a second run only retrains the probes.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/senteval.py --setting literature --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from ctxsent.evaluation.senteval import (
    DEFAULT_CACHE,
    SETTINGS,
    markdown_table,
    model_fingerprint,
    run_senteval,
)
from ctxsent.resolver import load_encoder
from ctxsent.tasks.senteval import DEFAULT_TASKS, get_task, load_task

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("CTXSENT_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["glove-bow", "random", "minilm"])
    parser.add_argument("--tasks", nargs="+", default=list(DEFAULT_TASKS))
    parser.add_argument("--setting", choices=sorted(SETTINGS), default="literature")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--threads", type=int, default=None, help="torch threads for encoding")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    tasks = [load_task(get_task(name), args.data) for name in args.tasks]
    setting = replace(SETTINGS[args.setting], seed=args.seed)
    reports, seconds = [], {}
    for spec in args.models:
        start = time.perf_counter()
        reports.append(
            run_senteval(
                load_encoder(spec),
                tasks,
                model=spec,
                fingerprint=model_fingerprint(spec),
                setting=setting,
                cache_dir=args.cache,
                show_progress=True,
                log=lambda line, spec=spec: print(f"[{spec}] {line}", file=sys.stderr),
            )
        )
        seconds[spec] = round(time.perf_counter() - start, 1)

    result = {
        "setting": args.setting,
        "seed": args.seed,
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
        },
        "seconds": seconds,
        "reports": [report.to_dict() for report in reports],
    }
    print(json.dumps(result, indent=2))
    print("\n" + markdown_table(reports), file=sys.stderr)


if __name__ == "__main__":
    main()
