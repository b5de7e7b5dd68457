"""Pre-training speed of Cross-Thought against MLM-1-64 on the same tokens, and peak memory.

Both models start from MiniLM-L6 and see the very same batches (``--samples`` samples of
``--sequences`` consecutive 64-token sequences from the corpus, 15% masked); the timed
steps alternate between the two so machine noise hits both alike. Each step is a
forward, backward and AdamW update. Prints JSON: tokens/s of each, the overhead ratio
(target <= 1.3x), and, with ``--memory-m``, the peak resident memory of one
forward+backward of Cross-Thought-1-64 at M sequences in a fresh process (paper: M = 500).

    python benchmarks/cross_thought_speed.py --corpus runs/corpus-wiki --memory-m 500
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import tempfile
import time

import torch

from ctxsent.models.cross_thought import CrossThoughtModel
from ctxsent.objectives.cross_thought import (
    ConsecutiveSequences,
    CrossThoughtObjective,
    collator_for,
)
from ctxsent.objectives.pretrain_data import (
    ArrowChunks,
    build_cross_thought_data,
    load_pretrain_data,
)
from ctxsent.presets import get_preset


def batches(corpus: str, preset_name: str, samples: int, sequences: int, count: int, seed: int):
    """``count`` batches of the corpus's first sequences (a Cross-Thought data folder's)."""
    preset = get_preset(preset_name, "cross-thought").config
    model = CrossThoughtModel.build(preset.model_config("all-MiniLM-L6-v2"))
    with tempfile.TemporaryDirectory() as scratch:
        folder = f"{scratch}/data"
        needed = samples * sequences * count
        build_cross_thought_data(
            corpus, folder, preset_name, max_sequences=needed, exclude_titles=()
        )
        dataset, _ = load_pretrain_data(folder, "cross-thought")
        chunks = ArrowChunks(dataset, preset.sequence_length, model.tokenizer.pad_token_id or 0)
        data = ConsecutiveSequences(chunks, sequences)
        collate = collator_for(model, preset, seed)
        rows = iter(range(len(data)))
        return [collate([data[next(rows)] for _ in range(samples)]) for _ in range(count)]


def train_step(objective: CrossThoughtObjective, optimizer, batch) -> float:
    start = time.perf_counter()
    loss = objective.masked_word_loss(batch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return time.perf_counter() - start


def speed(args) -> dict:
    data = batches(args.corpus, "cross-thought-1-64-cpu", args.samples, args.sequences, 4, 0)
    runs = {}
    for name in ("cross-thought-1-64-cpu", "mlm-1-64-cpu"):
        model = CrossThoughtModel.build(
            get_preset(name).config.model_config("all-MiniLM-L6-v2")
        ).train()
        objective = CrossThoughtObjective(model)
        runs[name] = (objective, torch.optim.AdamW(objective.parameters(), lr=1e-5), [])
    for batch in data[:1]:  # warm-up, not timed
        for objective, optimizer, _ in runs.values():
            train_step(objective, optimizer, batch)
    for _, batch in zip(range(args.steps), itertools.cycle(data[1:]), strict=False):
        for objective, optimizer, times in runs.values():
            times.append(train_step(objective, optimizer, batch))
    tokens = int(data[1]["attention_mask"].sum())
    result = {
        name: {
            "tokens_per_step": tokens,
            "seconds": sum(t),
            "tokens_per_s": tokens * len(t) / sum(t),
        }
        for name, (_, _, t) in runs.items()
    }
    ct, mlm = result["cross-thought-1-64-cpu"], result["mlm-1-64-cpu"]
    result["overhead_ratio_mlm_over_cross_thought_speed"] = mlm["tokens_per_s"] / ct["tokens_per_s"]
    return result


def memory(args) -> dict:
    """One forward+backward of Cross-Thought-1-64 at M = ``args.memory_child``, 1 sample."""
    data = batches(args.corpus, "cross-thought-1-64", 1, args.memory_child, 1, 0)[0]
    model = CrossThoughtModel.build(
        get_preset("cross-thought-1-64").config.model_config("all-MiniLM-L6-v2")
    )
    objective = CrossThoughtObjective(model.train())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    objective.masked_word_loss(data).backward()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "sequences": args.memory_child,
        "tokens": int(data["attention_mask"].sum()),
        "peak_rss_gib": round(peak / 2**20, 2),
        "rss_before_step_gib": round(before / 2**20, 2),
        "forward_backward_seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="runs/corpus-wiki")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--sequences", type=int, default=16)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--memory-m", type=int, nargs="*", default=[])
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.memory_child:
        print(json.dumps(memory(args)))
        return
    result = {"threads": args.threads, "speed": speed(args), "memory": []}
    for m in args.memory_m:  # a fresh process each, so peaks do not mix
        command = [
            sys.executable,
            __file__,
            "--corpus",
            args.corpus,
            "--memory-child",
            str(m),
            "--threads",
            str(args.threads),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = done.stdout.strip().splitlines()
        result["memory"].append(
            json.loads(lines[-1])
            if done.returncode == 0 and lines
            else {"sequences": m, "failed": done.stderr[-500:]}
        )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
