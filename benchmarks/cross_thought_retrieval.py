"""Unsupervised paragraph ranking on SQuAD v1.1 dev (the paper's "HotpotQA(u)" column).

For each question, rank all 2,067 dev paragraphs, and separately only the paragraphs of the
question's own article, with each model as pre-trained (no fine-tuning); report Recall@1/5/20
(one gold paragraph per question, so Recall@k is the hit rate). Models: ``bm25``, ``minilm``
(mean-pooled all-MiniLM-L6-v2, cosine), or saved Cross-Thought / MLM folders (Cross-Thought:
mean attention weight of all heads of all cross-sequence Transformers, softmax over the
candidate set; MLM baselines: cosine of the special-token embedding). Prints JSON.

    python benchmarks/cross_thought_retrieval.py bm25 minilm runs/ct-1-64-cpu/model \\
        --questions 1000
"""

from __future__ import annotations

import argparse
import json

import torch

from ctxsent.evaluation.retrieval import (
    evaluate_paragraph_ranking,
    scorer_from_spec,
    squad_paragraph_ranking,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+", help="bm25, minilm, or model folders")
    parser.add_argument("--squad", default="../shared/data/squad/dev-v1.1.json.gz")
    parser.add_argument("--questions", type=int, help="seeded random subset of questions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = squad_paragraph_ranking(args.squad, args.questions, args.seed)
    results = {}
    for spec in args.models:
        results[spec] = evaluate_paragraph_ranking(scorer_from_spec(spec, args.batch_size), data)
        print(json.dumps({spec: results[spec]}), flush=True)
    print(json.dumps({"threads": args.threads, "seed": args.seed, "results": results}, indent=2))


if __name__ == "__main__":
    main()
