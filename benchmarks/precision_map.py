"""What an inference precision costs each trained ranker: MAP against fp32, ties, CPU time.

Every ``--model`` (a cross-encoder, bi-encoder, cascade or pipeline folder, or any
``ctxsent.load`` spec) scores every clean question of the split once in fp32 and once in
each other of ``--precisions`` (``auto`` resolves on this machine, see ``resolved``). Per
precision: MAP (ties pessimistic) and its difference from fp32, whether that is within
:data:`MAP_TOLERANCE`, the largest score change, the pairs of one question's candidates
with equal scores (``tied_pairs``) and how many of them fp32 tells apart
(``ties_not_in_fp32``), the MAP with those ties broken in fp32's order (so
``map - map_ties_in_fp32_order`` is the part of the loss that ties make) and the CPU
seconds of the scoring. ``--round-scores`` adds the bf16 scores rounded to bf16
(``bf16_rounded_scores``): for a cross-encoder, whose score is its logit, what a head
running in bf16 gave before heads were kept in fp32.

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/precision_map.py \
        --model runs/ce-wikiqa-100/model --model runs/cascade-wikiqa-100/model \
        --data wikiqa:../shared/data/wikiqa --threads 1
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from speed_common import MAP_TOLERANCE, machine

import ctxsent
from ctxsent.evaluation.as2_metrics import as2_metrics, tied_pairs
from ctxsent.models.precision import effective_precision, set_precision
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import clean


def fp32_order_breaks_ties(scores: np.ndarray, fp32: np.ndarray) -> np.ndarray:
    """Scores that keep ``scores``' order and break its ties by ``fp32`` (ranks, 0 = worst)."""
    ranks = np.empty(len(scores))
    ranks[np.lexsort((fp32, scores))] = np.arange(len(scores))
    return ranks


def tied_in_both(ids: list[str], scores: np.ndarray, fp32: np.ndarray) -> int:
    """Pairs of one question's candidates tied in ``scores`` and in ``fp32`` too."""
    return tied_pairs([f"{q}\t{s!r}" for q, s in zip(ids, scores, strict=True)], fp32)


def compare(ids: list[str], labels: list[int], scores: np.ndarray, fp32: np.ndarray) -> dict:
    """MAP of ``scores`` against ``fp32``'s, their largest change, and their ties."""
    value, reference = (as2_metrics(ids, labels, s)["map"] for s in (scores, fp32))
    ties = tied_pairs(ids, scores)
    return {
        "map": round(value, 4),
        "map_minus_fp32": round(value - reference, 4),
        f"within_{MAP_TOLERANCE}_of_fp32": abs(value - reference) <= MAP_TOLERANCE,
        "max_abs_score_diff_vs_fp32": float(np.abs(scores - fp32).max()),
        "tied_pairs": ties,
        "ties_not_in_fp32": ties - tied_in_both(ids, scores, fp32),
        "map_ties_in_fp32_order": round(
            as2_metrics(ids, labels, fp32_order_breaks_ties(scores, fp32))["map"], 4
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", required=True, help="repeat for several")
    parser.add_argument("--data", default="wikiqa:../shared/data/wikiqa")
    parser.add_argument("--split", default="test")
    parser.add_argument("--precisions", default="bf16,auto", help="besides fp32")
    parser.add_argument(
        "--round-scores", action="store_true", help="add the bf16 scores rounded to bf16"
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    records = clean(load_as2(args.data, args.split))
    ids, labels = [r.question_id for r in records], [r.label for r in records]
    report = {
        "data": args.data,
        "split": args.split,
        "clean": True,
        "questions": len(set(ids)),
        "pairs": len(records),
        **machine(args.threads),
        "models": {},
    }
    for spec in args.model:
        model = ctxsent.load(spec)
        scores, rows = {}, {}
        for precision in ["fp32", *filter(None, args.precisions.split(","))]:
            set_precision(model, precision)
            start = time.process_time()
            scores[precision] = np.asarray(model.predict(records, batch_size=args.batch_size))
            rows[precision] = {
                "resolved": effective_precision(model),
                "cpu_seconds": round(time.process_time() - start, 1),
            }
        if args.round_scores and "bf16" in scores:
            rounded = torch.from_numpy(scores["bf16"]).bfloat16().double().numpy()
            scores["bf16_rounded_scores"], rows["bf16_rounded_scores"] = rounded, {}
        for name, row in rows.items():
            row.update(compare(ids, labels, scores[name].astype(np.float64), scores["fp32"]))
        report["models"][spec] = {"kind": type(model).__name__, "precisions": rows}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
