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
from collections.abc import Callable, Sequence

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
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.precision import resolve_precision
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import As2Record, clean, first_questions


def texts_of(records: Sequence[As2Record]) -> list[str]:
    """Each distinct question and candidate text once."""
    return list(dict.fromkeys([r.question for r in records] + [r.candidate for r in records]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="ctxsent bi-encoder folder")
    parser.add_argument("--st-model", required=True, help="its sentence-transformers export")
    parser.add_argument("--precisions", default="fp32,bf16", help="besides the default")
    add_speed_arguments(parser)
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
    default = ours.encoder.precision  # as loaded
    resolved = resolve_precision(default, ours.device)
    settings, fp32 = precision_contenders(default, resolved, args.precisions)

    def encoders(texts: list[str]) -> dict[str, Callable[[], np.ndarray]]:
        def run_ours(precision: str) -> Callable[[], np.ndarray]:
            def encode() -> np.ndarray:
                ours.encoder.precision = precision
                return ours.encode(texts, batch_size=args.batch_size)

            return encode

        return {
            "sentence_transformers": lambda: peer.encode(
                texts, batch_size=args.batch_size, convert_to_numpy=True
            ),
            **{name: run_ours(precision) for name, precision in settings.items()},
        }

    wall, cpu = interleaved_seconds(encoders(timed), args.rounds)
    texts = texts_of(scored)
    row = {text: i for i, text in enumerate(texts)}
    questions = np.array([row[r.question] for r in scored])
    candidates = np.array([row[r.candidate] for r in scored])
    embeddings = {name: encode() for name, encode in encoders(texts).items()}
    ids, labels = [r.question_id for r in scored], [r.label for r in scored]
    maps, ties = {}, {}
    for name, vectors in embeddings.items():
        scores = np.einsum("ij,ij->i", vectors[questions], vectors[candidates])
        maps[name] = as2_metrics(ids, labels, scores)["map"]
        ties[name] = tied_pairs(ids, scores)
    report = {
        "model": args.model,
        "st_model": args.st_model,
        "data": args.data,
        "split": args.split,
        "clean": True,
        "batch_size": args.batch_size,
        **machine(args.threads),
        "default_precision": default,
        "speed": {
            "questions": args.questions,
            "texts": len(timed),
            "rounds": args.rounds,
            **speed_report(wall, cpu, len(timed), "sentences", "sentence_transformers"),
        },
        "precision": {
            "questions": len(set(ids)),
            "pairs": len(scored),
            "texts": len(texts),
            **map_report(maps, fp32),
            "max_abs_embedding_diff_vs_sentence_transformers": {
                name: float(np.abs(e - embeddings["sentence_transformers"]).max())
                for name, e in embeddings.items()
            },
            "max_abs_embedding_diff_vs_fp32": {
                name: float(np.abs(e - embeddings[fp32]).max()) for name, e in embeddings.items()
            },
            "tied_pairs": ties,
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
