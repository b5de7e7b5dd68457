"""The one Lightning ``Trainer`` every training run uses: AS2 fine-tuning, SSP, Cross-Thought,
RNN-CNN and Mean-Max AAE pre-training, Cross-Thought's Eq. 10 / Eq. 11 fine-tuning.

Each objective brings its LightningModule, loaders and run config; what the run trains on is
decided here once, from the config's :class:`RunPlacement` fields:

* precision (:func:`~ctxsent.models.precision.lightning_precision`: ``auto`` is bf16 where
  the hardware has it), accelerator, devices, strategy (DDP, FSDP) and number of nodes;
* a checkpoint in ``OUT/checkpoints`` after every evaluation, or every
  ``checkpoint_every`` steps (:func:`newest_checkpoint`), and :func:`fit` resumes from it;
* a CSV log in ``OUT/logs``, and TensorBoard's in ``OUT/tensorboard`` when ``tensorboard``
  is installed; progress bars on stderr (:class:`~ctxsent.training.progress.StderrProgressBar`).

The samplers shard every step's global batch over the ranks themselves
(:mod:`~ctxsent.training.sampling`), so Lightning's distributed sampler stays off and a
run's batches do not depend on the number of processes.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint

from ctxsent.models.precision import lightning_precision
from ctxsent.training.progress import StderrProgressBar


class RunPlacement(Protocol):
    """Where and how precisely a run trains: fields every training config has."""

    precision: str
    accelerator: str
    devices: int | str
    strategy: str
    num_nodes: int


@dataclass(frozen=True)
class Placement:
    """A :class:`RunPlacement` for runs whose config names no devices: one device."""

    precision: str = "auto"
    accelerator: str = "auto"
    devices: int | str = 1
    strategy: str = "auto"
    num_nodes: int = 1


def device_type(accelerator: str) -> str:
    """``cuda`` when ``accelerator`` trains on a GPU (``auto`` with one present), else ``cpu``."""
    if accelerator in ("gpu", "cuda"):
        return "cuda"
    return "cuda" if accelerator == "auto" and torch.cuda.is_available() else "cpu"


def newest_checkpoint(dirpath: Path, **when) -> ModelCheckpoint:
    """A callback that keeps only the newest checkpoint; ``when`` says how often to save.

    Lightning 2.6 writes ``last.ckpt`` for ``save_last=True`` only when it also saves a
    top-k checkpoint, so ``save_top_k=0`` kept nothing until training ended and a run killed
    mid-way started again from step 0. The newest checkpoint is kept as ``latest.ckpt``
    (with no monitor, the top 1 is the newest) and ``last.ckpt`` links to it.
    """
    return ModelCheckpoint(
        dirpath=dirpath,
        filename="latest",
        save_top_k=1,
        save_last="link",
        enable_version_counter=False,
        **when,
    )


def last_checkpoint(out_dir: Path) -> Path:
    """Where a run in ``out_dir`` keeps the checkpoint it resumes from."""
    return Path(out_dir) / "checkpoints" / "last.ckpt"


def build_trainer(
    out_dir: Path,
    placement: RunPlacement,
    *,
    max_steps: int,
    max_epochs: int = -1,
    max_minutes: float | None = None,
    gradient_clip_val: float | None = None,
    eval_every: int | None = None,
    checkpoint_every: int | None = None,
    callbacks: Sequence[Callback] = (),
    checkpoints: bool = True,
    strategy: str | None = None,
    log_every_n_steps: int = 50,
    refresh_rate: int = 10,
) -> L.Trainer:
    """The trainer of a run in ``out_dir``.

    ``eval_every``: steps between evaluations on the validation loader (``None``: no
    evaluation); a checkpoint follows every evaluation, or every ``checkpoint_every`` steps
    when that is given; ``checkpoints=False`` keeps none (a run that starts again rather
    than resuming). ``strategy`` replaces ``placement.strategy`` (a strategy object or a
    refined name, e.g. DDP that expects unused parameters). ``max_minutes`` stops the run
    after that much training time in total, across resumes.
    """
    out_dir = Path(out_dir)
    when = {"every_n_train_steps": checkpoint_every} if checkpoint_every else {}
    loggers: list = [L.pytorch.loggers.CSVLogger(out_dir, name="logs")]
    if importlib.util.find_spec("tensorboard") is not None:
        loggers.append(L.pytorch.loggers.TensorBoardLogger(out_dir, name="tensorboard"))
    evaluation = (
        {"val_check_interval": eval_every, "check_val_every_n_epoch": None}
        if eval_every
        else {"limit_val_batches": 0}
    )
    return L.Trainer(
        default_root_dir=out_dir,
        accelerator=placement.accelerator,
        devices=placement.devices,
        strategy=strategy or placement.strategy,
        num_nodes=placement.num_nodes,
        max_epochs=max_epochs,
        max_steps=max_steps,
        max_time={"minutes": max_minutes} if max_minutes else None,
        precision=lightning_precision(placement.precision, device_type(placement.accelerator)),
        gradient_clip_val=gradient_clip_val,
        callbacks=[
            *([newest_checkpoint(out_dir / "checkpoints", **when)] if checkpoints else []),
            *callbacks,
            StderrProgressBar(refresh_rate=refresh_rate),
        ],
        enable_checkpointing=checkpoints,
        logger=loggers,
        log_every_n_steps=log_every_n_steps,
        num_sanity_val_steps=0,
        enable_model_summary=False,
        use_distributed_sampler=False,
        **evaluation,
    )


def fit(trainer: L.Trainer, module: L.LightningModule, out_dir: Path, *loaders) -> bool:
    """Train ``module`` on ``loaders`` (train, then optionally validation), resuming from
    the run's checkpoint when it has one; returns whether it resumed."""
    last = last_checkpoint(out_dir)
    resumed = last.exists()
    trainer.fit(module, *loaders, ckpt_path=str(last) if resumed else None)
    return resumed
