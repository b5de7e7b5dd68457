"""Bi-encoder ``encode`` speed and precision: ctxsent against ``SentenceTransformer.encode``.

The same trained weights twice: a ctxsent ``bi-encoder`` folder and its
sentence-transformers export (``ctxsent export MODEL --to sentence-transformers``).
Both embed the same texts (every distinct question and candidate of the AS2 split)
with the same batch size, in interleaved rounds within one process after a warm-up
(machine noise hits all alike). The JSON gives each one's median sentences/s and
ratio to sentence-transformers, the largest embedding difference from
sentence-transformers and from ctxsent fp32, and the MAP of the cosine scores each
one's embeddings give (ties pessimistic) with its difference from fp32.

ctxsent runs in its default precision (as loaded) and, where that differs, in fp32 and
bf16 autocast (``--precisions``).

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/bi_encoder_speed.py \
        --model runs/bi-encoder-eq10-100/model --st-model runs/bi-encoder-eq10-100-st \
        --data wikiqa:../shared/data/wikiqa --split test --threads 1
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

import ctxsent
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.precision import cpu_has_native_bf16, resolve_precision
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import clean, first_questions


def precision_of(ranker: BiEncoderRanker) -> str:
    """The concrete precision ``encode`` runs in now: the ranker's ``precision`` setting if it
    has one, else the encoder's ``bf16`` switch."""
    if hasattr(ranker, "precision"):
        return resolve_precision(ranker.precision, ranker.device)
    return "bf16" if ranker.encoder.bf16 else "fp32"


def set_precision(ranker: BiEncoderRanker, precision: str) -> None:
    if hasattr(ranker, "precision"):
        ranker.precision = precision
    else:
        ranker.encoder.bf16 = precision == "bf16"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="ctxsent bi-encoder folder")
    parser.add_argument("--st-model", required=True, help="its sentence-transformers export")
    parser.add_argument("--data", default="wikiqa:../shared/data/wikiqa")
    parser.add_argument("--split", default="test")
    parser.add_argument("--questions", type=int, help="only the first N clean questions")
    parser.add_argument("--precisions", default="fp32,bf16", help="besides the default")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from sentence_transformers import SentenceTransformer

    records = clean(load_as2(args.data, args.split))
    if args.questions:
        records = first_questions(records, args.questions)
    texts = list(dict.fromkeys([r.question for r in records] + [r.candidate for r in records]))
    row = {text: i for i, text in enumerate(texts)}
    questions = np.array([row[r.question] for r in records])
    candidates = np.array([row[r.candidate] for r in records])

    ours = ctxsent.load(args.model)
    if not isinstance(ours, BiEncoderRanker):
        raise SystemExit(f"{args.model}: expected a ctxsent bi-encoder, got {ours.kind}")
    peer = SentenceTransformer(args.st_model, device="cpu")
    default = precision_of(ours)  # as loaded
    default_setting = getattr(ours, "precision", default)

    def run_ours(precision: str) -> Callable[[], np.ndarray]:
        def encode() -> np.ndarray:
            set_precision(ours, precision)
            return ours.encode(texts, batch_size=args.batch_size)

        return encode

    contenders = {
        "sentence_transformers": lambda: peer.encode(
            texts, batch_size=args.batch_size, convert_to_numpy=True
        ),
        f"ctxsent_default_{default}": run_ours(default_setting),
    }
    for precision in args.precisions.split(","):
        if precision != default:  # the default's own path is timed once
            contenders[f"ctxsent_{precision}"] = run_ours(precision)
    fp32 = "ctxsent_fp32" if "ctxsent_fp32" in contenders else f"ctxsent_default_{default}"
    for encode in contenders.values():  # warm-up
        encode()
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    embeddings: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, encode in contenders.items():
            start = time.perf_counter()
            embeddings[name] = encode()
            seconds[name].append(time.perf_counter() - start)

    ids, labels = [r.question_id for r in records], [r.label for r in records]
    maps = {}
    for name, vectors in embeddings.items():
        scores = np.einsum("ij,ij->i", vectors[questions], vectors[candidates])
        maps[name] = as2_metrics(ids, labels, scores)["map"]
    rates = {name: len(texts) / statistics.median(s) for name, s in seconds.items()}
    report = {
        "model": args.model,
        "st_model": args.st_model,
        "data": args.data,
        "split": args.split,
        "clean": True,
        "questions": len(set(ids)),
        "pairs": len(records),
        "texts": len(texts),
        "batch_size": args.batch_size,
        "threads": args.threads,
        "rounds": args.rounds,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpu_native_bf16": cpu_has_native_bf16(),
        "default_precision": default,
        "sentences_per_second": {name: round(rate, 1) for name, rate in rates.items()},
        "seconds_per_round": {name: [round(x, 2) for x in s] for name, s in seconds.items()},
        "ratio_vs_sentence_transformers": {
            name: round(rate / rates["sentence_transformers"], 3) for name, rate in rates.items()
        },
        "max_abs_embedding_diff_vs_sentence_transformers": {
            name: float(np.abs(e - embeddings["sentence_transformers"]).max())
            for name, e in embeddings.items()
        },
        "max_abs_embedding_diff_vs_ctxsent_fp32": {
            name: float(np.abs(e - embeddings[fp32]).max()) for name, e in embeddings.items()
        },
        "map": {name: round(value, 4) for name, value in maps.items()},
        "map_minus_fp32": {name: round(value - maps[fp32], 4) for name, value in maps.items()},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
