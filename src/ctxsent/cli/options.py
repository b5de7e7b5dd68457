"""Command-line options that several command groups share, defined once.

Numbers are checked against their valid range when the command starts (typer's ``min`` and
``max``, :func:`positive`; every float option is finite: :func:`finite`), choices against
their values (``Literal`` types), so a bad value is a usage error before any work starts.
"""

from __future__ import annotations

import math
import re
from typing import Annotated

import typer

from ctxsent.models.precision import PrecisionName
from ctxsent.training.settings import Accelerator, Precision, Strategy

OverwriteOption = Annotated[
    bool,
    typer.Option(
        help="Replace the output even if ctxsent did not write it there; a training run "
        "starts again instead of resuming (needed when OUT holds a run with other settings)."
    ),
]

SeedOption = Annotated[int, typer.Option(min=0, help="random seed")]


def finite(value: float | None) -> float | None:
    """Option callback of every float option: refuse NaN and infinity, which compare false
    with every bound (``min``, ``max``) and would turn limits off or fail later."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}")
    return value


def positive(value: float | None) -> float | None:
    """Option callback: refuse a number that is not finite and > 0 (a learning rate, a
    time budget)."""
    if finite(value) is not None and value <= 0:
        raise typer.BadParameter(f"must be > 0, got {value}")
    return value


def devices(text: str) -> int | str:
    """Parse ``--devices``: ``auto``, a count >= 1, ``-1`` (all) or GPU ids such as ``0,1``."""
    if text.isdigit() and int(text) >= 1:
        return int(text)
    if text in ("auto", "-1") or re.fullmatch(r"(\d+,)+\d*", text):
        return text
    raise ValueError("expected auto, a count >= 1, -1 (all) or ids like 0,1")


DevicesOption = Annotated[
    str, typer.Option(parser=devices, help="auto, a count, -1 (all) or GPU ids like 0,1")
]

ModelOption = Annotated[
    str,
    typer.Option(
        help="a saved ranker folder, bm25, bi-encoder[:BACKBONE], st:PATH or ce:PATH "
        "(sentence-transformers); see ctxsent.resolver"
    ),
]

AlphaOption = Annotated[
    str | None,
    typer.Option(help="cascade drop rate, or one per non-final exit: 0.3 or 0.3,0.3,0.2,0.1"),
]

ColumnsOption = Annotated[
    str | None,
    typer.Option(
        help="your file's column names: question=Query,candidate=Passage,label=Relevant "
        "(fields: question candidate label question_id previous next document_id "
        "document_title)"
    ),
]

PrecisionOption = Annotated[
    Precision,
    typer.Option(
        help="training precision: auto (bf16 on GPUs and on CPUs with native bf16, else "
        "fp32), fp32, bf16 or fp16 (mixed, fp32 master weights)"
    ),
]

InferencePrecisionOption = Annotated[
    PrecisionName,
    typer.Option(
        help="inference precision: auto (bf16 on GPUs and on CPUs with native bf16, else fp32; "
        "scores stay fp32), fp32, bf16, fp16, int8 (cross-encoders on the CPU)"
    ),
]

AcceleratorOption = Annotated[
    Accelerator, typer.Option(help="where it runs: auto (a GPU if there is one), cpu, gpu")
]

BatchSizeOption = Annotated[int, typer.Option(min=1, help="records per forward pass")]

StrategyOption = Annotated[
    Strategy,
    typer.Option(help="Lightning strategy: auto, ddp (several GPUs or CPU processes), fsdp"),
]

NumNodesOption = Annotated[int, typer.Option(min=1, help="machines (torchrun / SLURM)")]

AccumulateOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="split each batch into this many forward passes whose gradients add up to one "
        "step (gradient accumulation: less memory, the same batch)",
    ),
]
EvalOption = Annotated[
    str | None,
    typer.Option(
        "--eval",
        help="evaluate during training, keep the best model in OUT and stop early on it: "
        "as2:DATA (dev MAP), senteval:FOLDER[:TASK,...], squad:FILE[:QUESTIONS] (Recall@20); "
        "SSP also 'heldout' (AUC on its unseen examples)",
    ),
]
EvalEveryOption = Annotated[
    int | None, typer.Option(min=1, help="steps between evaluations (default: every checkpoint)")
]
PatienceOption = Annotated[
    int | None,
    typer.Option(min=1, help="stop after this many evaluations without a better metric"),
]
