"""Bi-encoder listwise training speed and memory: ctxsent against sentence-transformers.

ctxsent: ``finetune_as2`` with ``As2RankerSpec(arch="bi-encoder")`` and the Eq. 10 recipe
(``BI_ENCODER_RECIPE``: listwise softmax over each question's candidates, cosine / 0.05,
8 questions per step, each with its positives and up to 15 negatives sampled once,
AdamW 5e-5, 10% warm-up, clipping 1.0), what ``ctxsent finetune as2 --arch bi-encoder``
runs. sentence-transformers: ``SentenceTransformerTrainer`` with
``MultipleNegativesRankingLoss`` (scale 20 = 1 / 0.05) from the same MiniLM weights, with
the same learning rate, schedule (linear warm-up over the same steps, linear decay to 0 at
the last step), clipping, batch of 8 questions and number of steps; its default optimiser.

The batches hold the same questions in the same order: the parent process builds
ctxsent's own batches (``sample_negatives`` and ``QuestionBatches`` with the run's seed,
epoch 0), checks them against the batches ctxsent trains on, and writes one
sentence-transformers row per question in that order, read by a sequential batch
sampler. A row is ``(question, its first positive, K negatives)``: the question's kept
negatives, repeated in turn where it has fewer than K and cut where it has more (MNRL
needs one positive and a fixed number of columns). K is chosen so that the timed steps
hold as many real tokens as ctxsent's; the JSON reports the tokens each side processed.
Beyond that, MNRL also scores each question against the other questions' candidates
(in-batch negatives), which the recipe does not (``--in-batch-negatives`` adds them);
that matrix is 8 x 8(K+1), negligible next to the encoder.

Each side runs ``--warmup + --steps`` steps in a fresh subprocess (so its peak RSS is
its own), one torch thread, fp32 (``precision="auto"`` is fp32 on CPUs without native
bf16; the JSON says which). Time per step is measured from the end of the last warm-up
step to the end of the last step (Lightning's ``on_train_batch_end`` and the HF trainer's
``on_step_end``, both after the optimiser step, so data loading is included); peak RSS
is read at the last step and at the process end (which adds ctxsent's dev evaluation
and save). Rounds alternate which side runs first. On a shared machine the process CPU
time per step (one thread: the work done, whatever the load) is reported next to wall
time. Prints one JSON object.

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python \
        benchmarks/bi_encoder_training_speed.py --data wikiqa:../shared/data/wikiqa --rounds 3
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from itertools import cycle, islice
from pathlib import Path

SEED = 42


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB


def training_data(data: str):
    """The recipe's training records (WikiQA train-clean, as the CLI's default) and batches."""
    from ctxsent.tasks.as2_load import load_as2
    from ctxsent.tasks.as2_records import clean
    from ctxsent.training.as2_finetune import sample_negatives
    from ctxsent.training.as2_presets import BI_ENCODER_RECIPE
    from ctxsent.training.sampling import QuestionBatches

    train = clean(load_as2(data, "train"))
    kept = sample_negatives(train, BI_ENCODER_RECIPE.max_negatives_per_question, SEED)
    groups: dict[str, list[int]] = {}
    for index, record in enumerate(kept):
        groups.setdefault(record.question_id, []).append(index)
    answered = [rows for rows in groups.values() if any(kept[i].label for i in rows)]
    batches = QuestionBatches(answered, BI_ENCODER_RECIPE.questions_per_batch, SEED)
    batches.set_epoch(0)
    return train, kept, [list(batch) for batch in batches]


# -- the two sides, each in its own process -------------------------------------------------


def run_ctxsent(args, out: dict) -> None:
    import torch

    from ctxsent.models.precision import lightning_precision
    from ctxsent.tasks.as2_load import load_as2
    from ctxsent.tasks.as2_records import clean, first_questions
    from ctxsent.training import engine
    from ctxsent.training.as2_finetune import As2RankerSpec, finetune_as2
    from ctxsent.training.as2_presets import BI_ENCODER_RECIPE

    torch.set_num_threads(1)
    train = clean(load_as2(args.data, "train"))
    dev = first_questions(clean(load_as2(args.data, "dev")), 10)  # one cheap evaluation at the end
    steps = args.warmup + args.steps
    config = replace(
        BI_ENCODER_RECIPE, max_steps=steps, eval_every=steps, seed=SEED,
        in_batch_negatives=args.in_batch_negatives,
    )  # fmt: skip
    out.update(ends=[], cpu=[], batches=[], real_tokens=[], padded_tokens=[], texts=[])

    def on_train_batch_end(module, outputs, batch, batch_idx) -> None:  # timing only
        out["ends"].append(time.perf_counter())
        out["cpu"].append(time.process_time())
        features, _, indices = batch
        out["batches"].append(indices.tolist())
        out["texts"].append(len(features["order"]))
        out["real_tokens"].append(sum(int(c["attention_mask"].sum()) for c in features["chunks"]))
        out["padded_tokens"].append(sum(c["attention_mask"].numel() for c in features["chunks"]))
        if len(out["ends"]) == steps:
            out["peak_rss_mb_at_last_step"] = peak_rss_mb()

    engine.ObjectiveModule.on_train_batch_end = on_train_batch_end
    out["precision"] = lightning_precision(config.precision, "cpu")
    with tempfile.TemporaryDirectory() as scratch:
        finetune_as2(As2RankerSpec(arch="bi-encoder"), train, dev, Path(scratch) / "run", config)


def run_sentence_transformers(args, out: dict) -> None:
    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.base.sampler import DefaultBatchSampler
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from torch.utils.data import SequentialSampler
    from transformers import TrainerCallback

    from ctxsent.models.backbones import DEFAULT_BACKBONE, resolve_backbone
    from ctxsent.training.as2_presets import BI_ENCODER_RECIPE

    torch.set_num_threads(1)
    rows = json.loads(Path(args.rows).read_text())
    dataset = Dataset.from_dict(
        {f"column_{i}": list(column) for i, column in enumerate(zip(*rows, strict=True))}
    )
    steps = args.warmup + args.steps
    out.update(ends=[], cpu=[], real_tokens=[], padded_tokens=[], texts=[])

    class Loss(MultipleNegativesRankingLoss):
        def forward(self, sentence_features, labels):  # counts tokens only
            features = list(sentence_features)
            out["texts"].append(sum(len(f["attention_mask"]) for f in features))
            out["real_tokens"].append(sum(int(f["attention_mask"].sum()) for f in features))
            # as embed_columns runs them: the anchors alone, the candidate columns merged
            # into one batch padded to the widest of them
            widest = max(f["attention_mask"].shape[1] for f in features[1:])
            candidates = sum(len(f["attention_mask"]) for f in features[1:])
            out["padded_tokens"].append(features[0]["attention_mask"].numel() + candidates * widest)
            return super().forward(features, labels)

    class Timer(TrainerCallback):
        def on_step_end(self, arguments, state, control, **kwargs):
            out["ends"].append(time.perf_counter())
            out["cpu"].append(time.process_time())
            if len(out["ends"]) == steps:
                out["peak_rss_mb_at_last_step"] = peak_rss_mb()

    def in_order(dataset, batch_size, drop_last, **kwargs):
        return DefaultBatchSampler(
            SequentialSampler(dataset), batch_size=batch_size, drop_last=drop_last, **kwargs
        )

    model = SentenceTransformer(resolve_backbone(DEFAULT_BACKBONE), device="cpu")
    with tempfile.TemporaryDirectory() as scratch:
        arguments = SentenceTransformerTrainingArguments(
            output_dir=scratch,
            max_steps=steps,
            per_device_train_batch_size=BI_ENCODER_RECIPE.questions_per_batch,
            learning_rate=BI_ENCODER_RECIPE.learning_rate,
            weight_decay=BI_ENCODER_RECIPE.weight_decay,
            max_grad_norm=BI_ENCODER_RECIPE.max_grad_norm,
            # ctxsent: int(ratio * total) warm-up steps, then linear decay to 0
            warmup_steps=int(BI_ENCODER_RECIPE.warmup_ratio * steps),
            lr_scheduler_type="linear",
            batch_sampler=in_order,
            seed=SEED,
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            use_cpu=True,
            logging_steps=steps,
        )
        scale = 1 / BI_ENCODER_RECIPE.temperature
        trainer = SentenceTransformerTrainer(
            model=model,
            args=arguments,
            train_dataset=dataset,
            loss=Loss(model, scale=scale),
            callbacks=[Timer()],
        )
        out["optimizer"] = str(arguments.optim)
        out["precision"] = "bf16" if arguments.bf16 else "fp16" if arguments.fp16 else "fp32"
        trainer.train()


# -- the parent: data, rounds, report --------------------------------------------------------


def st_rows(kept, batches, negatives: int) -> list[list[str]]:
    """One ``(question, first positive, negatives...)`` row per question of ``batches``."""
    rows = []
    for batch in batches:
        for question in dict.fromkeys(kept[i].question_id for i in batch):
            group = [kept[i] for i in batch if kept[i].question_id == question]
            positive = next(r.candidate for r in group if r.label)
            wrong = [r.candidate for r in group if not r.label]
            rows.append([group[0].question, positive, *islice(cycle(wrong), negatives)])
    return rows


def real_tokens(tokenizer, texts: list[str]) -> int:
    return sum(min(len(ids), 256) for ids in tokenizer(texts)["input_ids"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="wikiqa:../shared/data/wikiqa")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--negatives", type=int, help="K (default: matched on real tokens)")
    parser.add_argument("--in-batch-negatives", action="store_true", help="ctxsent side")
    parser.add_argument(
        "--side", choices=("ctxsent", "sentence-transformers"), help=argparse.SUPPRESS
    )
    parser.add_argument("--rows", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.side:  # a child: train, then write what it measured
        out: dict = {}
        run = run_ctxsent if args.side == "ctxsent" else run_sentence_transformers
        run(args, out)
        out["peak_rss_mb_at_end"] = peak_rss_mb()
        Path(args.out).write_text(json.dumps(out))
        return

    from transformers import AutoTokenizer

    from ctxsent.models.backbones import DEFAULT_BACKBONE, resolve_backbone
    from ctxsent.models.precision import cpu_has_native_bf16

    steps = args.warmup + args.steps
    _, kept, batches = training_data(args.data)
    batches = batches[:steps]
    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone(DEFAULT_BACKBONE))
    timed = batches[args.warmup :]
    ours_tokens = sum(
        real_tokens(
            tokenizer,
            list(dict.fromkeys([kept[i].question for i in b] + [kept[i].candidate for i in b])),
        )
        for b in timed
    )
    if args.negatives is None:  # the K whose rows hold closest to ctxsent's real tokens

        def gap(k: int) -> int:
            rows = st_rows(kept, timed, k)
            return abs(real_tokens(tokenizer, [t for row in rows for t in row]) - ours_tokens)

        args.negatives = min(range(1, 16), key=gap)
    rows = st_rows(kept, batches, args.negatives)

    results: dict[str, list[dict]] = {"ctxsent": [], "sentence-transformers": []}
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "rows.json").write_text(json.dumps(rows))
        for round_ in range(args.rounds):
            sides = ["ctxsent", "sentence-transformers"]
            for side in sides if round_ % 2 == 0 else sides[::-1]:
                out = Path(scratch, f"{side}-{round_}.json")
                command = [sys.executable, __file__, "--side", side, "--out", str(out)]
                command += ["--data", args.data, "--rows", str(Path(scratch, "rows.json"))]
                command += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
                command += ["--in-batch-negatives"] * args.in_batch_negatives
                start = time.perf_counter()
                done = subprocess.run(command, capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(f"{side} failed:\n{done.stderr[-3000:]}")
                result = json.loads(out.read_text())
                result["process_seconds"] = time.perf_counter() - start
                results[side].append(result)

    expected = [sorted(b) for b in batches]
    for result in results["ctxsent"]:
        if [sorted(b) for b in result["batches"][:steps]] != expected:
            raise SystemExit(
                "ctxsent trained on other batches than the ones given to sentence-transformers"
            )

    def summary(side: str) -> dict:
        runs = results[side]
        rates = [args.steps / (r["ends"][steps - 1] - r["ends"][args.warmup - 1]) for r in runs]
        cpu = [(r["cpu"][steps - 1] - r["cpu"][args.warmup - 1]) / args.steps for r in runs]
        tokens = [sum(r["real_tokens"][args.warmup : steps]) for r in runs]
        return {
            "steps_per_second": [round(x, 4) for x in rates],
            "median_steps_per_second": round(statistics.median(rates), 4),
            "cpu_seconds_per_step": [round(x, 3) for x in cpu],
            "median_cpu_seconds_per_step": round(statistics.median(cpu), 3),
            "real_tokens_per_second": [
                round(t * x / args.steps, 1) for t, x in zip(tokens, rates, strict=True)
            ],
            "timed_texts": sum(runs[0]["texts"][args.warmup : steps]),
            "timed_real_tokens": tokens[0],
            "timed_padded_tokens": sum(runs[0]["padded_tokens"][args.warmup : steps]),
            "peak_rss_mb_at_last_step": [round(r["peak_rss_mb_at_last_step"]) for r in runs],
            "peak_rss_mb_at_end": [round(r["peak_rss_mb_at_end"]) for r in runs],
            "process_seconds": [round(r["process_seconds"], 1) for r in runs],
            "precision": runs[0]["precision"],
            **({"optimizer": runs[0]["optimizer"]} if "optimizer" in runs[0] else {}),
        }

    ours, peer = summary("ctxsent"), summary("sentence-transformers")
    ratios = [
        a / b for a, b in zip(ours["steps_per_second"], peer["steps_per_second"], strict=True)
    ]
    report = {
        "data": args.data,
        "train": "clean, negatives sampled as the recipe (<= 15 per question, seed 42)",
        "questions_per_step": 8,
        "warmup_steps": args.warmup,
        "timed_steps": args.steps,
        "rounds": args.rounds,
        "threads": 1,
        "st_negatives_per_row": args.negatives,
        "ctxsent_in_batch_negatives": args.in_batch_negatives,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpu_native_bf16": cpu_has_native_bf16(),
        "ctxsent": ours,
        "sentence_transformers": peer,
        "steps_per_second_ratio_per_round": [round(r, 3) for r in ratios],
        "steps_per_second_ratio_of_medians": round(
            ours["median_steps_per_second"] / peer["median_steps_per_second"], 3
        ),
        "cpu_time_per_step_ratio_st_over_ctxsent": round(
            peer["median_cpu_seconds_per_step"] / ours["median_cpu_seconds_per_step"], 3
        ),
        "real_tokens_per_second_ratio_of_medians": round(
            statistics.median(ours["real_tokens_per_second"])
            / statistics.median(peer["real_tokens_per_second"]),
            3,
        ),
        "peak_rss_ratio_at_last_step": round(
            statistics.median(ours["peak_rss_mb_at_last_step"])
            / statistics.median(peer["peak_rss_mb_at_last_step"]),
            3,
        ),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
