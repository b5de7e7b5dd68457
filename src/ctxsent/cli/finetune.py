"""``ctxsent finetune as2`` (cross-encoder, cascade, bi-encoder rankers) and ``ctxsent
finetune cross-thought`` (Cross-Thought's Eq. 10 answer selection and Eq. 11 pairs)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.cli.options import (
    OverwriteOption,
    config_options,
)
from ctxsent.cli.pretrain import PLACEMENT, configured, report
from ctxsent.errors import InputError
from ctxsent.training.as2_presets import As2Data, As2RankerSpec, As2TrainConfig
from ctxsent.training.cross_thought_presets import CrossThoughtFineTuneConfig

#: ``finetune as2``'s options of the run's data, and of its config.
AS2_DATA = (
    "sources train_file dev_file test_file columns mine_negatives negatives dev_data "
    "train_split dev_split train_clean dev_clean dev_questions balance_sources"
)
AS2_SETTINGS = (
    "epochs max_steps batch_size learning_rate head_lr_scale warmup_ratio eval_every patience "
    "max_negatives_per_question loss questions_per_batch temperature in_batch_negatives "
    "hard_negatives wise_alpha distill_from distill_weight distill_temperature "
    f"{PLACEMENT} accumulate seed keep_checkpoints"
)

app = typer.Typer(no_args_is_help=True, help="Fine-tune rankers on labelled data.")


@app.command("as2")
@config_options(As2Data, AS2_DATA, into="data", defaults=True)
@config_options(As2RankerSpec, "arch contextual max_length layers fresh_head", into="model")
@config_options(As2TrainConfig, AS2_SETTINGS)
def as2(
    out: Annotated[Path, typer.Option(help="run folder; the best model goes to OUT/model")],
    data: dict,
    init: Annotated[
        str, typer.Option(help="backbone (HF folder/id) or a ctxsent ranker to continue (TANDA)")
    ] = "all-MiniLM-L6-v2",
    preset: Annotated[
        str | None,
        typer.Option(
            help="an as2 preset ('ctxsent presets --family as2'); default: the --arch's "
            "(as2-ARCH), else the default recipe; the options given replace its values"
        ),
    ] = None,
    model: dict | None = None,
    cascade: Annotated[bool, typer.Option(hidden=True, help="replaced by --arch cascade")] = False,
    exits: Annotated[
        str | None,
        typer.Option(
            help="--arch cascade exit layers, e.g. 2,3,4,5,6 (default: the paper's 1/3, 1/2, 2/3, "
            "5/6, 1 of the depth); one exit at the last layer is a monolithic model with "
            "the cascade's mean-pooled classifier"
        ),
    ] = None,
    settings: dict | None = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Fine-tune an AS2 ranker (cross-encoder, cascade, bi-encoder); early stopping on dev
    MAP; resumable.

    Data: --data SPEC, or your own files: --train FILE --dev FILE [--test FILE].
    """
    from ctxsent.training.as2_finetune import run_as2

    if cascade:
        if model.get("arch") not in (None, "cascade"):
            raise InputError("--cascade (now --arch cascade) contradicts --arch", field="arch")
        warnings.warn("--cascade is replaced by --arch cascade", FutureWarning, stacklevel=1)
        model["arch"] = "cascade"
    if exits:
        model["exits"] = _exit_layers(exits)
    record = run_as2(out, As2Data(**data), preset, init, model, settings, overwrite=overwrite)
    report(record, out)


def _exit_layers(text: str) -> tuple[int, ...]:
    """``--exits 2,4,6`` -> ``(2, 4, 6)``."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"expected comma-separated layers, got {text!r}", field="exits") from None


@app.command("cross-thought")
@config_options(
    CrossThoughtFineTuneConfig,
    f"max_steps batch_size learning_rate negatives eval_every seed {PLACEMENT} keep_checkpoints",
)
def cross_thought(
    task: Annotated[Literal["as2", "sick-e", "mrpc"], typer.Option(help="the task")],
    init: Annotated[
        str,
        typer.Option(
            help="a pre-trained cross-thought model folder, or 'backbone': --backbone's "
            "weights with no pre-training (MLM-1 architecture, cosine Eq. 10)"
        ),
    ],
    out: Annotated[Path, typer.Option(help="run folder; AS2 keeps the best ranker in OUT/model")],
    data: Annotated[
        str,
        typer.Option(help="as2: NAME:PATH (e.g. wikiqa:DIR); sick-e/mrpc: the shared data folder"),
    ] = "../shared/data",
    settings: dict | None = None,
    backbone: Annotated[str, typer.Option(help="with --init backbone: the encoder")] = (
        "all-MiniLM-L6-v2"
    ),
    overwrite: OverwriteOption = False,
) -> None:
    """Fine-tune a pre-trained Cross-Thought: answer selection (Eq. 10) or pairs (Eq. 11);
    resumable."""
    from ctxsent.training.cross_thought_train import finetune_cross_thought

    preset = "cross-thought-as2" if task == "as2" else "cross-thought-pairs"
    config = configured(preset, "cross-thought-finetune", settings, None)
    report(finetune_cross_thought(task, init, out, data, config, backbone, overwrite), out)
