"""Each cascade exit used alone (alpha 0, Cascade paper Table 2) on a slice of questions.

Prints one JSON line per model: MAP and P@1 of every exit on the clean questions
``--skip``+1 .. ``--skip``+``--questions`` of a split. With ``--skip 30`` on a dev split
fine-tuned with ``--dev-questions 30`` these are questions model selection did not see.
A one-exit ("pooled-K") model gives one row.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cascade_exits.py \
        --data squad-as2:runs/squad-as2-small --split dev --skip 30 --questions 60 MODEL...
"""

from __future__ import annotations

import argparse
import json

import torch

import ctxsent
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.models.cascade import CascadeRanker
from ctxsent.tasks.as2_load import evaluation_records
from ctxsent.tasks.as2_records import first_questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="saved cascade model folders")
    parser.add_argument("--data", default="squad-as2:runs/squad-as2-small")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--skip", type=int, default=30, help="questions to leave out first")
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    records, _ = evaluation_records(args.data, args.split, clean_questions=True)
    records = first_questions(records, args.questions, skip=args.skip)
    question_ids, labels = [r.question_id for r in records], [r.label for r in records]
    for path in args.models:
        model = ctxsent.load(path)
        if not isinstance(model, CascadeRanker):
            parser.error(f"{path} is not a cascade model (train one with --cascade)")
        exits = model.predict_exits(records)
        rows = []
        for logits in exits:
            metrics = as2_metrics(question_ids, labels, logits)
            rows.append({"map": round(metrics["map"], 3), "p@1": round(metrics["p@1"], 3)})
        summary = {"questions": len({*question_ids}), "pairs": len(records), "exits": rows}
        print(json.dumps({"model": path, **summary}), flush=True)


if __name__ == "__main__":
    main()
