"""The values that choice settings of training runs take, for the configs and the CLI alike.

Configs check them in ``__post_init__`` (:func:`~ctxsent.errors.check_choice`); the CLI
offers them as the option's choices. Nothing heavy is imported, so ``--help`` stays instant.
"""

from __future__ import annotations

from typing import Literal, get_args

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
