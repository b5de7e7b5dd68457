"""SSP example building speed: tokenised examples per core-second (issue #5 target >= 4,550).

The SSP paper (appendix C) built ~1.05 billion examples in ~10 hours on 64
cores, ~455 tokenised examples per core-second. This builds the examples of
the first ``--documents`` documents of a corpus folder with ``--num-proc``
workers and prints JSON: wall time, CPU time of all workers, and examples per
core-second both ways (wall x num_proc is the fair figure on a dedicated
machine; CPU time is the one that survives a shared machine).

    python benchmarks/ssp_examples_speed.py --corpus runs/corpus-wiki --objective dpc
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")
PAPER_PER_CORE = 1.05e9 / (640 * 3600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--objective", default="dpc")
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--num-proc", type=int, default=1)
    parser.add_argument("--tokenizer", default="all-MiniLM-L6-v2")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from ctxsent.objectives.ssp import SspConfig
    from ctxsent.objectives.ssp_data import build_ssp_dataset

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as work:
        summary = build_ssp_dataset(
            args.corpus,
            Path(work) / "ssp",
            SspConfig(objective=args.objective, seed=args.seed),
            args.tokenizer,
            num_proc=args.num_proc,
            max_documents=args.documents,
        )
    per_core_wall = summary["examples"] / (summary["seconds"] * args.num_proc)
    per_core_cpu = summary["examples_per_cpu_second"]
    print(
        json.dumps(
            {
                "benchmark": "ssp_examples_speed",
                "corpus": args.corpus,
                "objective": args.objective,
                "tokenizer": args.tokenizer,
                "num_proc": args.num_proc,
                "documents": summary["documents"],
                "examples": summary["examples"],
                "mean_tokens": summary["mean_tokens"],
                "seconds": summary["seconds"],
                "cpu_seconds": summary["cpu_seconds"],
                "examples_per_s_per_core_wall": round(per_core_wall, 1),
                "examples_per_cpu_s": per_core_cpu,
                "paper_examples_per_core_s": round(PAPER_PER_CORE, 1),
                "speedup_vs_paper_cpu": round(per_core_cpu / PAPER_PER_CORE, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
