"""Per-step training speed of every objective at its ``-cpu`` preset, for two versions of the
code in one run, and MLM pre-training against a plain Hugging Face ``Trainer`` with
``BertForMaskedLM`` on the same sequences and batch (issue 22).

    python benchmarks/training_speed.py --corpus runs/corpus-wiki --baseline-src /tmp/old/src \\
        --out runs/training-speed --steps 14 --rounds 2 > runs/training-speed.json

Each objective's data folder is built once (``ctxsent pretrain-data``, this checkout's code;
the folder format is the same for both versions). Every measured run is a fresh subprocess
on one thread (``PYTHONPATH`` = the version's ``src``) that trains ``--steps`` steps through
the ``ctxsent`` command line; a callback added to every Lightning ``Trainer`` records each
step's wall and process CPU time, from one step's end to the next (data loading included).
The first ``--skip`` steps (warm-up) are dropped; the report gives the median CPU seconds
per step per version and their ratio (``after / before``: above 1 is slower), rounds
interleaved so that machine load hits both alike. CPU time, not wall time, is compared: on
one thread it is the work done whatever else the machine runs.

The HF peer trains ``BertForMaskedLM`` (the backbone's weights, a new MLM head) with
``DataCollatorForLanguageModeling`` (15%) on the 64-token sequences of the
``mlm-1-64-cpu`` data folder, ``sequences_per_sample x batch_size`` sequences a step like
``mlm-1-64-cpu``; tokens/s counts real (non-padding) tokens, ours with the one special
token each sequence gets.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: objective: (``pretrain-data`` arguments, training arguments); DATA/OUT filled in later
OBJECTIVES = {
    "cross-thought-1-64-cpu": (
        ["pretrain-data", "cross-thought", "--preset", "cross-thought-1-64-cpu"],
        ["pretrain", "cross-thought", "--preset", "cross-thought-1-64-cpu",
         "--precision", "fp32", "--accelerator", "cpu"],
    ),
    "mlm-1-64-cpu": (
        ["pretrain-data", "cross-thought", "--preset", "mlm-1-64-cpu"],
        ["pretrain", "cross-thought", "--preset", "mlm-1-64-cpu",
         "--precision", "fp32", "--accelerator", "cpu"],
    ),
    "ssp-dpc-cpu": (
        ["pretrain-data", "ssp", "--objective", "dpc"],
        ["pretrain", "ssp", "--preset", "ssp-dpc-cpu", "--precision", "fp32",
         "--accelerator", "cpu"],
    ),
    "ssp-dpc-electra-cpu": (
        ["pretrain-data", "ssp", "--objective", "dpc", "--train-tokenizer", "8000"],
        ["pretrain", "ssp", "--preset", "ssp-dpc-electra-cpu", "--precision", "fp32",
         "--accelerator", "cpu"],
    ),
    "rnn-cnn-small-cpu": (
        ["pretrain-data", "encoder", "--preset", "rnn-cnn-small-cpu"],
        ["pretrain", "encoder", "rnn-cnn-small-cpu", "--set", "accelerator=cpu"],
    ),
    "mean-max-aae-cpu": (
        ["pretrain-data", "encoder", "--preset", "mean-max-aae-cpu"],
        ["pretrain", "encoder", "mean-max-aae-cpu", "--set", "accelerator=cpu"],
    ),
}  # fmt: skip


def worker(args: list[str], steps: int, report: Path) -> None:
    """In the subprocess: run ``ctxsent ARGS --max-steps STEPS`` with every Trainer timed."""
    import lightning as L
    import torch

    torch.set_num_threads(1)
    times: list[tuple[float, float, int]] = []

    class StepTimer(L.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            times.append((time.perf_counter(), time.process_time(), real_tokens(batch)))

    init = L.Trainer.__init__

    def timed_init(self, *a, callbacks=None, **kw):
        init(self, *a, callbacks=[*(callbacks or []), StepTimer()], **kw)

    L.Trainer.__init__ = timed_init
    from ctxsent.cli import app

    app([*args, "--max-steps", str(steps)], standalone_mode=False)
    report.write_text(json.dumps(times))


def real_tokens(batch) -> int:
    """Real (non-padding) input tokens of a batch: its attention or input masks."""
    if isinstance(batch, dict):
        for name in ("attention_mask", "input_mask"):
            if name in batch:
                return int(batch[name].sum())
        return sum(real_tokens(value) for value in batch.values() if isinstance(value, dict))
    return 0


def hf_worker(data: str, steps: int, report: Path) -> None:
    """In the subprocess: ``BertForMaskedLM`` + HF ``Trainer`` on the MLM data's sequences."""
    import numpy as np
    import torch
    from datasets import Dataset
    from transformers import (
        AutoTokenizer,
        BertForMaskedLM,
        DataCollatorForLanguageModeling,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    from ctxsent.models.backbones import resolve_backbone
    from ctxsent.objectives.pretrain_data import load_pretrain_data
    from ctxsent.presets import get_preset

    torch.set_num_threads(1)
    preset = get_preset("mlm-1-64-cpu", "cross-thought").config
    batch = preset.sequences_per_sample * preset.batch_size
    table, _ = load_pretrain_data(Path(data), "cross-thought")
    rows = table.select(range(min(len(table), batch * (steps + 1))))
    ids = [np.asarray(row, dtype=np.int64) for row in rows["input_ids"]]
    path = resolve_backbone("all-MiniLM-L6-v2")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = BertForMaskedLM.from_pretrained(path)
    times: list[tuple[float, float, int]] = []

    class StepTimer(TrainerCallback):
        def on_step_end(self, *_, **__):
            times.append((time.perf_counter(), time.process_time(), 0))

    class Collate(DataCollatorForLanguageModeling):
        def __call__(self, examples):
            out = super().__call__(examples)
            tokens.append(int(out["attention_mask"].sum()))
            return out

    tokens: list[int] = []
    arguments = TrainingArguments(
        output_dir=str(report.parent / "hf-out"), max_steps=steps,
        per_device_train_batch_size=batch, learning_rate=preset.learning_rate,
        warmup_steps=preset.warmup_steps, weight_decay=0.01, max_grad_norm=1.0,
        use_cpu=True, report_to=[], save_strategy="no", logging_strategy="no",
        dataloader_num_workers=0, seed=0,
    )  # fmt: skip
    collate = Collate(tokenizer, mlm_probability=preset.mask_probability)
    dataset = Dataset.from_dict({"input_ids": [row.tolist() for row in ids]})
    Trainer(
        model=model, args=arguments, train_dataset=dataset, data_collator=collate,
        callbacks=[StepTimer()],
    ).train()  # fmt: skip
    report.write_text(json.dumps([[w, c, n] for (w, c, _), n in zip(times, tokens, strict=False)]))


def per_step(times: list, skip: int) -> dict:
    """Median wall and CPU seconds between consecutive step ends, after ``skip`` steps, and
    the CPU seconds per 1,000 real tokens of the timed steps together (the like-for-like
    measure when two versions draw different batches)."""
    wall = [b[0] - a[0] for a, b in zip(times, times[1:], strict=False)][skip:]
    cpu = [b[1] - a[1] for a, b in zip(times, times[1:], strict=False)][skip:]
    tokens = sum(row[2] for row in times[1:][skip:])
    report = {"wall": statistics.median(wall), "cpu": statistics.median(cpu), "steps": len(cpu)}
    if tokens:
        report["cpu_per_1k_tokens"] = 1000 * sum(cpu) / tokens
    return report


def run_worker(mode: str, src: Path, payload: list[str], steps: int, report: Path) -> list:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    command = [sys.executable, __file__, mode, json.dumps(payload), str(steps), str(report)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{mode} {payload[:3]} failed: {done.stderr[-2000:]}")
    return json.loads(report.read_text())


def build_data(corpus: Path, out: Path, objective: str, max_documents: int) -> Path:
    """The objective's data folder, built once; objectives whose data would be the same
    (Cross-Thought and MLM at one sequence length, the two encoders) share one."""
    from ctxsent.cli import app

    build, _ = OBJECTIVES[objective]
    shared = {"cross-thought": "cross-thought-64", "encoder": "encoder"}
    data = out / "data" / shared.get(build[1], objective)
    if not (data / "pretrain_data.json").exists():
        limit = ["--max-documents", str(max_documents)] if build[1] == "ssp" else []
        with contextlib.redirect_stdout(sys.stderr):  # stdout holds the report only
            command = [*build, "--corpus", str(corpus), "--out", str(data), *limit]
            app(command, standalone_mode=False)
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--baseline-src", type=Path, required=True, help="the 'before' src/")
    parser.add_argument("--out", type=Path, default=Path("runs/training-speed"))
    parser.add_argument("--objectives", default=",".join(OBJECTIVES))
    parser.add_argument("--steps", type=int, default=14)
    parser.add_argument("--skip", type=int, default=3, help="warm-up steps not timed")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-documents", type=int, default=400, help="SSP data: documents")
    args = parser.parse_args()
    versions = {"before": args.baseline_src.resolve(), "after": REPO / "src"}
    objectives = args.objectives.split(",")
    data = {o: build_data(args.corpus, args.out, o, args.max_documents) for o in objectives}
    measured: dict[str, dict[str, list]] = {o: {v: [] for v in versions} for o in objectives}
    hf: list = []
    for round_ in range(args.rounds):
        for objective in objectives:
            for version, src in versions.items():
                out = args.out / f"{objective}-{version}-{round_}"
                _, train = OBJECTIVES[objective]
                payload = [*train, "--data", str(data[objective]), "--out", str(out)]
                report = args.out / f"{objective}-{version}-{round_}.json"
                times = run_worker("--worker", src, payload, args.steps, report)
                measured[objective][version].append(per_step(times, args.skip))
        if "mlm-1-64-cpu" in objectives:
            report = args.out / f"hf-{round_}.json"
            hf.append(run_worker("--hf-worker", REPO / "src", [str(data["mlm-1-64-cpu"])],
                                 args.steps, report))  # fmt: skip
    table = {}
    for objective, by_version in measured.items():
        cpu = {v: statistics.median(r["cpu"] for r in runs) for v, runs in by_version.items()}
        wall = {v: statistics.median(r["wall"] for r in runs) for v, runs in by_version.items()}
        table[objective] = {
            "cpu_s_per_step": cpu,
            "wall_s_per_step": wall,
            "after_over_before_cpu": cpu["after"] / cpu["before"],
        }
        if all("cpu_per_1k_tokens" in r for runs in by_version.values() for r in runs):
            per_token = {
                v: statistics.median(r["cpu_per_1k_tokens"] for r in runs)
                for v, runs in by_version.items()
            }
            table[objective]["cpu_s_per_1k_tokens"] = per_token
            table[objective]["after_over_before_cpu_per_token"] = (
                per_token["after"] / per_token["before"]
            )
    result = {"steps": args.steps, "skip": args.skip, "rounds": args.rounds, "objectives": table}
    if hf:
        tokens_ours = _tokens_per_step(data["mlm-1-64-cpu"])
        hf_cpu = statistics.median(
            statistics.median(b[1] - a[1] for a, b in zip(t, t[1:], strict=False))
            for t in (run[args.skip :] for run in hf)
        )
        hf_tokens = statistics.median(n for run in hf for _, _, n in run)
        ours = table["mlm-1-64-cpu"]["cpu_s_per_step"]["after"]
        result["mlm_against_hf_trainer"] = {
            "ctxsent_tokens_per_cpu_s": tokens_ours / ours,
            "hf_trainer_tokens_per_cpu_s": hf_tokens / hf_cpu,
            "ctxsent_over_hf": (tokens_ours / ours) / (hf_tokens / hf_cpu),
            "real_tokens_per_step": {"ctxsent": tokens_ours, "hf": hf_tokens},
        }
    json.dump(result, sys.stdout, indent=2)


def _tokens_per_step(data: Path) -> float:
    """Real tokens of an ``mlm-1-64-cpu`` step: its sequences' mean length + 1 special token."""
    from ctxsent.presets import get_preset

    summary = json.loads((data / "pretrain_data.json").read_text())
    preset = get_preset("mlm-1-64-cpu", "cross-thought").config
    per_sequence = summary["tokens"] / summary["sequences"] + preset.num_special
    return per_sequence * preset.sequences_per_sample * preset.batch_size


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("--worker", "--hf-worker"):
        job = worker if sys.argv[1] == "--worker" else hf_worker
        payload = json.loads(sys.argv[2])
        job(payload if job is worker else payload[0], int(sys.argv[3]), Path(sys.argv[4]))
    else:
        main()
