"""Benchmark ``ctxsent corpus build`` on the 22.5M-word Wikipedia sample.

Builds ``featured-articles`` + ``good-articles-sample`` (WikiExtractor, gzipped)
with the paper's filters and the built-in evaluation-overlap exclusions, once
per ``--num-proc`` value, each in a fresh subprocess so that peak RSS
(``resource.getrusage``: the main process, and the largest child process) is
measured per run. The main process's RSS includes the pages of the
memory-mapped Arrow data that ``save_to_disk`` reads (file-backed, reclaimable,
growing with the corpus), so its anonymous memory is also sampled from
``/proc/self/status`` (Linux). ``cpu_seconds`` (all processes) shows the
parallel overhead on a machine shared with other jobs, where wall time alone
does not. Prints one JSON object; outputs go under ``--work`` and are deleted
afterwards.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/corpus_build.py --num-proc 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = (
    Path(os.environ.get("CTXSENT_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    / "wikipedia-en-2019"
)
FILES = (
    "featured-articles.wikiextractor.txt.gz",
    "good-articles-sample.wikiextractor.txt.gz",
)


class AnonymousMemoryPeak(threading.Thread):
    """Samples ``RssAnon`` of this process every 0.1 s; ``peak_mib`` is the largest seen."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_mib = 0

    def run(self) -> None:
        while True:
            with open("/proc/self/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("RssAnon:"):
                        self.peak_mib = max(self.peak_mib, int(line.split()[1]) // 1024)
            time.sleep(0.1)


def run_once(data: Path, out: Path, num_proc: int) -> dict:
    """Build the corpus in this process and report time, counts and peak memory."""
    from ctxsent.corpus import CorpusFilter, build_corpus
    from ctxsent.corpus.titles import EVALUATION_OVERLAP_TITLES

    anonymous = AnonymousMemoryPeak()
    anonymous.start()
    start = time.perf_counter()
    summary = build_corpus(
        [data / name for name in FILES],
        out,
        corpus_filter=CorpusFilter(exclude_titles=frozenset(EVALUATION_OVERLAP_TITLES)),
        num_proc=num_proc,
        overwrite=True,
    )
    seconds = time.perf_counter() - start
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return {
        "num_proc": num_proc,
        "seconds": round(seconds, 1),
        "documents": summary["documents"],
        "paragraphs": summary["paragraphs"],
        "sentences": summary["sentences"],
        "tokens": summary["tokens"],
        "words_read": summary["read"]["tokens"],
        "words_per_second": round(summary["read"]["tokens"] / seconds),
        "cpu_seconds": round(sum(u.ru_utime + u.ru_stime for u in usage), 1),
        "load_average_1min_after": round(os.getloadavg()[0], 1),
        "excluded_documents": summary["dropped"]["documents_excluded_by_title"],
        # ru_maxrss is in KiB on Linux
        "peak_rss_main_mib": round(usage[0].ru_maxrss / 1024),
        "peak_rss_anon_main_mib": anonymous.peak_mib,
        "peak_rss_largest_child_mib": round(usage[1].ru_maxrss / 1024),
        "output_mib": round(sum(f.stat().st_size for f in out.iterdir()) / 2**20),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-proc", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ctxsent-bench-corpus"))
    parser.add_argument("--single", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single:
        print(json.dumps(run_once(args.data, args.work / "corpus", args.num_proc[0])))
        return
    runs = []
    try:
        for num_proc in args.num_proc:
            command = [sys.executable, __file__, "--single", "--num-proc", str(num_proc)]
            command += ["--data", str(args.data), "--work", str(args.work)]
            result = subprocess.run(command, check=True, capture_output=True, text=True)
            runs.append(json.loads(result.stdout.splitlines()[-1]))
    finally:
        shutil.rmtree(args.work, ignore_errors=True)
    baseline = runs[0]["seconds"]
    for run in runs:
        run["speedup_vs_first"] = round(baseline / run["seconds"], 2)
    report = {
        "benchmark": "corpus_build",
        "inputs": list(FILES),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "runs": runs,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
