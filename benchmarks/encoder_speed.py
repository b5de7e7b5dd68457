"""Training speed of the RNN-CNN and Mean-Max AAE decoders, as ratios within one run.

Prints JSON: sentences/s of full training steps (forward, backward, Adam) with the same
encoder, batch and data, median over repeats that interleave the variants:

* RNN-CNN: the predict-all-words CNN decoder vs the autoregressive RNN decoder
  (teacher forcing; always sampling reported too). Paper: ~3x faster than skip-thoughts.
* Mean-Max AAE vs the mean-max RAE (BiLSTM encoder, LSTM decoder). Paper target >= 2x.

Batches are random word ids of fixed length (speed does not depend on the words).
``--scale cpu`` uses the ``-cpu`` preset widths; ``--scale paper`` the papers' widths.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/encoder_speed.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from dataclasses import replace

import torch

from ctxsent.presets import get_preset
from ctxsent.text.vocabulary import SPECIALS, Vocabulary
from ctxsent.training.encoder_pretrain import build_objective

VARIANTS = {
    "rnn-cnn/cnn-decoder": ("rnn-cnn-small", {}),
    "rnn-cnn/ar-rnn-teacher-forcing": ("rnn-cnn-ar-rnn-tf", {}),
    "rnn-cnn/ar-rnn-always-sampling": ("rnn-cnn-ar-rnn-as", {}),
    "aae/mean-max-aae": ("mean-max-aae", {}),
    "aae/mean-max-rae": ("mean-max-rae", {}),
}


def make_batch(model: str, batch: int, length: int, target: int, vocab: int) -> dict:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), vocab, (batch, length), generator=generator)
    mask = torch.ones_like(ids, dtype=torch.bool)
    if model == "rnn-cnn":
        targets = torch.randint(len(SPECIALS), vocab, (batch, target), generator=generator)
        return {"input_ids": ids, "input_mask": mask, "targets": targets}
    return {"input_ids": ids, "input_mask": mask, "decoder_inputs": ids, "targets": ids}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=["cpu", "paper"], default="cpu")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--vocab-size", type=int, default=20_000)
    parser.add_argument("--length", type=int, default=30)
    parser.add_argument("--steps", type=int, default=3, help="training steps per timing")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    vocabulary = Vocabulary([*SPECIALS, *(f"w{i}" for i in range(args.vocab_size))])
    runs = {}
    for name, (preset, overrides) in VARIANTS.items():
        suffix = "-cpu" if args.scale == "cpu" else ""
        base = get_preset(preset + suffix, "encoder").config
        config = replace(base, **overrides, batch_size=args.batch_size)
        objective = build_objective(config, vocabulary, None).train()
        optimizer = torch.optim.Adam(
            [p for p in objective.parameters() if p.requires_grad], lr=config.learning_rate
        )
        batch = make_batch(
            config.model, args.batch_size, args.length, config.target_length, len(vocabulary)
        )
        runs[name] = (objective, optimizer, batch)

    def step(objective, optimizer, batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        objective(batch)["loss"].backward()
        optimizer.step()

    for objective, optimizer, batch in runs.values():  # warm-up
        step(objective, optimizer, batch)
    speeds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, (objective, optimizer, batch) in runs.items():
            started = time.perf_counter()
            for _ in range(args.steps):
                step(objective, optimizer, batch)
            speeds[name].append(args.steps * args.batch_size / (time.perf_counter() - started))
    median = {name: round(statistics.median(values), 1) for name, values in speeds.items()}
    cnn = median["rnn-cnn/cnn-decoder"]
    result = {
        "benchmark": "encoder_speed",
        "scale": args.scale,
        "batch_size": args.batch_size,
        "input_length": args.length,
        "vocab_size": len(vocabulary),
        "threads": args.threads,
        "repeats": args.repeats,
        "steps_per_repeat": args.steps,
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
        "sentences_per_s_median": median,
        "sentences_per_s_all": {k: [round(v, 1) for v in vs] for k, vs in speeds.items()},
        "ratios": {
            "cnn_decoder_vs_ar_rnn_teacher_forcing": round(
                cnn / median["rnn-cnn/ar-rnn-teacher-forcing"], 2
            ),
            "cnn_decoder_vs_ar_rnn_always_sampling": round(
                cnn / median["rnn-cnn/ar-rnn-always-sampling"], 2
            ),
            "aae_vs_rae": round(median["aae/mean-max-aae"] / median["aae/mean-max-rae"], 2),
        },
        "targets": {"cnn_vs_ar_rnn": ">= 3", "aae_vs_rae": ">= 2"},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
