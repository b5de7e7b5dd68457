"""Tiny AS2 fine-tuning runs on 1 or 2 CPU processes, as a script (Lightning relaunches it).

    python tests/reliability/ddp_run.py TINY_BERT OUT DEVICES KIND[,KIND...]

KIND is cross-encoder or cascade; the runs follow one another in the same processes (the
first launches the ranks, the others reuse them and their process group). Dropout is
switched off so that the ranks' different random streams change nothing (each rank draws
a different amount from its stream instead). Rank 0 writes ``OUT/KIND/trace.json``: per
step, the mean loss over all ranks, the training examples each rank saw and, for a
cascade, the exit each rank trained. A test runs the one-process case in its own process
through :func:`traced_runs`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GLOBAL_BATCH = 16
STEPS = 4


def traced_runs(tiny_bert: str, out: str | Path, devices: int, kinds: list[str]) -> None:
    """Train each kind in turn on one thread and write its trace; this process's methods
    and thread count are as before afterwards."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for kind in kinds:
            _traced_run(tiny_bert, Path(out) / kind, devices, kind)
    finally:
        torch.set_num_threads(threads)


def _traced_run(tiny_bert: str, out: Path, devices: int, kind: str) -> None:
    import torch
    import torch.distributed as dist

    from ctxsent.models.cascade import CascadeRanker
    from ctxsent.models.cross_encoder import CrossEncoderRanker
    from ctxsent.training import as2_finetune
    from synthetic import synthetic_as2

    trace: list[dict] = []
    exits: list[int | None] = [None]  # the cascade's latest sampled exit
    train_step = as2_finetune.As2FineTuneModule.training_step
    forward_exits = CascadeRanker.forward_exits

    def traced_exits(self, features, upto=None):
        if self.training:
            exits.append(upto)
        return forward_exits(self, features, upto)

    def traced_step(self, batch, batch_idx):
        loss = train_step(self, batch, batch_idx)
        mean, seen, trained = loss.detach().clone(), [batch[2].tolist()], [exits[-1]]
        if dist.is_initialized():
            dist.all_reduce(mean)
            mean /= dist.get_world_size()
            seen = [None] * dist.get_world_size()
            dist.all_gather_object(seen, batch[2].tolist())
            trained = [None] * dist.get_world_size()
            dist.all_gather_object(trained, exits[-1])
        trace.append({"loss": mean.item(), "examples": seen, "exits": trained})
        # The ranks' global random streams drift apart, as dropout on batches of other
        # shapes makes them; nothing that must agree across ranks may depend on them.
        torch.rand(1 + (dist.get_rank() if dist.is_initialized() else 0))
        return loss

    as2_finetune.As2FineTuneModule.training_step = traced_step
    CascadeRanker.forward_exits = traced_exits
    try:
        torch.manual_seed(0)
        model = CascadeRanker if kind == "cascade" else CrossEncoderRanker
        ranker = model.from_backbone(tiny_bert, max_length=32)
        for module in ranker.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        config = as2_finetune.As2TrainConfig(
            learning_rate=3e-3,
            batch_size=GLOBAL_BATCH,
            epochs=1,
            max_steps=STEPS,
            eval_every=STEPS,
            warmup_ratio=0.0,
            seed=0,
            precision="fp32",
            accelerator="cpu",
            devices=devices,
        )
        train, dev = synthetic_as2(16, seed=1), synthetic_as2(4, seed=2)
        as2_finetune.finetune_as2(ranker, train, dev, out, config)
    finally:
        as2_finetune.As2FineTuneModule.training_step = train_step
        CascadeRanker.forward_exits = forward_exits
    if not dist.is_initialized() or dist.get_rank() == 0:
        (out / "trace.json").write_text(json.dumps(trace))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for synthetic
    traced_runs(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(","))
