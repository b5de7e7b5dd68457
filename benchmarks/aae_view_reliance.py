"""How much a trained Mean-Max AAE decoder relies on the sentence vector.

The decoder reconstructs a sentence by teacher forcing: its masked self-attention already
sees the previous (frozen GloVe) words, so it may predict much of the sentence without
the encoder's views. This measures the reconstruction NLL per word of held-out sentences
(STS Benchmark test) with the sentence's own views, with the views of another sentence
of the batch, and with zero views. Small gaps mean the decoder does the work and the
sentence vector carries little of the sentence.

    OMP_NUM_THREADS=1 python benchmarks/aae_view_reliance.py --run runs/aae \
        --pretrain-data runs/aae-data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ctxsent.objectives.pretrain_data import VOCABULARY_FILE
from ctxsent.objectives.reconstruct import collate_reconstruction
from ctxsent.saving import RUN_FILE, read_run
from ctxsent.tasks.senteval import get_task, load_task
from ctxsent.text.vocabulary import PAD_ID, Vocabulary
from ctxsent.training.encoder_presets import EncoderPretrainConfig
from ctxsent.training.encoder_pretrain import build_objective


def load_objective(run: Path, pretrain_data: Path, checkpoint: Path) -> torch.nn.Module:
    """Encoder + decoder of a ``ctxsent pretrain encoder`` run (its settings in ``run.json``,
    its vocabulary in the ``pretrain-data`` folder it trained on), from ``checkpoint``."""
    stored = read_run(run)
    if stored is None:
        raise SystemExit(f"{run}: no {RUN_FILE}; not a ctxsent pre-training run")
    settings = dict(stored["settings"]["config"])
    settings["decoder_dims"] = tuple(settings["decoder_dims"])
    config = EncoderPretrainConfig(**settings)
    if config.model != "mean-max-aae":
        raise SystemExit(f"{run}: a {config.model} run, not a Mean-Max AAE")
    vocabulary = Vocabulary.load(pretrain_data / VOCABULARY_FILE)
    objective = build_objective(config, vocabulary, vectors=None)
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    prefix = "objective."
    objective.load_state_dict(
        {k.removeprefix(prefix): v for k, v in state["state_dict"].items() if k.startswith(prefix)}
    )
    return objective.eval()


def nll_per_word(objective, batch: dict, views: torch.Tensor) -> tuple[float, int]:
    logits = objective.decoder(views, batch["decoder_inputs"], objective.encoder.embedding)
    targets = batch["targets"]
    total = F.cross_entropy(
        logits.flatten(0, 1), targets.flatten(), ignore_index=PAD_ID, reduction="sum"
    )
    return float(total), int(targets.ne(PAD_ID).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="the pre-training run folder")
    parser.add_argument(
        "--pretrain-data", type=Path, required=True, help="the pretrain-data folder it read"
    )
    parser.add_argument(
        "--checkpoint",
        type=Path,
        help="default: RUN/checkpoints/last.ckpt (a run with --keep-checkpoints keeps it)",
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    checkpoint = args.checkpoint or args.run / "checkpoints/last.ckpt"
    objective = load_objective(args.run, args.pretrain_data, checkpoint)
    vocabulary, max_length = objective.encoder.vocabulary, objective.encoder.config.max_length
    pairs = load_task(get_task("STSB"), args.data).splits["test"]
    rows = [vocabulary.ids(t)[:max_length] for t in sorted({*pairs.first, *pairs.second})]
    rows = [np.array(r, dtype=np.int64) for r in rows if r]
    sums = {"own views": [0.0, 0], "another sentence's views": [0.0, 0], "zero views": [0.0, 0]}
    with torch.inference_mode():
        for start in range(0, len(rows), args.batch_size):
            batch = collate_reconstruction(rows[start : start + args.batch_size])
            views = objective.encoder.views(batch["input_ids"], batch["input_mask"])
            for name, used in (
                ("own views", views),
                ("another sentence's views", views.roll(1, dims=0)),
                ("zero views", torch.zeros_like(views)),
            ):
                total, words = nll_per_word(objective, batch, used)
                sums[name][0] += total
                sums[name][1] += words
    report = {name: round(total / words, 4) for name, (total, words) in sums.items()}
    print(json.dumps({"run": str(args.run), "sentences": len(rows), "nll_per_word": report}))


if __name__ == "__main__":
    main()
