"""Unsupervised paragraph ranking on SQuAD v1.1 dev (the paper's "HotpotQA(u)" column).

For each question, rank all 2,067 dev paragraphs, and separately only the paragraphs of the
question's own article, with each model as pre-trained (no fine-tuning); report Recall@1/5/20
(one gold paragraph per question, so Recall@k is the hit rate). Models: ``bm25``, ``minilm``
(mean-pooled all-MiniLM-L6-v2, cosine), or saved Cross-Thought / MLM folders (Cross-Thought:
mean attention weight of all heads of all cross-sequence Transformers, each head's softmax
over the question itself and the candidate set as in the paper, or with
``--candidates-only`` over the candidate set alone, a deviation kept to reproduce earlier
measurements; MLM baselines: cosine of the special-token embedding). Prints JSON.
``--paired``: every model after the first also gets its Recall@k minus the first model's,
per question on the same questions, with a 95% paired bootstrap interval.

    python benchmarks/cross_thought_retrieval.py bm25 minilm runs/ct-1-64-cpu/model \\
        --questions 1000
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from ctxsent.evaluation.retrieval import (
    DEFAULT_KS,
    CrossThoughtScorer,
    evaluate_paragraph_ranking,
    scorer_from_spec,
    squad_paragraph_ranking,
)
from ctxsent.evaluation.significance import paired_bootstrap


def paired_recall(ranks: dict, first: dict) -> dict:
    """Per ranking and k: Recall@k (in points) minus ``first``'s, with its 95% interval."""
    differences = {}
    for name, gold_ranks in ranks.items():
        ours, theirs = np.array(gold_ranks), np.array(first[name])
        for k in DEFAULT_KS:
            difference = paired_bootstrap(100.0 * (ours < k), 100.0 * (theirs < k))
            differences[f"{name} recall@{k}"] = {
                key: round(value, 2) for key, value in difference.as_dict().items()
            }
    return differences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+", help="bm25, minilm, or model folders")
    parser.add_argument("--squad", default="../shared/data/squad/dev-v1.1.json.gz")
    parser.add_argument("--questions", type=int, help="seeded random subset of questions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--paired", action="store_true", help="compare each model with the first")
    parser.add_argument(
        "--candidates-only",
        action="store_true",
        help="Cross-Thought: leave the question out of the softmax (not the paper's ranking)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = squad_paragraph_ranking(args.squad, args.questions, args.seed)
    results, first_ranks = {}, None
    for spec in args.models:
        scorer = scorer_from_spec(spec, args.batch_size)
        if isinstance(scorer, CrossThoughtScorer):
            scorer.include_self = not args.candidates_only
        result = evaluate_paragraph_ranking(scorer, data, gold_ranks=args.paired)
        if args.paired:
            ranks = result.pop("gold_ranks")
            if first_ranks is None:
                first_ranks = ranks
            else:
                result[f"minus {args.models[0]}"] = paired_recall(ranks, first_ranks)
        results[spec] = result
        print(json.dumps({spec: result}), flush=True)
    print(json.dumps({"threads": args.threads, "seed": args.seed, "results": results}, indent=2))


if __name__ == "__main__":
    main()
