"""Settings every training run has (:class:`RunSettings`, :class:`PretrainSettings`), and the
values their choice settings take, for the configs and the CLI alike.

Configs check them in ``__post_init__`` (:func:`~ctxsent.errors.check_choice`); the CLI
offers them as the option's choices. Nothing heavy is imported, so ``--help`` stays instant.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar, Literal, get_args

from ctxsent.errors import check_choice, check_range

#: Training precision (:mod:`ctxsent.models.precision`; ``int8`` is for inference only).
Precision = Literal["auto", "fp32", "bf16", "fp16"]
#: Where Lightning trains: ``auto`` is the GPU when there is one.
Accelerator = Literal["auto", "cpu", "gpu", "cuda"]
#: Lightning strategies for many GPUs or machines.
Strategy = Literal["auto", "ddp", "ddp_spawn", "ddp_fork", "ddp_notebook", "fsdp"]
#: AS2 fine-tuning losses (:class:`~ctxsent.training.as2_finetune.As2TrainConfig`).
Loss = Literal["pointwise", "listwise"]
#: AS2 ranker architectures (:class:`~ctxsent.training.as2_finetune.As2RankerSpec`).
Arch = Literal["cross-encoder", "cascade", "bi-encoder"]

PRECISIONS: tuple[str, ...] = get_args(Precision)
ACCELERATORS: tuple[str, ...] = get_args(Accelerator)
STRATEGIES: tuple[str, ...] = get_args(Strategy)
LOSSES: tuple[str, ...] = get_args(Loss)
ARCHS: tuple[str, ...] = get_args(Arch)

#: Shortest input of a cross-encoder: ``[CLS]``, three ``[SEP]`` and a few tokens of each
#: segment (:func:`~ctxsent.models.segments.encode_segments`).
MIN_INPUT_LENGTH = 8


@dataclass(kw_only=True)
class RunSettings:
    """Where a run trains and how (:mod:`~ctxsent.training.engine`), for every training
    config: inherited keyword-only, so a config's own fields keep their order and are listed
    first (:func:`~ctxsent.presets.setting_names`). A subclass calls ``super().__post_init__()``."""

    #: batches whose gradients make one optimizer step: the batch is split in this many
    #: forward passes (gradient accumulation; less memory, the same batch size)
    accumulate: int = 1
    precision: str = "auto"
    accelerator: str = "auto"
    devices: int | str = "auto"
    #: Lightning strategy: "auto", "ddp", "fsdp", ... (many GPUs or machines).
    strategy: str = "auto"
    num_nodes: int = 1
    #: keep ``OUT/checkpoints`` when the run finishes (to go on with more steps later);
    #: by default a finished run keeps none, an interrupted one its newest
    keep_checkpoints: bool = False
    #: the settings a resumed run may change: how long it goes
    limits: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        check_range(self, "num_nodes", 1)
        check_range(self, "accumulate", 1, getattr(self, "batch_size", None))
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

    eval: str | None = None
    eval_every: int | None = None
    patience: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "eval_every patience", 1)
