"""Bi-encoder ``encode`` speed and precision: ctxsent against ``SentenceTransformer.encode``.

The same trained weights twice: a ctxsent ``bi-encoder`` folder and its
sentence-transformers export (``ctxsent export MODEL --to sentence-transformers``),
embedding each distinct question and candidate text once, with the same batch size.

* Speed, on the texts of the first ``--questions`` clean questions: interleaved rounds
  within one process after a warm-up (machine noise hits all alike); each one's median
  sentences/s and its ratio to sentence-transformers.
* Precision, on every clean question of the split (``--map-questions`` to cut it): each
  encoder once; the largest embedding difference from sentence-transformers and from
  ctxsent fp32, and the MAP of the cosine scores (ties pessimistic) with its difference
  from fp32.

ctxsent runs in its default precision (as loaded) and, where they differ from it, in
each of ``--precisions`` (fp32, bf16 autocast).

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/bi_encoder_speed.py \
        --model runs/bi-encoder-eq10-100/model --st-model runs/bi-encoder-eq10-100-st \
        --data wikiqa:../shared/data/wikiqa --split test --questions 60 --threads 1
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

import ctxsent
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.precision import cpu_has_native_bf16, resolve_precision
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import As2Record, clean, first_questions

#: MAP a precision may lose against fp32 and still be the default (issue 23).
MAP_TOLERANCE = 0.005


def precision_of(ranker: BiEncoderRanker) -> str:
    """The concrete precision ``encode`` runs in now."""
    return resolve_precision(ranker.encoder.precision, ranker.device)


def set_precision(ranker: BiEncoderRanker, precision: str) -> None:
    ranker.encoder.precision = precision


def texts_of(records: Sequence[As2Record]) -> list[str]:
    """Each distinct question and candidate text once."""
    return list(dict.fromkeys([r.question for r in records] + [r.candidate for r in records]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="ctxsent bi-encoder folder")
    parser.add_argument("--st-model", required=True, help="its sentence-transformers export")
    parser.add_argument("--data", default="wikiqa:../shared/data/wikiqa")
    parser.add_argument("--split", default="test")
    parser.add_argument("--questions", type=int, default=60, help="speed: the first N questions")
    parser.add_argument("--map-questions", type=int, help="precision: the first N (default: all)")
    parser.add_argument("--precisions", default="fp32,bf16", help="besides the default")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from sentence_transformers import SentenceTransformer

    everything = clean(load_as2(args.data, args.split))
    timed = texts_of(first_questions(everything, args.questions))
    scored = first_questions(everything, args.map_questions) if args.map_questions else everything

    ours = ctxsent.load(args.model)
    if not isinstance(ours, BiEncoderRanker):
        raise SystemExit(f"{args.model}: expected a ctxsent bi-encoder, got {ours.kind}")
    peer = SentenceTransformer(args.st_model, device="cpu")
    default = precision_of(ours)  # as loaded
    settings = {f"ctxsent_default_{default}": getattr(ours, "precision", default)}
    for precision in args.precisions.split(","):
        if precision != default:  # the default's own path runs once
            settings[f"ctxsent_{precision}"] = precision
    fp32 = "ctxsent_fp32" if "ctxsent_fp32" in settings else f"ctxsent_default_{default}"

    def encoders(texts: list[str]) -> dict[str, Callable[[], np.ndarray]]:
        def run_ours(precision: str) -> Callable[[], np.ndarray]:
            def encode() -> np.ndarray:
                set_precision(ours, precision)
                return ours.encode(texts, batch_size=args.batch_size)

            return encode

        return {
            "sentence_transformers": lambda: peer.encode(
                texts, batch_size=args.batch_size, convert_to_numpy=True
            ),
            **{name: run_ours(precision) for name, precision in settings.items()},
        }

    contenders = encoders(timed)
    for encode in contenders.values():  # warm-up
        encode()
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, encode in contenders.items():
            start = time.perf_counter()
            encode()
            seconds[name].append(time.perf_counter() - start)

    texts = texts_of(scored)
    row = {text: i for i, text in enumerate(texts)}
    questions = np.array([row[r.question] for r in scored])
    candidates = np.array([row[r.candidate] for r in scored])
    embeddings = {name: encode() for name, encode in encoders(texts).items()}
    ids, labels = [r.question_id for r in scored], [r.label for r in scored]
    maps = {}
    for name, vectors in embeddings.items():
        scores = np.einsum("ij,ij->i", vectors[questions], vectors[candidates])
        maps[name] = as2_metrics(ids, labels, scores)["map"]
    rates = {name: len(timed) / statistics.median(s) for name, s in seconds.items()}
    report = {
        "model": args.model,
        "st_model": args.st_model,
        "data": args.data,
        "split": args.split,
        "clean": True,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpu_native_bf16": cpu_has_native_bf16(),
        "default_precision": default,
        "speed": {
            "questions": args.questions,
            "texts": len(timed),
            "rounds": args.rounds,
            "sentences_per_second": {name: round(rate, 1) for name, rate in rates.items()},
            "seconds_per_round": {n: [round(x, 2) for x in s] for n, s in seconds.items()},
            "ratio_vs_sentence_transformers": {
                name: round(rate / rates["sentence_transformers"], 3)
                for name, rate in rates.items()
            },
        },
        "precision": {
            "questions": len(set(ids)),
            "pairs": len(scored),
            "texts": len(texts),
            "max_abs_embedding_diff_vs_sentence_transformers": {
                name: float(np.abs(e - embeddings["sentence_transformers"]).max())
                for name, e in embeddings.items()
            },
            "max_abs_embedding_diff_vs_fp32": {
                name: float(np.abs(e - embeddings[fp32]).max()) for name, e in embeddings.items()
            },
            "map": {name: round(value, 4) for name, value in maps.items()},
            "map_minus_fp32": {name: round(value - maps[fp32], 4) for name, value in maps.items()},
            f"within_{MAP_TOLERANCE}_of_fp32": {
                name: abs(value - maps[fp32]) <= MAP_TOLERANCE for name, value in maps.items()
            },
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
