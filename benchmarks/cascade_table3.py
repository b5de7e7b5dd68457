"""Cascade paper Table 3 at our scale, in one run: quality, cost and measured speed.

Rows: monolithic models truncated to 2..6 layers (alpha 0), each cascade
classifier used alone (alpha 0, paper Table 2), the Sequential Ranker (the
monolithic models chained, section 4.2) and the full cascade at each alpha.
Every row reports MAP, MRR, P@1, nDCG@10 (ties pessimistic), relative cost
(layer-candidate evaluations / the 6-layer model's) and candidates/s measured
in this process; rows that are compared (cascade vs monolithic-6 vs
sequential at one alpha) run back to back, each ``--repeats`` times (median).
Models come from ``benchmarks/cascade_train.sh``: monolithic folders
``RUNS/PREFIX-K`` (``--mono-prefix``: ``mono`` for [CLS] cross-encoders,
``pooled`` for one-exit cascades that read the mean of the token states), and
an optional ``--reference`` model (the monolithic model trained the usual
way) that the P@1 targets are also checked against.

Section 4.3.2 sizes the cascade's batch by its average over the layers, so it can start
larger than the monolithic model's memory-bound batch: ``--cascade-batch-size`` (default
``--batch-size``) sets the cascade's batch, e.g. ``--batch-size 84 --cascade-batch-size
128`` (the paper's example). Our cascade re-batches the survivors of many questions at
every exit, so its batches stay full at every stage whatever the first one.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cascade_table3.py \
        --runs runs/table3 --data wikiqa:../shared/data/wikiqa --repeats 3
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

import ctxsent
from ctxsent.evaluation.as2_metrics import per_question_as2_metrics
from ctxsent.evaluation.significance import paired_bootstrap
from ctxsent.models.sequential import SequentialRanker
from ctxsent.tasks.as2_load import evaluation_records
from ctxsent.tasks.as2_records import first_questions, sample_questions

METRICS = ("map", "mrr", "p@1", "ndcg@10")


def measure(name, run, records, repeats, cost=None):
    """Run ``run()`` ``repeats`` times: the row (metrics of its scores, median seconds,
    cost) and each question's P@1 (for the paired intervals)."""
    seconds, scores, measured_cost = [], None, cost
    for _ in range(repeats):
        start = time.perf_counter()
        scores, measured_cost = run()
        seconds.append(time.perf_counter() - start)
    per_question = per_question_as2_metrics(
        [r.question_id for r in records], [r.label for r in records], scores
    )
    metrics = per_question.mean()
    median = statistics.median(seconds)
    row = {"model": name, **{m: round(metrics[m], 4) for m in METRICS}}
    row["relative_cost"] = round(measured_cost if cost is None else cost, 4)
    row["seconds"] = round(median, 2)
    row["candidates_per_second"] = round(len(records) / median, 1)
    print(json.dumps(row), flush=True)
    return row, per_question.values["p@1"]


def points(difference: dict | float) -> str:
    """``-5.0 [-12.5, +2.5]``: a paired P@1 difference in points with its interval.

    Reports saved before the intervals existed hold a bare difference.
    """
    if isinstance(difference, float):
        return f"{100 * difference:+.1f}"
    low, high = 100 * difference["low"], 100 * difference["high"]
    return f"{100 * difference['mean']:+.1f} [{low:+.1f}, {high:+.1f}]"


def markdown(report: dict) -> str:
    """The report as BENCHMARKS.md tables: one row per model, then the targets per alpha."""
    lines = [
        "| model | MAP | MRR | P@1 | nDCG@10 | relative cost | candidates/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        numbers = [f"{row[m]:.3f}" for m in (*METRICS, "relative_cost")]
        lines.append(f"| {row['model']} | {' | '.join(numbers)} | {row['candidates_per_second']} |")
    summary = report["summary"]
    alphas = [key for key in summary if not key.startswith("last_exit")]
    reference = "cascade_p@1_minus_reference" in summary[alphas[0]]
    lines += [
        "",
        "| alpha | cascade cost | cascade / monolithic speed | cascade P@1 - monolithic [95% CI]"
        + (" | cascade P@1 - reference [95% CI]" if reference else "")
        + " | sequential cost / cascade cost | cascade / sequential speed |",
        "|---|---|---|---|---|---|" + ("---|" if reference else ""),
    ]
    for alpha in alphas:
        row = summary[alpha]
        cells = [
            f"{row['cascade_cost']:.3f}",
            f"{row['cascade_speedup_vs_monolithic']:.2f}x",
            points(row["cascade_p@1_minus_monolithic"]),
            *([points(row["cascade_p@1_minus_reference"])] if reference else []),
            f"{row['sequential_cost_over_cascade_cost']:.2f}x",
            f"{row['cascade_speedup_vs_sequential']:.2f}x",
        ]
        lines.append(f"| {alpha} | {' | '.join(cells)} |")
    for key in ("last_exit_p@1_minus_monolithic", "last_exit_p@1_minus_reference"):
        if key in summary:
            lines.append(f"\n{key.replace('_', ' ')}: {points(summary[key])} points")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/table3"))
    parser.add_argument("--cascade", type=Path, help="cascade model (default RUNS/cascade/model)")
    parser.add_argument("--mono-prefix", default="mono", help="monolithic folders RUNS/PREFIX-K")
    parser.add_argument("--reference", type=Path, help="monolithic model trained the usual way")
    parser.add_argument("--data", default="wikiqa:../shared/data/wikiqa")
    parser.add_argument("--split", default="test")
    subset = parser.add_mutually_exclusive_group()
    subset.add_argument("--questions", type=int, help="only the first N clean questions")
    subset.add_argument(
        "--sample-questions", type=int, help="N clean questions drawn at random (seed 0)"
    )
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.3, 0.4, 0.5])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--cascade-batch-size", type=int, help="default: --batch-size")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--render", type=Path, help="print the Markdown tables of a saved report and exit"
    )
    args = parser.parse_args()
    if args.render:
        text = args.render.read_text()  # JSON rows, then the indented report
        print(markdown(json.loads(text[text.rfind("\n{\n") + 1 :])))
        return
    torch.set_num_threads(args.threads)

    records, _ = evaluation_records(args.data, args.split, clean_questions=True)
    if args.questions:
        records = first_questions(records, args.questions)
    elif args.sample_questions:
        records = sample_questions(records, args.sample_questions)
    prefix = f"{args.mono_prefix}-"

    def load(folder: Path):
        return ctxsent.load(folder).to(args.device)

    mono = {
        int(folder.name.removeprefix(prefix)): load(folder / "model")
        for folder in sorted(args.runs.glob(f"{prefix}*"))
        if (folder / "model").is_dir()
    }
    cascade = load(args.cascade or args.runs / "cascade" / "model")
    depth = cascade.model.config.num_hidden_layers
    sequential = SequentialRanker([mono[k] for k in sorted(mono)])
    bs = args.batch_size

    def plain(ranker):
        return lambda: (ranker.predict(records, batch_size=bs), None)

    def staged(ranker, alpha, batch_size=bs):
        def run():
            scores = ranker.predict(records, batch_size=batch_size, alpha=alpha)
            return scores, ranker.last_cost.relative

        return run

    def exit_only(index):
        return lambda: (cascade.predict_exits(records, batch_size=bs, upto=index)[index], None)

    rows, p1 = [], {}  # p1: row name -> each question's P@1

    def add(name, run, cost=None):
        row, p1[name] = measure(name, run, records, args.repeats, cost)
        rows.append(row)

    def p1_difference(first: str, second: str) -> dict:
        """P@1 of ``first`` minus ``second`` on the same questions, with its 95% interval."""
        return paired_bootstrap(p1[first], p1[second]).as_dict()

    for layers in sorted(mono):
        add(f"monolithic-{layers}", plain(mono[layers]), cost=layers / depth)
    if args.reference:
        add("reference", plain(load(args.reference)), cost=1.0)
    for index, layer in enumerate(cascade.config.exits):
        add(f"cascade-exit-{layer}", exit_only(index), cost=layer / depth)
    for alpha in args.alphas:
        add(f"monolithic-{depth} (alpha {alpha} block)", plain(mono[depth]), cost=1.0)
        add(f"sequential alpha={alpha}", staged(sequential, alpha))
        add(f"cascade alpha={alpha}", staged(cascade, alpha, args.cascade_batch_size or bs))

    by_name = {row["model"]: row for row in rows}
    summary = {}
    for alpha in args.alphas:
        full = by_name[f"monolithic-{depth} (alpha {alpha} block)"]
        seq, cas = by_name[f"sequential alpha={alpha}"], by_name[f"cascade alpha={alpha}"]
        summary[str(alpha)] = {
            "cascade_cost": cas["relative_cost"],
            "cascade_speedup_vs_monolithic": round(
                cas["candidates_per_second"] / full["candidates_per_second"], 3
            ),
            "cascade_p@1_minus_monolithic": p1_difference(cas["model"], full["model"]),
            "sequential_cost_over_cascade_cost": round(
                seq["relative_cost"] / cas["relative_cost"], 3
            ),
            "cascade_speedup_vs_sequential": round(
                cas["candidates_per_second"] / seq["candidates_per_second"], 3
            ),
        }
        if args.reference:
            summary[str(alpha)]["cascade_p@1_minus_reference"] = p1_difference(
                cas["model"], "reference"
            )
    last_exit = f"cascade-exit-{cascade.config.exits[-1]}"
    summary["last_exit_p@1_minus_monolithic"] = p1_difference(last_exit, f"monolithic-{depth}")
    if args.reference:
        summary["last_exit_p@1_minus_reference"] = p1_difference(last_exit, "reference")
    report = {
        "benchmark": "cascade_table3",
        "data": args.data,
        "cascade": str(args.cascade or args.runs / "cascade" / "model"),
        "monolithic": f"{args.runs}/{prefix}*",
        "reference": str(args.reference) if args.reference else None,
        "split": args.split,
        "questions": len({r.question_id for r in records}),
        "candidates": len(records),
        "ties": "pessimistic",
        "threads": args.threads,
        "batch_size": bs,
        "cascade_batch_size": args.cascade_batch_size or bs,
        "device": args.device,
        "repeats": args.repeats,
        "machine": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} thr",
        "rows": rows,
        "summary": summary,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
