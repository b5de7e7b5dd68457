"""Cross-encoder scoring speed: ctxsent (PyTorch) against its ONNX export on onnxruntime.

Exports the ranker with :func:`ctxsent.export.export_onnx`, then scores the same
pairs (each sample question against every sentence of the sample document) with
both, in interleaved rounds within one process, with the same thread count and
batch size. Prints one JSON object: median pairs/s of each, their ratio, and
the largest score difference.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/onnx_speed.py --model minilm

``--model`` is ``tiny`` (random 2-layer width-32 BERT), ``minilm`` (all-MiniLM-L6-v2 with
a fresh head: speed only) or a saved ctxsent cross-encoder folder.
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
from ctxsent.export import OnnxRanker, export_onnx
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.tasks.as2_records import As2Record
from ctxsent.text import split_sentences

EXAMPLES = Path(__file__).resolve().parents[1] / "src" / "ctxsent" / "examples"


def ranker_for(spec: str) -> CrossEncoderRanker:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    sentences = split_sentences((EXAMPLES / "lighthouse.txt").read_text())
    questions = [q for q in (EXAMPLES / "questions.txt").read_text().splitlines() if q.strip()]
    records = [As2Record(q, q, s, 0) for q in questions for s in sentences]
    ranker = ranker_for(args.model).eval()
    ranker.precision = "fp32"
    with tempfile.TemporaryDirectory() as scratch:
        onnx_ranker = OnnxRanker.from_folder(
            export_onnx(ranker, Path(scratch) / "onnx"), threads=args.threads
        )
        runners = {
            "torch_fp32": lambda: ranker.predict(records, args.batch_size),
            "onnxruntime_fp32": lambda: onnx_ranker.predict(records, args.batch_size),
        }
        scores = {name: run() for name, run in runners.items()}  # warm-up, and parity
        speeds: dict[str, list[float]] = {name: [] for name in runners}
        for _ in range(args.rounds):
            for name, run in runners.items():
                start = time.perf_counter()
                run()
                speeds[name].append(len(records) / (time.perf_counter() - start))
    median = {name: round(statistics.median(values), 1) for name, values in speeds.items()}
    report = {
        "model": args.model,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "threads": args.threads,
        "pairs": len(records),
        "batch_size": args.batch_size,
        "pairs_per_second": median,
        "onnx_over_torch": round(median["onnxruntime_fp32"] / median["torch_fp32"], 2),
        "max_abs_score_diff": float(
            np.max(np.abs(scores["torch_fp32"] - scores["onnxruntime_fp32"]))
        ),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
