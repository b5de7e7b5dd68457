"""Table 1 of the context-aware AS2 paper at a chosen scale, with one command.

Steps, each skipped when its output already exists (so the run resumes; an interrupted
fine-tune continues from its last checkpoint):

1. for each SSP objective: build its examples (``ctxsent pretrain-data ssp``) and
   continue pre-training the backbone (``ctxsent pretrain ssp``, preset ``ssp-OBJ-cpu``
   or ``--preset-suffix ''`` for the GPU presets); for each ``--controls`` objective,
   also the MLM-only control on the same examples, steps and batch stream
   (``--ssp-weight 0``, row ``contextual+mlm-OBJ``): it separates what the SSP loss adds
   from what the masked-word steps on the corpus add; for each ``--fresh-heads``
   objective, its SSP checkpoint is also fine-tuned with the SSP head re-drawn
   (``--fresh-head``, row ``contextual+ssp-OBJ+fresh-head``): it separates what the
   encoder learned from what the pre-trained head carries into fine-tuning;
2. for each seed and target, fine-tune with one budget: the pairwise baseline, the
   contextual baseline and contextual + each pre-trained checkpoint (``ctxsent finetune
   as2``, chosen on the target's dev split);
3. evaluate once on the target's test set: WikiQA-trained models on WikiQA test-clean,
   SQuAD-AS2-trained models on SelQA test (SelQA's train split is not in ../shared/data,
   so the SQuAD-derived set stands in as its training data);
4. print one JSON object: per (target, model) the test metrics of every seed and their
   mean and standard deviation (MAP, MRR, P@1, nDCG@10), and per model its difference
   from the contextual baseline fine-tuned with the same seed (same batches and head
   draw), with a paired t-test over the seeds (``paired_with_contextual``) and its p
   adjusted by Holm's method over the rows compared per target and metric: every row
   but the two baselines, i.e. the objectives, controls and fresh heads (``p_holm``).

    python benchmarks/ssp_table1.py --out runs/ssp-table1 --seeds 1 2 3 \\
        --pretrain-steps 1000 --finetune-steps 300 --documents 1000 --jobs 2

``--jobs N`` runs N ``ctxsent`` commands at a time (give each one torch thread with
``OMP_NUM_THREADS``); a contextual+SSP fine-tune waits for its own pre-training only.
Pre-training warms up over the first 10% of ``--pretrain-steps`` (the CPU presets'
100 warm-up steps are sized for their 1,000 steps).

Extra ``ctxsent finetune as2`` / ``pretrain ssp`` options (e.g. ``--accelerator gpu``)
go after ``--``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from functools import partial
from pathlib import Path

from cli_runs import Job, ctxsent, print_report, run_in_order, summarise
from scipy import stats

from ctxsent.saving import read_run

OBJECTIVES = ("sdc", "dpc", "dslc", "all")
TARGETS = {  # training set (its dev split selects the model), test set
    "wikiqa": ("wikiqa:../shared/data/wikiqa", "wikiqa"),
    "squad": ("squad-as2:{squad}", "selqa"),
}
TEST_DATA = {"wikiqa": "wikiqa:../shared/data/wikiqa", "selqa": "selqa:../shared/data/selqa"}
METRICS = ("map", "mrr", "p@1", "ndcg@10")


def pretrain_data(objective: str, args) -> Path:
    data = args.out / f"data-{objective}"
    if not (data / "ssp.json").exists():
        ctxsent("pretrain-data", "ssp", "--objective", objective, "--corpus", str(args.corpus),
                "--out", str(data), "--max-documents", str(args.documents),
                "--num-proc", str(args.num_proc), "--overwrite")  # fmt: skip
    return data


def finished(run: Path) -> bool:
    """Whether the run folder ``run`` holds a finished run (its ``run.json`` says so)."""
    return (read_run(run) or {}).get("status") == "finished"


def pretrain(objective: str, args, extra: list[str], mlm_only: bool = False) -> Path:
    """The checkpoint of MLM + SSP on ``objective``'s examples (MLM alone if ``mlm_only``)."""
    data = args.out / f"data-{objective}"
    run = args.out / f"pretrain-{'mlm-' if mlm_only else ''}{objective}"
    if not finished(run):  # OUT/model exists earlier
        ctxsent("pretrain", "ssp", "--data", str(data), "--out", str(run),
                "--preset", f"ssp-{objective}{args.preset_suffix}",
                "--max-steps", str(args.pretrain_steps),
                "--warmup-steps", str(max(1, args.pretrain_steps // 10)),
                *(["--ssp-weight", "0"] if mlm_only else []), *extra)  # fmt: skip
    return run / "model"


def finetune(name: str, target: str, seed: int, init: list[str], args, extra: list[str]) -> Path:
    train = TARGETS[target][0].format(squad=args.squad)
    run = args.out / f"{target}-{name}-seed{seed}"
    done = run / "finetune.json"  # written once training ends (OUT/model exists earlier)
    if not done.exists():
        # SQuAD-AS2 has ~200 candidates per question: subsample train, cap the dev questions
        squad = ["--max-negatives", "4", "--dev-questions", str(args.squad_dev_questions)]
        summary = ctxsent("finetune", "as2", "--data", train, "--out", str(run),
                          "--max-steps", str(args.finetune_steps), "--epochs", "100",
                          "--lr", str(args.lr), "--eval-every", str(args.finetune_steps // 4),
                          "--seed", str(seed), *init,
                          *(squad if target == "squad" else []), *extra)  # fmt: skip
        done.write_text(summary)
    return run / "model"


def evaluate(model: Path, test: str) -> dict:
    cached = model.parent / f"test-{test}.json"
    if not cached.exists():
        result = ctxsent("eval", "as2", "--model", str(model), "--data", TEST_DATA[test])
        cached.write_text(result)
    return json.loads(cached.read_text())


def paired_with_baseline(runs: dict[int, dict], baseline: dict[int, dict]) -> dict:
    """Per metric: the seed-by-seed differences from the baseline, their mean and the
    two-sided paired t-test p (needs two seeds or more)."""
    seeds = sorted(runs.keys() & baseline.keys())
    paired: dict = {"seeds": seeds}
    for metric in METRICS:
        ours, theirs = [runs[s][metric] for s in seeds], [baseline[s][metric] for s in seeds]
        differences = [round(a - b, 4) for a, b in zip(ours, theirs, strict=True)]
        p = stats.ttest_rel(ours, theirs).pvalue if len(seeds) > 1 else float("nan")
        paired[metric] = {
            "differences": differences,
            "mean": round(statistics.fmean(differences), 4) if seeds else float("nan"),
            "p": round(float(p), 4),
        }
    return paired


def holm(p_values: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjustment of a family of p-values: the k-th smallest of m (k from
    0) times m - k, raised to the adjusted value before it, capped at 1. A NaN p (a test
    that could not run) stays NaN and is not counted in m."""
    ranked = sorted((p, name) for name, p in p_values.items() if not math.isnan(p))
    adjusted = dict.fromkeys(p_values, math.nan)
    running = 0.0
    for k, (p, name) in enumerate(ranked):
        running = max(running, min(1.0, (len(ranked) - k) * p))
        adjusted[name] = running
    return adjusted


def add_holm(rows: dict[str, dict], family: list[str]) -> None:
    """Add ``p_holm`` to each ``paired_with_contextual`` test of the ``family`` rows, the
    family adjusted together, one metric at a time."""
    for metric in METRICS:
        tests = {name: rows[name]["paired_with_contextual"][metric] for name in family}
        for name, p in holm({name: test["p"] for name, test in tests.items()}).items():
            tests[name]["p_holm"] = round(p, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/ssp-table1"))
    parser.add_argument("--corpus", type=Path, default=Path("runs/corpus-wiki"))
    parser.add_argument("--squad", default="/tmp/squad-as2", help="'ctxsent data squad-as2' out")
    parser.add_argument("--objectives", nargs="+", default=list(OBJECTIVES), choices=OBJECTIVES)
    parser.add_argument(
        "--controls",
        nargs="*",
        default=[],
        choices=OBJECTIVES,
        help="objectives whose examples also pre-train an MLM-only control",
    )
    parser.add_argument(
        "--fresh-heads",
        nargs="*",
        default=[],
        choices=OBJECTIVES,
        help="objectives whose SSP checkpoint is also fine-tuned with a fresh head",
    )
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--documents", type=int, default=1000, help="corpus documents for SSP")
    parser.add_argument("--num-proc", type=int, default=1)
    parser.add_argument("--pretrain-steps", type=int, default=1000)
    parser.add_argument("--preset-suffix", default="-cpu", help="'-cpu' or '' (GPU presets)")
    parser.add_argument("--finetune-steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--squad-dev-questions", type=int, default=100)
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        metavar="ROW:SEED",
        help="fine-tunes not to run (e.g. contextual:2, already reported from a lost runs/)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="ctxsent commands run at once")
    parser.add_argument("extra", nargs=argparse.REMAINDER, help="-- options for ctxsent")
    args = parser.parse_args()
    extra = [a for a in args.extra if a != "--"]

    baselines = {"pairwise": ["--arch", "cross-encoder"], "contextual": ["--contextual"]}
    # Pre-trainings first; a fine-tune starts once its own pre-training is done.
    pretrainings = [
        Job(f"contextual+ssp-{o}", lambda _, o=o: pretrain(o, args, extra)) for o in args.objectives
    ]
    pretrainings += [
        Job(f"contextual+mlm-{o}", lambda _, o=o: pretrain(o, args, extra, mlm_only=True))
        for o in args.controls
    ]
    if missing := set(args.fresh_heads) - set(args.objectives):
        parser.error(f"--fresh-heads {' '.join(sorted(missing))}: not in --objectives")
    # row -> the pre-training whose checkpoint it fine-tunes with a re-drawn head
    fresh_heads = {
        f"contextual+ssp-{o}+fresh-head": f"contextual+ssp-{o}" for o in args.fresh_heads
    }
    names = [*baselines, *(job.key for job in pretrainings), *fresh_heads]
    # Seed-major order, so a run stopped early has every row for its first seeds; within a
    # seed the pairwise baseline goes last (the cheapest run, and not what the claim is about).
    queue = {
        f"{name}:{seed}": (name, seed)
        for seed in args.seeds
        for name in sorted(names, key="pairwise".__eq__)
    }
    if unknown := set(args.skip) - queue.keys():
        parser.error(f"--skip {' '.join(sorted(unknown))}: not a ROW:SEED of this run")
    queue = [run for label, run in queue.items() if label not in args.skip]
    args.out.mkdir(parents=True, exist_ok=True)
    for objective in dict.fromkeys(args.objectives + args.controls):  # before two runs race
        pretrain_data(objective, args)

    def finetune_and_evaluate(checkpoint: Path | None, name: str, target: str, seed: int):
        init = baselines.get(name) or ["--contextual", "--init", str(checkpoint)]
        if name in fresh_heads:
            init.append("--fresh-head")
        return evaluate(finetune(name, target, seed, init, args, extra), TARGETS[target][1])

    finetunes = [
        Job(
            (target, name, seed),
            partial(finetune_and_evaluate, name=name, target=target, seed=seed),
            needs=None if name in baselines else fresh_heads.get(name, name),
        )
        for target in args.targets
        for name, seed in queue
    ]
    results = run_in_order(pretrainings + finetunes, args.jobs)
    table: dict = {}
    for target in args.targets:
        rows = table.setdefault(f"{target} -> {TARGETS[target][1]} test", {})
        by_seed = {
            name: {seed: results[target, row, seed] for row, seed in queue if row == name}
            for name in names
        }
        for name, runs in by_seed.items():
            if runs:
                rows[name] = summarise(list(runs.values()), METRICS)
                if name != "contextual" and by_seed["contextual"]:
                    rows[name]["paired_with_contextual"] = paired_with_baseline(
                        runs, by_seed["contextual"]
                    )
        if "contextual" in rows:  # the family: every row but the two baselines
            add_holm(rows, [name for name in rows if name not in baselines])
    print_report(args, table)


if __name__ == "__main__":
    main()
