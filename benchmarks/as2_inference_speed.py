"""Cross-encoder inference speed: ctxsent ``predict`` against sentence-transformers.

Both score the same pairs with the same saved weights and batch size, in
interleaved rounds within one process (so machine noise hits both alike);
the JSON reports the median pairs/s of each, their ratios, the largest score
difference, and the MAP each one's scores give (ties pessimistic).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/as2_inference_speed.py \
        --model runs/wikiqa-pairwise/model --data wikiqa:../shared/data/wikiqa --split test \
        --questions 60
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
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import clean, first_questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="pairwise ctxsent cross-encoder folder (default: fresh)")
    parser.add_argument("--data", default="wikiqa:../shared/data/wikiqa")
    parser.add_argument("--split", default="test")
    parser.add_argument("--questions", type=int, help="only the first N questions (whole)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from sentence_transformers import CrossEncoder

    records = clean(load_as2(args.data, args.split))
    if args.questions:
        records = first_questions(records, args.questions)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.model
        if folder is None:
            folder = CrossEncoderRanker.from_backbone().save_pretrained(f"{scratch}/model")
        ours = ctxsent.load(folder)
        if ours.contextual:
            raise SystemExit("use a pairwise model: sentence-transformers feeds two segments")
        peer = CrossEncoder(str(folder), device="cpu")
        pairs = [(r.question, r.candidate) for r in records]
        identity = torch.nn.Identity()

        def run_peer() -> np.ndarray:
            return peer.predict(pairs, batch_size=args.batch_size, activation_fn=identity)

        def run_ours(precision: str):
            def score() -> np.ndarray:
                ours.precision = precision
                return ours.predict(records, batch_size=args.batch_size)

            return score

        contenders = {
            "sentence_transformers": run_peer,
            "ctxsent_fp32": run_ours("fp32"),
            "ctxsent_int8": run_ours("int8"),
        }
        for score in contenders.values():  # warm-up (and the one-off int8 quantisation)
            score()
        seconds: dict[str, list[float]] = {name: [] for name in contenders}
        scores: dict[str, np.ndarray] = {}
        for _ in range(args.rounds):
            for name, score in contenders.items():
                start = time.perf_counter()
                scores[name] = score()
                seconds[name].append(time.perf_counter() - start)

    ids, labels = [r.question_id for r in records], [r.label for r in records]
    rates = {name: len(pairs) / statistics.median(s) for name, s in seconds.items()}
    report = {
        "data": args.data,
        "split": args.split,
        "questions": len({r.question_id for r in records}),
        "pairs": len(pairs),
        "batch_size": args.batch_size,
        "threads": args.threads,
        "rounds": args.rounds,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "pairs_per_second": {name: round(rate, 1) for name, rate in rates.items()},
        "ratio_vs_sentence_transformers": {
            name: round(rate / rates["sentence_transformers"], 3) for name, rate in rates.items()
        },
        "max_abs_score_diff_vs_sentence_transformers": {
            name: float(np.abs(s - scores["sentence_transformers"]).max())
            for name, s in scores.items()
        },
        "map": {name: round(as2_metrics(ids, labels, s)["map"], 4) for name, s in scores.items()},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
