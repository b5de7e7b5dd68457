"""The one training engine: every objective of the toolkit trains through
:func:`train_objective`.

An objective is an ``nn.Module`` whose ``objective(batch, generator)`` returns a dict of
named losses: ``loss`` (what is minimised: a joint objective's config-weighted sum) and its
parts (``mlm``, ``ssp``, ``rtd``, ...), plus any metric worth logging. One LightningModule,
:class:`ObjectiveModule`, runs every one of them:

* AdamW over BERT's weight-decay groups, fresh heads at their own learning rate, and the
  triangular schedule or a constant rate (:class:`OptimizerSettings`, :mod:`.optim`);
* dropout and every random draw of a step seeded by ``(seed, step)`` (the objective's
  ``generator``), so a run resumed from its checkpoint, or split over DDP ranks
  (:mod:`~ctxsent.objectives.global_batch`), trains as one uninterrupted process would;
* an :class:`Evaluation`: an :class:`~ctxsent.protocols.Evaluator` called every ``every``
  steps, logged as ``dev_<metric>``; its primary metric drives early stopping and keeps the
  best model (``on_best``).

:func:`train_objective` runs it on the one Lightning ``Trainer``:

* precision (:func:`~ctxsent.models.precision.lightning_precision`: ``auto`` is bf16 where
  the hardware has it), accelerator, devices, strategy (DDP, FSDP) and number of nodes,
  from the config's :class:`~ctxsent.training.settings.RunSettings`;
* a checkpoint in ``OUT/checkpoints`` after every evaluation, or every
  ``checkpoint_every`` steps (:func:`newest_checkpoint`), and :func:`train_objective` resumes
  from it;
* a CSV log in ``OUT/logs``, and TensorBoard's in ``OUT/tensorboard`` when ``tensorboard``
  is installed; progress bars on stderr (:class:`~ctxsent.training.progress.StderrProgressBar`).

The samplers shard every step's global batch over the ranks themselves
(:mod:`~ctxsent.training.sampling`; :class:`~ctxsent.training.sampling.FollowTrainer`
keeps them at the trainer's step), so Lightning's distributed sampler stays off and a
run's batches do not depend on the number of processes.
"""

from __future__ import annotations

import importlib.util
import math
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.fabric.utilities.apply_func import move_data_to_device
from lightning.pytorch.callbacks import Callback, EarlyStopping, ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader

from ctxsent.models.precision import device_type, lightning_precision
from ctxsent.objectives.global_batch import begin_accumulated_step, end_accumulated_step
from ctxsent.protocols import Evaluator
from ctxsent.training.progress import StderrProgressBar
from ctxsent.training.sampling import FollowTrainer
from ctxsent.training.settings import RunSettings


# ---- optimisation ------------------------------------------------------------------------------
def triangular(step: int, warmup: int, total: int) -> float:
    """Learning-rate factor of the triangular schedule (Smith 2017), as the SSP and Cascade
    papers use: a linear ramp over ``warmup`` steps, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def no_weight_decay(name: str, parameter: nn.Parameter) -> bool:
    """Biases and normalisation weights are not decayed (BERT's recipe)."""
    return parameter.ndim < 2 or "norm" in name.lower()


def decay_groups(
    named_parameters: Iterable[tuple[str, nn.Parameter]],
    weight_decay: float,
    heads: Collection[str] = (),
    head_lr: float | None = None,
) -> list[dict]:
    """AdamW parameter groups of the trainable parameters: ``weight_decay`` for weights, 0
    for biases and norms; those named in ``heads`` (fresh scoring heads) get their own
    groups with learning rate ``head_lr``, the others use the optimizer's."""
    groups: dict[tuple[bool, bool], list[nn.Parameter]] = {}
    for name, parameter in named_parameters:
        if parameter.requires_grad:
            key = (name in heads, no_weight_decay(name, parameter))
            groups.setdefault(key, []).append(parameter)
    return [
        {
            "params": params,
            "weight_decay": 0.0 if no_decay else weight_decay,
            **({"lr": head_lr} if head and head_lr is not None else {}),
        }
        for (head, no_decay), params in sorted(groups.items())
    ]


@dataclass(frozen=True)
class OptimizerSettings:
    """AdamW over :func:`decay_groups`, with the :func:`triangular` schedule over
    ``total_steps`` (``None``: the steps the trainer will take) after ``warmup_steps`` (or
    ``warmup_ratio`` of them), or a constant rate (``schedule="constant"``; with weight
    decay 0, AdamW is Adam). ``heads`` (parameter names under the objective) learn at
    ``head_lr_scale`` times the rate."""

    learning_rate: float
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    schedule: str = "triangular"
    warmup_steps: int = 0
    warmup_ratio: float = 0.0
    total_steps: int | None = None
    heads: frozenset[str] = frozenset()
    head_lr_scale: float = 1.0

    def build(self, named_parameters: Iterable[tuple[str, nn.Parameter]], estimated_steps: int):
        """Lightning's ``configure_optimizers`` answer for these parameters."""
        lr = self.learning_rate
        groups = decay_groups(
            named_parameters, self.weight_decay, self.heads, lr * self.head_lr_scale
        )
        optimizer = torch.optim.AdamW(groups, lr=lr, betas=self.betas, eps=self.eps)
        if self.schedule == "constant":
            return optimizer
        total = self.total_steps or max(1, estimated_steps)
        warmup = self.warmup_steps or int(self.warmup_ratio * total)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: triangular(step, warmup, total)
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


# ---- the one LightningModule -------------------------------------------------------------------
@dataclass
class Evaluation:
    """Evaluate ``model`` with ``evaluator`` every ``every`` steps (and before the first
    with ``at_start``); stop after ``patience`` evaluations without a better primary metric;
    ``on_best(metrics, step)`` runs on the first process whenever the primary metric improves
    (e.g. saving the best model)."""

    evaluator: Evaluator
    model: Any
    every: int
    patience: int | None = None
    on_best: Callable[[dict, int], None] | None = None
    at_start: bool = False

    @property
    def monitor(self) -> str:
        return f"dev_{self.evaluator.primary_metric}"


def pretraining_evaluation(
    config, evaluator: Evaluator | None, model: Any, on_best: Callable[[dict, int], None]
) -> Evaluation | None:
    """The :class:`Evaluation` of a pre-training run whose ``config`` has ``eval_every``
    (``None``: every ``checkpoint_every`` steps) and ``patience``; ``on_best`` keeps the best
    model (:meth:`~ctxsent.training.runs.TrainingRun.keep_best`)."""
    if evaluator is None:
        return None
    every = config.eval_every or config.checkpoint_every
    return Evaluation(evaluator, model, every, config.patience, on_best)


# A run without an Evaluation has no validation loader: nothing to warn about.
warnings.filterwarnings("ignore", "You defined a `validation_step` but have no `val_dataloader`")


class ObjectiveModule(L.LightningModule):
    """Trains any objective (module docstring): ``objective(batch, generator)`` returns
    ``{"loss": ..., part: ...}``; ``loss`` is logged as ``train_loss``, the rest by name,
    except ``tokens`` (real tokens in the batch), which is counted into ``tokens_seen``.

    With ``seeded_steps`` (pre-training), step ``k`` seeds dropout with ``(seed, k, rank)`` and
    hands the objective a generator seeded with ``(seed, k)`` for its draws (the same on every
    rank: :mod:`~ctxsent.objectives.global_batch`); with ``accumulate`` batches a step, each
    batch's seeds also depend on its place in the step. Without (AS2 fine-tuning, whose published
    results were trained so), dropout follows the global RNG, whose state every checkpoint
    keeps, and the generator is ``None``.

    With ``accumulate`` batches a step, seeded steps and ``step_batches`` (step -> this rank's
    batches of that step), an objective with ``step_counts(batch, generator)`` (each loss
    part's count in a batch) is counted over the whole step before its first batch, so that
    each part is the step's mean over its tokens or examples, not the mean of the batches'
    means (:func:`~ctxsent.objectives.global_batch.begin_accumulated_step`). The logged loss
    of one batch is then its share of the step's loss times ``accumulate``.
    """

    def __init__(
        self,
        objective: nn.Module,
        optimizer: OptimizerSettings,
        seed: int,
        evaluation: Evaluation | None = None,
        seeded_steps: bool = True,
        accumulate: int = 1,
        step_batches: Callable[[int], list] | None = None,
    ) -> None:
        super().__init__()
        self.objective, self.optimizer_settings, self.seed = objective, optimizer, seed
        self.evaluation, self.seeded_steps, self.accumulate = evaluation, seeded_steps, accumulate
        self.step_batches = step_batches
        self.best: dict = {}
        self._tokens: int | torch.Tensor = 0  # summed on the device: no host sync a step
        self.start_step = 0

    def _step_seed(self, part: int) -> int:
        return self.seed * 1_000_003 + self.global_step + part * 1_000_000_007

    def _count_step(self) -> None:
        """Count each loss part over all of this step's batches (class docstring)."""
        counting = getattr(self.objective, "step_counts", None)
        if counting is None or self.step_batches is None or not self.seeded_steps:
            return
        totals: dict[str, int] = {}
        for part, micro in enumerate(self.step_batches(self.global_step)):
            generator = torch.Generator(device=self.device).manual_seed(self._step_seed(part))
            for name, count in counting(move_data_to_device(micro, self.device), generator).items():
                totals[name] = totals.get(name, 0) + count
        begin_accumulated_step(totals, self.accumulate, self.device)

    def training_step(self, batch, batch_idx):
        generator = None
        part = batch_idx % self.accumulate  # of the step's accumulated batches
        if part == 0:
            end_accumulated_step()  # whatever an interrupted step left
            if self.accumulate > 1:
                self._count_step()
        if self.seeded_steps:
            step_seed = self._step_seed(part)
            torch.manual_seed(step_seed + 7_919 * self.global_rank)
            generator = torch.Generator(device=self.device).manual_seed(step_seed)
        losses = self.objective(batch, generator)
        if part == self.accumulate - 1:
            end_accumulated_step()
        if "tokens" in losses:
            self._tokens = self._tokens + losses.pop("tokens").detach()
        logged = {"train_loss" if name == "loss" else name: value for name, value in losses.items()}
        self.log_dict(logged, prog_bar=True, batch_size=1)
        return losses["loss"]

    @property
    def tokens_seen(self) -> int:
        return int(self._tokens)

    def on_train_end(self) -> None:
        end_accumulated_step()

    def on_train_start(self) -> None:
        self.start_step = self.global_step  # after a resume, the restored step
        if self.evaluation is not None and self.evaluation.at_start and self.global_step == 0:
            self._evaluated(self.evaluation.evaluator(self.evaluation.model))

    def validation_step(self, batch, batch_idx):
        metrics = self.evaluation.evaluator(self.evaluation.model)
        self.log_dict({f"dev_{k}": float(v) for k, v in _numbers(metrics).items()}, batch_size=1)
        self._evaluated(metrics)

    def _evaluated(self, metrics: dict) -> None:
        primary = metrics[self.evaluation.evaluator.primary_metric]
        if primary > self.best.get("primary", -math.inf):
            self.best = {"primary": primary, "step": self.global_step, "metrics": metrics}
            if self.trainer.is_global_zero and self.evaluation.on_best is not None:
                self.evaluation.on_best(metrics, self.global_step)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["best"] = self.best
        checkpoint["tokens_seen"] = self.tokens_seen
        checkpoint["torch_rng_state"] = torch.get_rng_state()

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self.best = checkpoint.get("best", {})
        self._tokens = checkpoint.get("tokens_seen", 0)
        if not self.seeded_steps and "torch_rng_state" in checkpoint:
            torch.set_rng_state(checkpoint["torch_rng_state"])  # dropout goes on where it was

    def configure_optimizers(self):
        return self.optimizer_settings.build(
            self.objective.named_parameters(), int(self.trainer.estimated_stepping_batches)
        )


def _numbers(metrics: dict) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if isinstance(v, int | float)}


# ---- the one trainer ---------------------------------------------------------------------------
def newest_checkpoint(dirpath: Path, **when) -> ModelCheckpoint:
    """A callback that keeps only the newest checkpoint, ``last.ckpt`` (with no monitor, the
    top 1 is the newest); ``when`` says how often to save. One file: ``save_last`` would add
    a second (Lightning 2.6 writes it only alongside a top-k checkpoint)."""
    return ModelCheckpoint(
        dirpath=dirpath, filename="last", save_top_k=1, enable_version_counter=False, **when
    )


def last_checkpoint(out_dir: Path) -> Path:
    """Where a run in ``out_dir`` keeps the checkpoint it resumes from."""
    return Path(out_dir) / "checkpoints" / "last.ckpt"


@dataclass
class Trained:
    """What :func:`train_objective` did: the trainer's step, whether it resumed, the seconds this
    process trained, the last logged values and the best evaluation (``{}`` without one)."""

    trainer: L.Trainer
    module: ObjectiveModule
    resumed: bool
    seconds: float
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return self.trainer.global_step

    @property
    def steps_this_run(self) -> int:
        return self.trainer.global_step - self.module.start_step

    @property
    def best(self) -> dict:
        return self.module.best

    @property
    def stopped(self) -> str:
        """Why training ended: ``"patience"`` (that many evaluations without a better dev
        metric), ``"max_steps"``, ``"max_time"`` or ``"epochs"`` (the data ran out)."""
        trainer, early = self.trainer, self.trainer.early_stopping_callback
        if early is not None and early.wait_count >= early.patience:
            return "patience"
        if 0 < trainer.max_steps <= trainer.global_step:
            return "max_steps"
        return "max_time" if trainer.should_stop else "epochs"

    @property
    def is_global_zero(self) -> bool:
        return self.trainer.is_global_zero


def train_objective(
    objective: nn.Module,
    loader: DataLoader,
    out: Path,
    placement: RunSettings,
    optimizer: OptimizerSettings,
    *,
    seed: int,
    max_steps: int = -1,
    max_epochs: int = -1,
    max_minutes: float | None = None,
    max_grad_norm: float | None = None,
    checkpoint_every: int | None = None,
    evaluation: Evaluation | None = None,
    callbacks: Sequence[Callback] = (),
    checkpoints: bool = True,
    seeded_steps: bool = True,
    strategy: str | None = None,
    log_every_n_steps: int = 50,
) -> Trained:
    """Train ``objective`` on ``loader`` in the run folder ``out`` with :class:`ObjectiveModule`
    on the one Lightning trainer (module docstring), resuming from ``OUT/checkpoints/last.ckpt``
    when it exists.

    ``placement`` says where and how (precision, devices, strategy, nodes, and
    ``accumulate`` batches a step, which a stream sampler must be built with too);
    ``strategy`` replaces its strategy (a strategy object or a refined name, e.g. DDP that
    expects unused parameters). A batch sampler that follows the trainer
    (:class:`~ctxsent.training.sampling.FollowTrainer`) is kept at its rank, epoch and step.
    A checkpoint follows every evaluation, or every ``checkpoint_every`` steps when that is
    given; ``checkpoints=False`` keeps none (a run that starts again rather than resuming);
    with checkpoints the final state is checkpointed too, so a rerun with more steps goes on
    from it. With an ``evaluation``, the run is evaluated every ``evaluation.every`` steps and
    after the last (unless it stopped early), and stops early on its primary metric.
    ``max_minutes`` stops the run after that much training time in total, across resumes.
    Steps, evaluations and checkpoints count optimizer steps.
    """
    accumulate = placement.accumulate
    sampler, step_batches = loader.batch_sampler, None
    if accumulate > 1 and hasattr(sampler, "step_parts"):

        def step_batches(step: int) -> list:
            dataset, collate = loader.dataset, loader.collate_fn
            return [collate([dataset[i] for i in rows]) for rows in sampler.step_parts(step)]

    module = ObjectiveModule(
        objective, optimizer, seed, evaluation, seeded_steps, accumulate, step_batches
    )
    extra: list[Callback] = list(callbacks)
    if hasattr(loader.batch_sampler, "start_epoch"):
        extra.insert(0, FollowTrainer(loader.batch_sampler))
    if checkpoints:
        when = {"every_n_train_steps": checkpoint_every} if checkpoint_every else {}
        extra.insert(0, newest_checkpoint(Path(out) / "checkpoints", **when))
    evaluating, validation = None, {"limit_val_batches": 0}
    if evaluation is not None:
        evaluating = DataLoader([0], batch_size=None)
        validation = {
            "val_check_interval": evaluation.every * accumulate,  # counted in batches
            "check_val_every_n_epoch": None,
        }
        if evaluation.patience is not None:
            extra.append(
                EarlyStopping(evaluation.monitor, mode="max", patience=evaluation.patience)
            )
    loggers: list = [L.pytorch.loggers.CSVLogger(out, name="logs")]
    if importlib.util.find_spec("tensorboard") is not None:
        loggers.append(L.pytorch.loggers.TensorBoardLogger(out, name="tensorboard"))
    trainer = L.Trainer(
        default_root_dir=out,
        accelerator=placement.accelerator,
        devices=placement.devices,
        strategy=strategy or placement.strategy,
        num_nodes=placement.num_nodes,
        max_epochs=max_epochs,
        max_steps=max_steps,
        max_time={"minutes": max_minutes} if max_minutes else None,
        precision=lightning_precision(placement.precision, device_type(placement.accelerator)),
        gradient_clip_val=max_grad_norm,
        accumulate_grad_batches=accumulate,
        callbacks=[*extra, StderrProgressBar(refresh_rate=10)],
        enable_checkpointing=checkpoints,
        logger=loggers,
        log_every_n_steps=log_every_n_steps,
        num_sanity_val_steps=0,
        enable_model_summary=False,
        use_distributed_sampler=False,
        **validation,
    )
    last = last_checkpoint(out)
    resumed = checkpoints and last.exists()
    objective.train()  # HF loads models in eval mode, which would switch dropout off
    started = time.perf_counter()
    trainer.fit(module, loader, evaluating, ckpt_path=str(last) if resumed else None)
    if (
        evaluation is not None
        and not trainer.should_stop
        and trainer.global_step % evaluation.every
    ):
        trainer.validate(module, evaluating, verbose=False)
    seconds = time.perf_counter() - started
    if checkpoints:
        trainer.save_checkpoint(last)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    return Trained(trainer, module, resumed, seconds, metrics)
