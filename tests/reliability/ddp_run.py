"""Tiny training runs of every objective on 1 or 2 CPU processes, as a script (Lightning
relaunches it).

    python tests/reliability/ddp_run.py TINY_BERT OUT DEVICES KIND[,KIND...] [DATA_JSON]

KIND is an AS2 fine-tuning kind (cross-encoder, cascade, bi-encoder: the listwise recipe
``finetune as2 --arch bi-encoder`` trains by default, 3 questions a step so that the two
ranks hold 2 and 1) or a pre-training objective (ssp, electra, cross-thought, rnn-cnn,
mean-max-aae), whose data folder DATA_JSON names
(``{"ssp": PATH, ...}``). The runs follow one another in the same processes (the first
launches the ranks, the others reuse them and their process group). Dropout is switched
off (AS2: p = 0; pre-training: dropout 0 where the config sets it, and every module
that is put in training mode kept in eval mode) so that the ranks' different
random streams change nothing. Rank 0 writes ``OUT/KIND/trace.json``: per step, the mean
loss over all ranks and, for AS2, the training examples each rank saw and the exit each
cascade rank trained. A test runs the one-process case in its own process through
:func:`traced_runs`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from pretraining_runs import pretrain

GLOBAL_BATCH = 16
STEPS = 4
AS2_KINDS = ["cross-encoder", "cascade", "bi-encoder"]
#: Pre-training with each step's batch split in 2 (``--accumulate 2``): ELECTRA + SSP, whose
#: three loss parts each count their masked words, tokens or examples over the step.
ACCUMULATED = {"electra-accumulate-2": ("electra", 2)}


def traced_runs(
    tiny_bert: str, out: str | Path, devices: int, kinds: list[str], data: dict | None = None
) -> None:
    """Train each kind in turn on one thread and write its trace; this process's methods
    and thread count are as before afterwards."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for kind in kinds:
            if kind in AS2_KINDS:
                _traced_run(tiny_bert, Path(out) / kind, devices, kind)
            else:
                objective, accumulate = ACCUMULATED.get(kind, (kind, 1))
                folder = (data or {})[objective]
                _traced_pretraining(
                    tiny_bert, folder, Path(out) / kind, devices, objective, accumulate
                )
    finally:
        torch.set_num_threads(threads)


def _mean_over_ranks(value):
    import torch.distributed as dist

    value = value.detach().clone()
    if dist.is_initialized():
        dist.all_reduce(value)
        value /= dist.get_world_size()
    return value.item()


def _traced_pretraining(
    tiny_bert: str, data: str, out: Path, devices: int, kind: str, accumulate: int = 1
) -> None:
    """One pre-training run of ``kind`` for :data:`STEPS` steps of a global batch of 8, in
    ``accumulate`` batches a step (each traced)."""
    import torch
    import torch.distributed as dist

    from ctxsent.training.engine import ObjectiveModule

    trace: list[float] = []
    train_step, train = ObjectiveModule.training_step, torch.nn.Module.train

    def traced_step(self, batch, batch_idx):
        loss = train_step(self, batch, batch_idx)
        trace.append(_mean_over_ranks(loss))
        return loss

    ObjectiveModule.training_step = traced_step
    torch.nn.Module.train = lambda self, mode=True: train(self, False)  # no dropout
    try:
        pretrain(
            kind, tiny_bert, data, out, STEPS, STEPS, devices, dropout=False, accumulate=accumulate
        )
    finally:
        ObjectiveModule.training_step = train_step
        torch.nn.Module.train = train
    if not dist.is_initialized() or dist.get_rank() == 0:
        (out / "trace.json").write_text(json.dumps([{"loss": loss} for loss in trace]))


def _traced_run(tiny_bert: str, out: Path, devices: int, kind: str) -> None:
    import torch
    import torch.distributed as dist

    from ctxsent.models.bi_encoder import BiEncoderRanker
    from ctxsent.models.cascade import CascadeRanker
    from ctxsent.models.cross_encoder import CrossEncoderRanker
    from ctxsent.training import as2_finetune
    from ctxsent.training.as2_presets import BI_ENCODER_RECIPE
    from ctxsent.training.engine import ObjectiveModule
    from synthetic import synthetic_as2

    trace: list[dict] = []
    exits: list[int | None] = [None]  # the cascade's latest sampled exit
    train_step = ObjectiveModule.training_step
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

    ObjectiveModule.training_step = traced_step
    CascadeRanker.forward_exits = traced_exits
    try:
        torch.manual_seed(0)
        models = {"cascade": CascadeRanker, "bi-encoder": BiEncoderRanker}
        ranker = models.get(kind, CrossEncoderRanker).from_backbone(tiny_bert, max_length=32)
        for module in ranker.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        settings = {"learning_rate": 3e-3, "epochs": 1}
        if kind == "bi-encoder":
            settings = {**asdict(BI_ENCODER_RECIPE), "questions_per_batch": 3}
        config = as2_finetune.As2TrainConfig(
            **settings
            | {"max_steps": STEPS, "eval_every": STEPS, "warmup_ratio": 0.0}
            | {"batch_size": GLOBAL_BATCH, "seed": 0, "precision": "fp32", "accelerator": "cpu"}
            | {"devices": devices}
        )
        train, dev = synthetic_as2(16, seed=1), synthetic_as2(4, seed=2)
        as2_finetune.finetune_as2(ranker, train, dev, out, config)
    finally:
        ObjectiveModule.training_step = train_step
        CascadeRanker.forward_exits = forward_exits
    if not dist.is_initialized() or dist.get_rank() == 0:
        (out / "trace.json").write_text(json.dumps(trace))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for synthetic
    data = json.loads(Path(sys.argv[5]).read_text()) if len(sys.argv) > 5 else None
    traced_runs(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(","), data)
