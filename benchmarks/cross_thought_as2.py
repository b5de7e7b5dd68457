"""Cross-Thought-style answer selection (section 3.3, Eq. 10) over seeds, with one command.

For each seed (each step skipped when its output exists, so the run resumes):

1. pre-train a Cross-Thought preset from MiniLM (``ctxsent pretrain cross-thought`` on the
   corpus's data folder, built once by ``ctxsent pretrain-data cross-thought``; the
   default ``mlm-1-64-cpu`` is the MLM-1-64 baseline: no cross-sequence layers, so Eq. 10
   becomes a softmax over cosine similarities); ``--pretrain-steps 0`` skips this and
   fine-tunes MiniLM itself (``--init backbone``);
2. fine-tune it on WikiQA with Eq. 10 (``ctxsent finetune cross-thought --task as2``),
   keeping the best WikiQA dev-clean MAP, which also scores WikiQA test-clean once;
3. score SelQA test once with the same model (``ctxsent eval as2``);
4. print one JSON object: per test set the metrics of every seed, their mean and std.

    python benchmarks/cross_thought_as2.py --out runs/eq10 --seeds 1 2 3

The pre-training and fine-tuning steps use the same seed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cli_runs import ctxsent, print_report, summarise

from ctxsent.saving import read_run

WIKIQA = "wikiqa:../shared/data/wikiqa"
SELQA = "selqa:../shared/data/selqa"
METRICS = ("map", "mrr", "p@1", "ndcg@10")


def finished(run: Path) -> bool:
    """Whether the run folder ``run`` holds a finished run (its ``run.json`` says so)."""
    return (read_run(run) or {}).get("status") == "finished"


def run_seed(seed: int, args) -> dict:
    """The three steps for one seed; returns dev, WikiQA test-clean and SelQA test metrics."""
    pretrained, finetuned = args.out / f"pretrain-s{seed}", args.out / f"finetune-s{seed}"
    init = str(pretrained / "model") if args.pretrain_steps else "backbone"
    data = args.out / "data"
    if args.pretrain_steps and not data.exists():  # the data folder appears complete or not at all
        ctxsent("pretrain-data", "cross-thought", "--preset", args.preset, "--corpus",
                str(args.corpus), "--out", str(data), "--num-proc", "2")  # fmt: skip
    if args.pretrain_steps and not finished(pretrained):
        ctxsent("pretrain", "cross-thought", "--preset", args.preset, "--data", str(data),
                "--out", str(pretrained), "--seed", str(seed),
                "--max-steps", str(args.pretrain_steps))  # fmt: skip
    if not finished(finetuned):
        ctxsent("finetune", "cross-thought", "--task", "as2", "--init", init,
                "--out", str(finetuned), "--data", WIKIQA, "--seed", str(seed),
                "--max-steps", str(args.finetune_steps),
                "--eval-every", str(args.eval_every))  # fmt: skip
    selqa = finetuned / "test-selqa.json"
    if not selqa.exists():
        selqa.write_text(ctxsent("eval", "as2", "--model", str(finetuned / "model"),
                                 "--data", SELQA, "--split", "test"))  # fmt: skip
    record = read_run(finetuned)
    return {
        "wikiqa dev-clean (best)": {**record["best"]["dev"], "step": record["best"]["step"]},
        "wikiqa test-clean": record["metrics"]["test"],
        "selqa test": json.loads(selqa.read_text()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/cross-thought-as2"))
    parser.add_argument("--corpus", type=Path, default=Path("runs/corpus-wiki"))
    parser.add_argument("--preset", default="mlm-1-64-cpu")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--pretrain-steps", type=int, default=120)
    parser.add_argument("--finetune-steps", type=int, default=300)
    parser.add_argument("--eval-every", type=int, default=100)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    runs = [run_seed(seed, args) for seed in args.seeds]
    table = {
        split: summarise([run[split] for run in runs], METRICS)
        for split in ("wikiqa dev-clean (best)", "wikiqa test-clean", "selqa test")
    }
    print_report(args, table)


if __name__ == "__main__":
    main()
