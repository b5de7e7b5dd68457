"""Command functions for SSP pre-training, mounted by ``ctxsent.cli``.

``ctxsent pretrain-data ssp`` builds tokenised SSP examples from a corpus
folder; ``ctxsent pretrain ssp`` runs MLM + SSP continuous pre-training from a
named preset. The ELECTRA presets build their model from scratch with the data
folder's tokenizer, so their data is built with ``--train-tokenizer N``
(a WordPiece vocabulary learned from the same corpus documents). Heavy imports
stay inside the functions so ``--help`` is instant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.cli_options import DevicesOption, OverwriteOption, SeedOption, positive
from ctxsent.training.settings import MIN_INPUT_LENGTH, Accelerator, Precision


def pretrain_data_ssp(
    corpus: Annotated[Path, typer.Option(help="corpus folder ('ctxsent corpus build')")],
    out: Annotated[Path, typer.Option(help="output dataset folder")],
    objective: Annotated[
        Literal["sdc", "dpc", "dslc", "all"], typer.Option(help="the SSP objective")
    ] = "dpc",
    tokenizer: Annotated[
        str, typer.Option(help="tokenizer of the backbone to pre-train (name or folder)")
    ] = "all-MiniLM-L6-v2",
    num_proc: Annotated[int, typer.Option(min=1, help="worker processes")] = 1,
    seed: SeedOption = 0,
    max_length: Annotated[int, typer.Option(min=MIN_INPUT_LENGTH)] = 128,
    block_size: Annotated[
        int,
        typer.Option(
            min=1, help="documents per work unit; easy negatives come from the same block"
        ),
    ] = 500,
    positives_per_paragraph: Annotated[int, typer.Option(min=1)] = 1,
    max_documents: Annotated[
        int | None, typer.Option(min=1, help="use the first N documents")
    ] = None,
    train_tokenizer: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="train a WordPiece tokenizer of this vocabulary size on the corpus and use it "
            "instead of --tokenizer (ELECTRA presets: 30522 on GPUs, 8000 on CPU)",
        ),
    ] = None,
    overwrite: bool = False,
) -> None:
    """Build SSP (s1, s2, context, label) examples, tokenised (SSP paper, section 4)."""
    from ctxsent.io import check_writable
    from ctxsent.objectives.ssp import SspConfig
    from ctxsent.objectives.ssp_data import build_ssp_dataset

    check_writable(out, folder=True)
    config = SspConfig(
        objective=objective,
        seed=seed,
        max_length=max_length,
        block_size=block_size,
        positives_per_paragraph=positives_per_paragraph,
    )
    summary = build_ssp_dataset(
        corpus,
        out,
        config,
        tokenizer,
        num_proc,
        overwrite,
        max_documents=max_documents,
        vocab_size=train_tokenizer,
    )
    typer.echo(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=2))


def pretrain_ssp(
    data: Annotated[Path, typer.Option(help="folder from 'ctxsent pretrain-data ssp'")],
    out: Annotated[Path, typer.Option(help="run folder; the model goes to OUT/model")],
    preset: Annotated[
        str,
        typer.Option(
            help="ssp-{sdc,dpc,dslc,all}[-electra|-electra-small] (GPU scale) or "
            "ssp-...[-electra]-cpu; ELECTRA presets use the data's tokenizer (--train-tokenizer)"
        ),
    ] = "ssp-dpc-cpu",
    backbone: Annotated[
        str | None, typer.Option(help="override the preset's backbone (not for ELECTRA)")
    ] = None,
    max_steps: Annotated[int | None, typer.Option(min=1)] = None,
    batch_size: Annotated[int | None, typer.Option(min=1)] = None,
    lr: Annotated[float | None, typer.Option(callback=positive)] = None,
    head_lr_scale: Annotated[
        float | None,
        typer.Option(callback=positive, help="learning-rate multiplier of the new SSP head"),
    ] = None,
    warmup_steps: Annotated[int | None, typer.Option(min=0)] = None,
    ssp_weight: Annotated[
        float | None,
        typer.Option(
            min=0, help="SSP loss weight (paper: 1, equal to MLM); 0 = the MLM-only control"
        ),
    ] = None,
    readout: Annotated[
        Literal["cls", "mean"] | None,
        typer.Option(help="cls (the paper's [CLS] head) | mean (the cascade's mean-pooled FFN)"),
    ] = None,
    save_every: Annotated[int | None, typer.Option(min=1)] = None,
    precision: Precision | None = None,
    accelerator: Accelerator | None = None,
    devices: DevicesOption = None,
    seed: Annotated[int | None, typer.Option(min=0)] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """MLM + SSP (or ELECTRA: MLM + RTD + SSP) pre-training; resumable; fine-tune OUT/model."""
    from ctxsent.io import check_writable
    from ctxsent.training.ssp_pretrain import preset as named
    from ctxsent.training.ssp_pretrain import pretrain_ssp as run

    check_writable(out, folder=True)
    config = named(
        preset,
        backbone=backbone,
        max_steps=max_steps,
        batch_size=batch_size,
        learning_rate=lr,
        head_lr_scale=head_lr_scale,
        warmup_steps=warmup_steps,
        ssp_weight=ssp_weight,
        readout=readout,
        save_every=save_every,
        precision=precision,
        accelerator=accelerator,
        devices=devices,
        seed=seed,
    )
    result = run(data, out, config, overwrite=overwrite)
    typer.echo(json.dumps({k: result[k] for k in ("steps", "final")}, indent=2))


def eval_ssp(
    run: Annotated[Path, typer.Option(help="finished 'ctxsent pretrain ssp' run folder")],
    examples: Annotated[int, typer.Option(min=1, help="held-out examples to score")] = 1000,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
) -> None:
    """Score the run's SSP head on examples its training never drew (accuracy, AUC, log-loss)."""
    from ctxsent.training.ssp_heldout import evaluate_run

    typer.echo(json.dumps(evaluate_run(run, examples, batch_size), indent=2))
