"""Settings every training run has (:class:`RunSettings`, :class:`PretrainSettings`), and the
values their choice settings take, for the configs and the CLI alike.

Configs check them in ``__post_init__`` (:func:`~ctxsent.errors.check_choice`), and the
ranges their :func:`setting` fields declare (:func:`check_settings`); the CLI offers the
same choices and ranges. Nothing heavy is imported, so ``--help`` stays instant.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, get_args

from ctxsent.errors import check_choice, check_range

#: Training precision (:mod:`ctxsent.models.precision`; ``int8`` is for inference only).
Precision = Literal["auto", "fp32", "bf16", "fp16"]
#: Where Lightning trains: ``auto`` is the GPU when there is one.
Accelerator = Literal["auto", "cpu", "gpu", "cuda"]
#: Lightning strategies for many GPUs or machines.
Strategy = Literal["auto", "ddp", "ddp_spawn", "ddp_fork", "ddp_notebook", "fsdp"]
#: AS2 fine-tuning losses (:class:`~ctxsent.training.as2_presets.As2TrainConfig`).
Loss = Literal["pointwise", "listwise"]
#: AS2 ranker architectures (:class:`~ctxsent.training.as2_presets.As2RankerSpec`).
Arch = Literal["cross-encoder", "cascade", "bi-encoder"]

PRECISIONS: tuple[str, ...] = get_args(Precision)
ACCELERATORS: tuple[str, ...] = get_args(Accelerator)
STRATEGIES: tuple[str, ...] = get_args(Strategy)
LOSSES: tuple[str, ...] = get_args(Loss)
ARCHS: tuple[str, ...] = get_args(Arch)

#: Shortest input of a cross-encoder: ``[CLS]``, three ``[SEP]`` and a few tokens of each
#: segment (:func:`~ctxsent.models.segments.encode_segments`).
MIN_INPUT_LENGTH = 8


def setting(default: Any, help: str, **option: Any) -> Any:
    """A config field with ``help``, the text of its command-line option, and the option's
    ``flags`` (when not ``--FIELD``), ``min``, ``max`` or ``positive`` (> 0): the CLI builds
    the option from them (:func:`ctxsent.cli.options.config_options`)."""
    return field(default=default, metadata={"help": help, **option})


def check_settings(config: object) -> None:
    """Check every field of ``config`` whose :func:`setting` declares a range (``min``,
    ``max``, ``positive``) with :func:`~ctxsent.errors.check_range`: the bounds the CLI
    offers are the ones the config enforces, declared once. Fields without a setting
    check their ranges in their config's ``__post_init__``."""
    for declared in fields(config):
        meta = declared.metadata
        positive = meta.get("positive", False)
        low = 0 if positive else meta.get("min")
        if low is not None or meta.get("max") is not None:
            check_range(config, declared.name, low, meta.get("max"), above=positive)


@dataclass(kw_only=True)
class RunSettings:
    """Where a run trains and how (:mod:`~ctxsent.training.engine`), for every training
    config: inherited keyword-only, so a config's own fields keep their order and are listed
    first (:func:`~ctxsent.presets.setting_names`). A subclass calls ``super().__post_init__()``."""

    accumulate: int = setting(
        1, "split each batch into this many forward passes whose gradients add up to one "
        "step (gradient accumulation: less memory, the same batch)", min=1,
    )  # fmt: skip
    precision: Precision = setting(
        "auto", "training precision: auto (bf16 on GPUs and on CPUs with native bf16, else "
        "fp32), fp32, bf16 or fp16 (mixed, fp32 master weights)",
    )  # fmt: skip
    accelerator: Accelerator = setting(
        "auto", "where it runs: auto (a GPU if there is one), cpu, gpu"
    )
    devices: int | str = setting("auto", "auto, a count, -1 (all) or GPU ids like 0,1")
    strategy: Strategy = setting(
        "auto", "Lightning strategy: auto, ddp (several GPUs or CPU processes), fsdp"
    )
    num_nodes: int = setting(1, "machines (torchrun / SLURM)", min=1)
    keep_checkpoints: bool = setting(
        False, "keep OUT/checkpoints when the run finishes (to go on with more steps later); "
        "by default a finished run keeps none, an interrupted one its newest",
    )  # fmt: skip
    #: the settings a resumed run may change: how long it goes
    limits: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        check_settings(self)
        check_range(self, "accumulate", None, getattr(self, "batch_size", None))
        check_choice(self, "precision", PRECISIONS)
        check_choice(self, "accelerator", ACCELERATORS)
        check_choice(self, "strategy", STRATEGIES)


def warn_uneven_accumulation(batch_size: int, accumulate: int, what: str = "items") -> None:
    """Warn when a batch of ``batch_size`` does not split into ``accumulate`` equal parts:
    each part holds ``batch_size // accumulate``, so a step trains on fewer (run functions
    call it where they split their batches)."""
    if batch_size % accumulate:
        part = batch_size // accumulate
        warnings.warn(
            f"a batch of {batch_size} {what} does not divide by accumulate {accumulate}: "
            f"each step trains on {accumulate} x {part} = {accumulate * part}",
            stacklevel=2,
        )


@dataclass(kw_only=True)
class PretrainSettings(RunSettings):
    """:class:`RunSettings` and an evaluator during pre-training
    (:mod:`ctxsent.evaluation.specs`): dev metrics every ``eval_every`` steps (``None``: every
    checkpoint), the best model kept, early stopping after ``patience`` evaluations without
    a better primary metric."""

    eval: str | None = setting(
        None, "evaluate during training, keep the best model in OUT and stop early on it: "
        "as2:DATA (dev MAP), senteval:FOLDER[:TASK,...], squad:FILE[:QUESTIONS] (Recall@20); "
        "SSP also 'heldout' (AUC on its unseen examples)", flags=("--eval",),
    )  # fmt: skip
    eval_every: int | None = setting(
        None, "steps between evaluations (default: every checkpoint)", min=1
    )
    patience: int | None = setting(
        None, "stop after this many evaluations without a better metric", min=1
    )
