"""Retrieve-then-rerank pipelines against each of their stages alone, on WikiQA test-clean.

Every contender scores every clean test pair (237 questions, 2,341 pairs) in one
``predict`` call, as ``ctxsent eval as2`` does, on one thread; the JSON gives MAP, MRR,
P@1 and nDCG@10 (:func:`~ctxsent.evaluation.as2_metrics.as2_metrics`: macro averages over
questions, ties pessimistic) and throughput (all pairs, and questions, per second of wall
time, and pairs per second of the process's CPU time, which a loaded shared machine
disturbs less; medians of ``--rounds`` timed passes taken in interleaved rounds after a
warm-up on 10 questions).
Pipelines (:mod:`ctxsent.models.pipeline`) share the stage models loaded once; the first
one is also built as a folder with ``build_pipeline`` and loaded with ``ctxsent.load``,
and its scores are checked against the in-memory pipeline's. A pipeline's ratios compare
it with its reranker alone: pairs/s (wall and CPU), and MAP minus the reranker's.

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/pipeline_wikiqa.py \\
        --reranker runs/ce-wikiqa-100/model --bi-encoder runs/bi-encoder-eq10-100/model
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time

import numpy as np
import torch

import ctxsent
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.models.pipeline import PipelineRanker
from ctxsent.resolver import build_pipeline
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import clean, first_questions, group_by_question


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="wikiqa:/work/shared/data/wikiqa")
    parser.add_argument("--split", default="test")
    parser.add_argument("--reranker", required=True, help="a saved cross-encoder (or any ranker)")
    parser.add_argument("--bi-encoder", required=True, help="a trained bi-encoder folder")
    parser.add_argument("--top-k", default="3,5", help="candidates kept per question, e.g. 3,5")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--questions", type=int, help="only the first N questions (a smoke test)")
    args = parser.parse_args()
    torch.set_num_threads(1)

    records = clean(load_as2(args.data, args.split))
    if args.questions:
        records = first_questions(records, args.questions)
    questions = len(group_by_question(records))
    stages = {
        "bm25": ctxsent.load("bm25"),
        "bi-encoder": ctxsent.load("bi-encoder"),
        "bi-encoder-trained": ctxsent.load(args.bi_encoder),
        "reranker": ctxsent.load(args.reranker),
    }
    hybrid = [stages["bm25"], stages["bi-encoder-trained"]]
    contenders = dict(stages)
    tops = [int(k) for k in args.top_k.split(",")]
    for k in tops:
        contenders[f"bm25 > reranker @{k}"] = PipelineRanker(stages["bm25"], stages["reranker"], k)
        contenders[f"bi-encoder-trained > reranker @{k}"] = PipelineRanker(
            stages["bi-encoder-trained"], stages["reranker"], k
        )
        contenders[f"bm25+bi-encoder-trained (rrf) > reranker @{k}"] = PipelineRanker(
            hybrid, stages["reranker"], k
        )
        contenders[f"bm25 > bi-encoder-trained @{k}"] = PipelineRanker(
            stages["bm25"], stages["bi-encoder-trained"], k
        )

    warm_up = first_questions(records, 10)
    for model in contenders.values():
        model.predict(warm_up, batch_size=args.batch_size)
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    cpu_seconds: dict[str, list[float]] = {name: [] for name in contenders}
    scores: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, model in contenders.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            scores[name] = model.predict(records, batch_size=args.batch_size)
            seconds[name].append(time.perf_counter() - start)
            cpu_seconds[name].append(time.process_time() - cpu_start)

    with tempfile.TemporaryDirectory() as scratch:
        spec = f"bm25+{args.bi_encoder}"
        folder = build_pipeline(spec, args.reranker, tops[0], f"{scratch}/pipeline")
        from_folder = ctxsent.load(folder).predict(records, batch_size=args.batch_size)
    first_pipeline = f"bm25+bi-encoder-trained (rrf) > reranker @{tops[0]}"

    ids, labels = [r.question_id for r in records], [r.label for r in records]
    results = {}
    for name, times in seconds.items():
        metrics = as2_metrics(ids, labels, scores[name])
        median, cpu = statistics.median(times), statistics.median(cpu_seconds[name])
        results[name] = {
            **{m: round(metrics[m], 4) for m in ("map", "mrr", "p@1", "ndcg@10")},
            "seconds": round(median, 2),
            "cpu_seconds": round(cpu, 2),
            "pairs_per_second": round(len(records) / median, 1),
            "questions_per_second": round(questions / median, 2),
            "pairs_per_cpu_second": round(len(records) / cpu, 1),
        }
    for name, model in contenders.items():
        if isinstance(model, PipelineRanker):
            alone = next(s for s, m in stages.items() if m is model.reranker)
            results[name]["reranked_pairs"] = sum(
                min(model.top_k, len(group)) for group in group_by_question(records).values()
            )
            results[name]["vs_reranker_alone"] = {
                "reranker": alone,
                **{
                    f"{rate}_ratio": round(results[name][rate] / results[alone][rate], 3)
                    for rate in ("pairs_per_second", "pairs_per_cpu_second")
                },
                "map_difference": round(results[name]["map"] - results[alone]["map"], 4),
            }
    report = {
        "data": args.data,
        "split": args.split,
        "clean": True,
        "ties": "pessimistic",
        "questions": questions,
        "pairs": len(records),
        "models": {"reranker": args.reranker, "bi-encoder-trained": args.bi_encoder},
        "fusion": "rrf, k=60",
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "rounds": args.rounds,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "saved_folder_scores_identical": {
            first_pipeline: bool(np.array_equal(from_folder, scores[first_pipeline]))
        },
        "results": results,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
