"""``ctxsent pretrain``: Cross-Thought (or its MLM baselines), the RNN-CNN and Mean-Max AAE
encoders, and SSP continuous pre-training (MLM + SSP, or ELECTRA: MLM + RTD + SSP).

Each reads a data folder from ``ctxsent pretrain-data``; each run folder resumes when the
command is run again with it. Settings come from ``--preset`` (``ctxsent presets``), then the
command's own options, then ``--set key=value`` (any field of the preset's config, typed by
:func:`~ctxsent.presets.apply_overrides`; tuples as ``600,1200``, ``none`` for no value), all
checked before any data or model is loaded.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.cli.options import (
    AcceleratorOption,
    AccumulateOption,
    DevicesOption,
    EvalEveryOption,
    EvalOption,
    NumNodesOption,
    OverwriteOption,
    PatienceOption,
    PrecisionOption,
    SeedOption,
    StrategyOption,
    finite,
    positive,
)
from ctxsent.errors import InputError
from ctxsent.presets import apply_overrides, get_preset, presets
from ctxsent.training.settings import Accelerator, Precision, Strategy

app = typer.Typer(no_args_is_help=True, help="Pre-train sentence encoders on a corpus.")
CROSS_THOUGHT_PRESETS = (
    "a cross-thought preset, e.g. cross-thought-1-64 (paper scale) or cross-thought-1-64-cpu "
    "(minutes on CPU); list them with 'ctxsent presets --family cross-thought'"
)
KeepCheckpointsOption = Annotated[
    bool,
    typer.Option(
        help="keep OUT/checkpoints when the run finishes (to go on with more steps later); "
        "by default a finished run keeps none, an interrupted one its newest"
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="override a setting of the preset: KEY=VALUE (repeatable; tuples as a,b; 'none' "
        "for no value); the keys are the fields of the preset's config",
    ),
]


def report(record: dict, out: Path) -> None:
    """Print a finished run's record (``OUT/run.json``) and where its model is."""
    typer.echo(json.dumps({"model": str(out / "model"), **record}, indent=2))


def configured(name: str, family: str, flags: dict, assignments: list[str] | None):
    """Preset ``name``'s config, then the command's options that were given (not ``None``),
    then the ``--set`` ``assignments``; every key and value checked, nothing loaded."""
    config = get_preset(name, family).config
    config = replace(config, **{k: v for k, v in flags.items() if v is not None})
    return apply_overrides(config, assignments or ())


@app.command("cross-thought")
def cross_thought(
    preset: Annotated[str, typer.Option(help=CROSS_THOUGHT_PRESETS)],
    data: Annotated[
        Path, typer.Option(help="a data folder from 'ctxsent pretrain-data cross-thought'")
    ],
    out: Annotated[Path, typer.Option(help="run folder (OUT/model, OUT/run.json); resumable")],
    max_minutes: Annotated[
        float | None,
        typer.Option(
            "--max-minutes",
            "--budget",
            callback=positive,
            help="stop after this many minutes (total, across resumes)",
        ),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="override the preset's steps")
    ] = None,
    backbone: Annotated[
        str, typer.Option(help="tokenizer and architecture (BERT-style); the data's tokenizer")
    ] = "all-MiniLM-L6-v2",
    init: Annotated[
        Literal["backbone", "random"] | None,
        typer.Option(help="'backbone' (its weights) or 'random'; default: the preset's choice"),
    ] = None,
    precision: PrecisionOption = "auto",
    accelerator: AcceleratorOption = "auto",
    devices: DevicesOption = "auto",
    strategy: StrategyOption = "auto",
    num_nodes: NumNodesOption = 1,
    seed: SeedOption = 0,
    accumulate: AccumulateOption = None,
    eval_: EvalOption = None,
    eval_every: EvalEveryOption = None,
    patience: PatienceOption = None,
    set_: SetOption = None,
    keep_checkpoints: KeepCheckpointsOption = False,
    overwrite: OverwriteOption = False,
) -> None:
    """Pre-train a Cross-Thought encoder (or an MLM baseline) on a data folder."""
    from ctxsent.training.cross_thought_train import pretrain_cross_thought

    flags = dict(
        backbone=backbone, from_backbone=None if init is None else init == "backbone",
        max_steps=max_steps, max_minutes=max_minutes, precision=precision,
        accelerator=accelerator, devices=devices, strategy=strategy, num_nodes=num_nodes,
        seed=seed, accumulate=accumulate, eval=eval_, eval_every=eval_every, patience=patience,
        keep_checkpoints=keep_checkpoints or None,
    )  # fmt: skip
    config = configured(preset, "cross-thought", flags, set_)  # before the data is read
    report(pretrain_cross_thought(data, out, config, overwrite), out)


@app.command("encoder")
def encoder(
    preset: str | None = typer.Argument(
        None, help="An encoder preset, e.g. rnn-cnn-small-cpu (see --list); or use --preset."
    ),
    preset_option: str | None = typer.Option(
        None, "--preset", help="The encoder preset, as an option (same as the argument)."
    ),
    data: Path | None = typer.Option(
        None, help="Data folder from 'ctxsent pretrain-data encoder' (same vocabulary settings)."
    ),
    out: Path | None = typer.Option(None, help="Run folder; rerun with it to resume."),
    word_vectors: str | None = typer.Option(
        None, help="GloVe/word2vec file or folder, 'glove-6b-50d', or 'none' (random init)."
    ),
    max_minutes: float | None = typer.Option(
        None, callback=positive, help="Wall-clock budget of the whole run."
    ),
    max_steps: int | None = typer.Option(None, min=1, help="Optimiser steps of the whole run."),
    accumulate: AccumulateOption = None,
    eval_: EvalOption = None,
    eval_every: EvalEveryOption = None,
    patience: PatienceOption = None,
    set_: SetOption = None,
    list_presets: bool = typer.Option(
        False, "--list", help="Print the encoder presets (as 'ctxsent presets') and exit."
    ),
    keep_checkpoints: KeepCheckpointsOption = False,
    overwrite: OverwriteOption = False,
) -> None:
    """Pre-train an RNN-CNN or Mean-Max AAE sentence encoder; saves OUT/model."""
    from ctxsent.training.encoder_pretrain import pretrain_encoder

    if list_presets:
        for item in presets("encoder"):
            typer.echo(f"{item.name}\t{item.description}")
        return
    if preset is not None and preset_option is not None and preset != preset_option:
        raise InputError(f"two presets given: {preset} and {preset_option}", field="preset")
    name = preset or preset_option
    if name is None:
        raise InputError("name a preset (see --list)", field="preset")
    if data is None or out is None:
        raise InputError("--data and --out are required", field="data" if data is None else "out")
    flags = dict(
        word_vectors=word_vectors, max_minutes=max_minutes, max_steps=max_steps,
        accumulate=accumulate, eval=eval_, eval_every=eval_every, patience=patience,
        keep_checkpoints=keep_checkpoints or None,
    )  # fmt: skip
    config = configured(name, "encoder", flags, set_)
    report(pretrain_encoder(data, out, config, overwrite), out)


@app.command("ssp")
def ssp(
    data: Annotated[Path, typer.Option(help="folder from 'ctxsent pretrain-data ssp'")],
    out: Annotated[Path, typer.Option(help="run folder; the model goes to OUT/model")],
    preset: Annotated[
        str,
        typer.Option(
            help="an ssp preset ('ctxsent presets --family ssp'); ELECTRA presets use the "
            "data's tokenizer (pretrain-data ssp --train-tokenizer)"
        ),
    ] = "ssp-dpc-cpu",
    backbone: Annotated[
        str | None, typer.Option(help="override the preset's backbone (not for ELECTRA)")
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="override the preset's steps")
    ] = None,
    batch_size: Annotated[
        int | None, typer.Option(min=1, help="override the preset's batch size")
    ] = None,
    lr: Annotated[
        float | None, typer.Option(callback=positive, help="override the preset's learning rate")
    ] = None,
    head_lr_scale: Annotated[
        float | None,
        typer.Option(callback=positive, help="learning-rate multiplier of the new SSP head"),
    ] = None,
    warmup_steps: Annotated[
        int | None, typer.Option(min=0, help="override the preset's warm-up steps")
    ] = None,
    ssp_weight: Annotated[
        float | None,
        typer.Option(
            min=0,
            callback=finite,
            help="SSP loss weight (paper: 1, equal to MLM); 0 = the MLM-only control",
        ),
    ] = None,
    readout: Annotated[
        Literal["cls", "mean"] | None,
        typer.Option(help="cls (the paper's [CLS] head) | mean (the cascade's mean-pooled FFN)"),
    ] = None,
    checkpoint_every: Annotated[
        int | None,
        typer.Option("--checkpoint-every", "--save-every", min=1, help="steps between checkpoints"),
    ] = None,
    precision: Annotated[
        Precision | None, typer.Option(help="training precision (default: the preset's)")
    ] = None,
    accelerator: Annotated[
        Accelerator | None, typer.Option(help="where Lightning trains (default: the preset's)")
    ] = None,
    devices: DevicesOption = None,
    strategy: Annotated[
        Strategy | None, typer.Option(help="Lightning strategy (default: the preset's, auto)")
    ] = None,
    num_nodes: Annotated[
        int | None, typer.Option(min=1, help="machines (torchrun / SLURM); default 1")
    ] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="override the preset's seed")] = None,
    accumulate: AccumulateOption = None,
    eval_: EvalOption = None,
    eval_every: EvalEveryOption = None,
    patience: PatienceOption = None,
    set_: SetOption = None,
    keep_checkpoints: KeepCheckpointsOption = False,
    overwrite: OverwriteOption = False,
) -> None:
    """MLM + SSP (or ELECTRA: MLM + RTD + SSP) pre-training; resumable; fine-tune OUT/model."""
    from ctxsent.training.ssp_pretrain import pretrain_ssp

    flags = dict(
        backbone=backbone, max_steps=max_steps, batch_size=batch_size, learning_rate=lr,
        head_lr_scale=head_lr_scale, warmup_steps=warmup_steps, ssp_weight=ssp_weight,
        readout=readout, checkpoint_every=checkpoint_every, precision=precision,
        accelerator=accelerator, devices=devices, strategy=strategy, num_nodes=num_nodes,
        seed=seed, accumulate=accumulate, eval=eval_, eval_every=eval_every, patience=patience,
        keep_checkpoints=keep_checkpoints or None,
    )  # fmt: skip
    config = configured(preset, "ssp", flags, set_)
    report(pretrain_ssp(data, out, config, overwrite=overwrite), out)
