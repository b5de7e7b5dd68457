"""Cross-encoder inference speed and precision: ctxsent ``predict`` against sentence-transformers.

Both score the same pairs with the same saved weights and batch size.

* Speed, on the first ``--questions`` clean questions: interleaved rounds within one
  process after a warm-up (so machine noise hits all alike); the median pairs/s of each
  and its ratio to sentence-transformers ``CrossEncoder.predict``.
* Precision, on every clean question of the split (``--map-questions`` to cut it): each
  scorer once; its MAP (ties pessimistic), its MAP minus ctxsent fp32's, and the largest
  score difference from fp32 and from sentence-transformers.

ctxsent runs in its default precision (as loaded), in each other of ``--precisions``
(torch autocast bf16, torch dynamic int8, ``auto``), and exported to ONNX, fp32 and int8
(``--onnx``: onnxruntime dynamic quantisation), run by the torch-free ``OnnxRanker``.

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python \
        benchmarks/as2_inference_speed.py --model runs/ce-wikiqa-100/model \
        --data wikiqa:../shared/data/wikiqa --split test --questions 60 --threads 1
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from speed_common import (
    add_speed_arguments,
    interleaved_seconds,
    machine,
    map_report,
    precision_contenders,
    speed_report,
)

import ctxsent
from ctxsent.evaluation.as2_metrics import as2_metrics, tied_pairs
from ctxsent.export import export_onnx
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.precision import resolve_precision
from ctxsent.onnx_runtime import load_onnx
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import As2Record, clean, first_questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="pairwise ctxsent cross-encoder folder (default: fresh)")
    parser.add_argument("--precisions", default="fp32,bf16,int8", help="besides the default")
    parser.add_argument("--onnx", default="fp32,int8", help="ONNX exports ('' for none)")
    add_speed_arguments(parser)
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
        default = ours.precision  # as loaded
        resolved = resolve_precision(default, ours.device)
        settings, fp32 = precision_contenders(default, resolved, args.precisions)
        exports = {}
        for name in filter(None, args.onnx.split(",")):
            quantize = "none" if name == "fp32" else name
            folder = export_onnx(ours, Path(scratch) / name, quantize=quantize)
            exports[f"onnx_{name}"] = load_onnx(folder, threads=args.threads)

        def scorers(records: Sequence[As2Record]) -> dict[str, Callable[[], np.ndarray]]:
            pairs = [(r.question, r.candidate) for r in records]

            def run_ours(precision: str):
                def score() -> np.ndarray:
                    ours.precision = precision
                    return ours.predict(records, batch_size=args.batch_size)

                return score

            def run_onnx(runner):
                return lambda: runner.predict(records, args.batch_size)

            return {
                "sentence_transformers": lambda: peer.predict(
                    pairs, batch_size=args.batch_size, activation_fn=identity
                ),
                **{name: run_ours(precision) for name, precision in settings.items()},
                **{name: run_onnx(runner) for name, runner in exports.items()},
            }

        wall, cpu = interleaved_seconds(scorers(timed), args.rounds)
        scores = {name: score() for name, score in scorers(scored).items()}

    ids, labels = [r.question_id for r in scored], [r.label for r in scored]
    maps = {name: as2_metrics(ids, labels, s)["map"] for name, s in scores.items()}
    report = {
        "model": args.model,
        "data": args.data,
        "split": args.split,
        "clean": True,
        "batch_size": args.batch_size,
        **machine(args.threads),
        "default_precision": default,
        "speed": {
            "questions": len({r.question_id for r in timed}),
            "pairs": len(timed),
            "rounds": args.rounds,
            **speed_report(wall, cpu, len(timed), "pairs", "sentence_transformers"),
        },
        "precision": {
            "questions": len(set(ids)),
            "pairs": len(scored),
            **map_report(maps, fp32),
            "max_abs_score_diff_vs_sentence_transformers": {
                name: float(np.abs(s - scores["sentence_transformers"]).max())
                for name, s in scores.items()
            },
            "max_abs_score_diff_vs_fp32": {
                name: float(np.abs(s - scores[fp32]).max()) for name, s in scores.items()
            },
            "tied_pairs": {name: tied_pairs(ids, s) for name, s in scores.items()},
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
