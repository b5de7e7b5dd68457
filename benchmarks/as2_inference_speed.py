"""Cross-encoder inference speed and precision: ctxsent ``predict`` against sentence-transformers.

Both score the same pairs with the same saved weights and batch size.

* Speed, on the first ``--questions`` clean questions: interleaved rounds within one
  process after a warm-up (so machine noise hits all alike); the median pairs/s of each
  and its ratio to sentence-transformers ``CrossEncoder.predict``.
* Precision, on every clean question of the split (``--map-questions`` to cut it): each
  scorer once; its MAP (ties pessimistic), its MAP minus ctxsent fp32's, and the largest
  score difference from fp32 and from sentence-transformers. ``precision="auto"`` (the
  default) is scored under its own name and says what it resolved to on this machine.

ctxsent runs in each of ``--precisions`` (``auto`` first: the default path).

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python \
        benchmarks/as2_inference_speed.py --model runs/ce-wikiqa-100/model \
        --data wikiqa:../shared/data/wikiqa --split test --questions 60 --threads 1
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

import ctxsent
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.precision import cpu_has_native_bf16, resolve_precision
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import As2Record, clean, first_questions

#: MAP a precision may lose against fp32 and still be the default (issue 23).
MAP_TOLERANCE = 0.005


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="pairwise ctxsent cross-encoder folder (default: fresh)")
    parser.add_argument("--data", default="wikiqa:../shared/data/wikiqa")
    parser.add_argument("--split", default="test")
    parser.add_argument("--questions", type=int, default=60, help="speed: the first N questions")
    parser.add_argument("--map-questions", type=int, help="precision: the first N (default: all)")
    parser.add_argument("--precisions", default="auto,fp32,bf16,int8")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from sentence_transformers import CrossEncoder

    everything = clean(load_as2(args.data, args.split))
    timed = first_questions(everything, args.questions)
    scored = first_questions(everything, args.map_questions) if args.map_questions else everything
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.model
        if folder is None:
            folder = CrossEncoderRanker.from_backbone().save_pretrained(f"{scratch}/model")
        ours = ctxsent.load(folder)
        if ours.contextual:
            raise SystemExit("use a pairwise model: sentence-transformers feeds two segments")
        peer = CrossEncoder(str(folder), device="cpu")
        identity = torch.nn.Identity()
        default = resolve_precision(ours.precision, ours.device)  # as loaded: "auto"

        def scorers(records: Sequence[As2Record]) -> dict[str, Callable[[], np.ndarray]]:
            pairs = [(r.question, r.candidate) for r in records]

            def run_ours(precision: str):
                def score() -> np.ndarray:
                    ours.precision = precision
                    return ours.predict(records, batch_size=args.batch_size)

                return score

            return {
                "sentence_transformers": lambda: peer.predict(
                    pairs, batch_size=args.batch_size, activation_fn=identity
                ),
                **{f"ctxsent_{p}": run_ours(p) for p in args.precisions.split(",")},
            }

        contenders = scorers(timed)
        for score in contenders.values():  # warm-up (and the one-off int8 quantisation)
            score()
        seconds: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, score in contenders.items():
                start = time.perf_counter()
                score()
                seconds[name].append(time.perf_counter() - start)
        scores = {name: score() for name, score in scorers(scored).items()}

    rates = {name: len(timed) / statistics.median(s) for name, s in seconds.items()}
    ids, labels = [r.question_id for r in scored], [r.label for r in scored]
    maps = {name: as2_metrics(ids, labels, s)["map"] for name, s in scores.items()}
    fp32 = scores.get("ctxsent_fp32")
    report = {
        "model": args.model,
        "data": args.data,
        "split": args.split,
        "clean": True,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpu_native_bf16": cpu_has_native_bf16(),
        "auto_resolves_to": default,
        "speed": {
            "questions": len({r.question_id for r in timed}),
            "pairs": len(timed),
            "rounds": args.rounds,
            "pairs_per_second": {name: round(rate, 1) for name, rate in rates.items()},
            "seconds_per_round": {n: [round(x, 2) for x in s] for n, s in seconds.items()},
            "ratio_vs_sentence_transformers": {
                name: round(rate / rates["sentence_transformers"], 3)
                for name, rate in rates.items()
            },
        },
        "precision": {
            "questions": len(set(ids)),
            "pairs": len(scored),
            "map": {name: round(value, 4) for name, value in maps.items()},
            "max_abs_score_diff_vs_sentence_transformers": {
                name: float(np.abs(s - scores["sentence_transformers"]).max())
                for name, s in scores.items()
            },
        },
    }
    if fp32 is not None:
        report["precision"]["map_minus_fp32"] = {
            name: round(value - maps["ctxsent_fp32"], 4) for name, value in maps.items()
        }
        report["precision"]["max_abs_score_diff_vs_fp32"] = {
            name: float(np.abs(s - fp32).max()) for name, s in scores.items()
        }
        report["precision"][f"within_{MAP_TOLERANCE}_of_fp32"] = {
            name: abs(value - maps["ctxsent_fp32"]) <= MAP_TOLERANCE for name, value in maps.items()
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
