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

from ctxsent.cli.options import OverwriteOption, config_options
from ctxsent.errors import InputError
from ctxsent.presets import apply_overrides, get_preset, presets
from ctxsent.training.cross_thought_presets import CrossThoughtPretrainConfig
from ctxsent.training.encoder_presets import EncoderPretrainConfig
from ctxsent.training.ssp_presets import SspPretrainConfig

app = typer.Typer(no_args_is_help=True, help="Pre-train sentence encoders on a corpus.")
CROSS_THOUGHT_PRESETS = (
    "a cross-thought preset, e.g. cross-thought-1-64 (paper scale) or cross-thought-1-64-cpu "
    "(minutes on CPU); list them with 'ctxsent presets --family cross-thought'"
)
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


def configured(name: str, family: str, settings: dict, assignments: list[str] | None):
    """Preset ``name``'s config, then the command's options that were given (``settings``),
    then the ``--set`` ``assignments``; every key and value checked, nothing loaded."""
    return apply_overrides(replace(get_preset(name, family).config, **settings), assignments or ())


#: The run settings every pre-training command offers.
PRETRAIN_SETTINGS = "accumulate eval eval_every patience keep_checkpoints"
PLACEMENT = "precision accelerator devices strategy num_nodes"


@app.command("cross-thought")
@config_options(
    CrossThoughtPretrainConfig,
    f"max_minutes max_steps backbone {PLACEMENT} seed {PRETRAIN_SETTINGS}",
)
def cross_thought(
    preset: Annotated[str, typer.Option(help=CROSS_THOUGHT_PRESETS)],
    data: Annotated[
        Path, typer.Option(help="a data folder from 'ctxsent pretrain-data cross-thought'")
    ],
    out: Annotated[Path, typer.Option(help="run folder (OUT/model, OUT/run.json); resumable")],
    init: Annotated[
        Literal["backbone", "random"] | None,
        typer.Option(help="'backbone' (its weights) or 'random'; default: the preset's choice"),
    ] = None,
    settings: dict | None = None,
    set_: SetOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Pre-train a Cross-Thought encoder (or an MLM baseline) on a data folder."""
    from ctxsent.training.cross_thought_train import pretrain_cross_thought

    if init is not None:
        settings["from_backbone"] = init == "backbone"
    config = configured(preset, "cross-thought", settings, set_)  # before the data is read
    report(pretrain_cross_thought(data, out, config, overwrite), out)


@app.command("encoder")
@config_options(EncoderPretrainConfig, f"word_vectors max_minutes max_steps {PRETRAIN_SETTINGS}")
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
    settings: dict | None = None,
    set_: SetOption = None,
    list_presets: bool = typer.Option(
        False, "--list", help="Print the encoder presets (as 'ctxsent presets') and exit."
    ),
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
    config = configured(name, "encoder", settings, set_)
    report(pretrain_encoder(data, out, config, overwrite), out)


@app.command("ssp")
@config_options(
    SspPretrainConfig,
    "backbone max_steps batch_size learning_rate head_lr_scale warmup_steps ssp_weight readout "
    f"checkpoint_every {PLACEMENT} seed {PRETRAIN_SETTINGS}",
)
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
    settings: dict | None = None,
    set_: SetOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """MLM + SSP (or ELECTRA: MLM + RTD + SSP) pre-training; resumable; fine-tune OUT/model."""
    from ctxsent.training.ssp_pretrain import pretrain_ssp

    config = configured(preset, "ssp", settings, set_)
    report(pretrain_ssp(data, out, config, overwrite=overwrite), out)
