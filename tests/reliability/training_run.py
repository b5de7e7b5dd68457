"""A tiny, deterministic AS2 fine-tuning run (tests run it in their process or a forked one).

The sleep (seconds after every training step) only slows the run down so
that a test can kill it midway; it changes no number.
"""

from __future__ import annotations

import time
from pathlib import Path

CONFIG = dict(
    learning_rate=3e-3, batch_size=8, epochs=2, eval_every=6, warmup_ratio=0.2, seed=0,
    precision="fp32", accelerator="cpu", devices=1, patience=100, keep_checkpoints=True,
)  # fmt: skip


def run(
    tiny_bert: str | Path, out: str | Path, sleep: float = 0.0, arch: str = "cross-encoder"
) -> dict:
    """Train a tiny cross-encoder (or bi-encoder, listwise: 4 questions a batch) for 2 epochs
    of 12 steps; dev evaluation every 6 steps."""
    import torch

    from ctxsent.models.bi_encoder import BiEncoderRanker
    from ctxsent.models.cross_encoder import CrossEncoderRanker
    from ctxsent.training import as2_finetune, engine
    from synthetic import synthetic_as2

    if sleep:
        engine.ObjectiveModule.on_train_batch_end = lambda *_: time.sleep(sleep)
    torch.manual_seed(0)
    train, dev = synthetic_as2(24, seed=1), synthetic_as2(8, seed=2)
    if arch == "bi-encoder":
        ranker = BiEncoderRanker.from_backbone(str(tiny_bert), max_length=32)
        settings = dict(CONFIG, loss="listwise", questions_per_batch=2)
    else:
        ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32)
        settings = CONFIG
    config = as2_finetune.As2TrainConfig(**settings)
    return as2_finetune.finetune_as2(ranker, train, dev, out, config)
