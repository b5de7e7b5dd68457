"""Ranker scoring speed: ctxsent (PyTorch) against its ONNX exports, fp32 and int8, on onnxruntime.

Exports the ranker (a cross-encoder or a bi-encoder) with :func:`ctxsent.export.export_onnx`
twice, fp32 and ``quantize="int8"``, loads each with :func:`ctxsent.onnx_runtime.load_onnx`
(the torch-free runtime), then scores the same records with all three in interleaved
rounds within one process, with the same thread count and batch size. Prints one JSON
object: median pairs/s of each, their ratio to torch, the largest score difference from
torch, and, on labelled data, the MAP each one's scores give (ties pessimistic, questions
without a positive dropped: "clean").

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/onnx_speed.py \
        --model runs/bi-encoder-eq10-100/model --data wikiqa:../shared/data/wikiqa --threads 1

``--model`` is ``tiny`` (random 2-layer width-32 BERT cross-encoder), ``minilm``
(all-MiniLM-L6-v2 with a fresh head: speed only) or anything ``ctxsent.load`` gives a
cross-encoder or bi-encoder ranker from (a saved folder, ``bi-encoder[:BACKBONE]``).
Without ``--data`` the records are each sample question against every sentence of the
sample document (speed only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import ctxsent
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.export import export_onnx
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.onnx_runtime import load_onnx
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import As2Record, clean
from ctxsent.text import split_sentences

EXAMPLES = Path(__file__).resolve().parents[1] / "src" / "ctxsent" / "examples"


def ranker_for(spec: str):
    if spec not in ("tiny", "minilm"):
        return ctxsent.load(spec)
    torch.manual_seed(0)
    if spec == "minilm":
        return CrossEncoderRanker.from_backbone("minilm")
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from ctxsent.models.backbones import resolve_backbone
    from ctxsent.models.transformer_ranker import RankerConfig

    config = BertConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone("minilm"))
    return CrossEncoderRanker(BertForSequenceClassification(config), tokenizer, RankerConfig())


def example_records() -> list[As2Record]:
    sentences = split_sentences((EXAMPLES / "lighthouse.txt").read_text())
    questions = [q for q in (EXAMPLES / "questions.txt").read_text().splitlines() if q.strip()]
    return [As2Record(q, q, s, 0) for q in questions for s in sentences]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--data", help="labelled AS2 data (e.g. wikiqa:DIR); default: examples")
    parser.add_argument("--split", default="test")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    records = clean(load_as2(args.data, args.split)) if args.data else example_records()
    ranker = ranker_for(args.model).eval()
    if hasattr(ranker, "precision"):
        ranker.precision = "fp32"
    with tempfile.TemporaryDirectory() as scratch:
        runners = {"torch_fp32": ranker}
        for quantize in ("none", "int8"):
            folder = export_onnx(ranker, Path(scratch) / quantize, quantize=quantize)
            name = "onnxruntime_" + ("fp32" if quantize == "none" else quantize)
            runners[name] = load_onnx(folder, threads=args.threads)
        scores = {name: model.predict(records, args.batch_size) for name, model in runners.items()}
        speeds: dict[str, list[float]] = {name: [] for name in runners}
        for _ in range(args.rounds):  # after the warm-up (and parity) call above
            for name, model in runners.items():
                start = time.perf_counter()
                model.predict(records, args.batch_size)
                speeds[name].append(len(records) / (time.perf_counter() - start))
    median = {name: round(statistics.median(values), 1) for name, values in speeds.items()}
    report = {
        "model": args.model,
        "kind": runners["onnxruntime_fp32"].config.kind,
        "data": f"{args.data} {args.split} (clean)" if args.data else "examples",
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "threads": args.threads,
        "pairs": len(records),
        "batch_size": args.batch_size,
        "rounds": args.rounds,
        "pairs_per_second": median,
        "ratio_vs_torch_fp32": {
            name: round(rate / median["torch_fp32"], 2) for name, rate in median.items()
        },
        "max_abs_score_diff_vs_torch_fp32": {
            name: float(np.max(np.abs(s - scores["torch_fp32"]))) for name, s in scores.items()
        },
    }
    if args.data:
        ids, labels = [r.question_id for r in records], [r.label for r in records]
        report["map"] = {
            name: round(as2_metrics(ids, labels, s)["map"], 4) for name, s in scores.items()
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
