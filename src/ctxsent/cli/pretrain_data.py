"""``ctxsent pretrain-data``: tokenised pre-training examples from a corpus folder (``ctxsent
corpus build``), written as Arrow and read memory-mapped by ``ctxsent pretrain``.

The ELECTRA presets of SSP build their model from scratch with the data folder's tokenizer,
so their data is built with ``--train-tokenizer N`` (a WordPiece vocabulary learned from the
same corpus documents).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.cli.options import OverwriteOption, SeedOption
from ctxsent.cli.pretrain import CROSS_THOUGHT_PRESETS, SetOption, configured
from ctxsent.training.settings import MIN_INPUT_LENGTH

app = typer.Typer(no_args_is_help=True, help="Build pre-training examples.")


@app.command("cross-thought")
def cross_thought(
    corpus: Annotated[Path, typer.Option(help="a corpus folder from 'ctxsent corpus build'")],
    out: Annotated[Path, typer.Option(help="output data folder")],
    preset: Annotated[str, typer.Option(help=CROSS_THOUGHT_PRESETS + "; sets the sequence length")],
    backbone: Annotated[str, typer.Option(help="the tokenizer: the backbone to pre-train")] = (
        "all-MiniLM-L6-v2"
    ),
    num_proc: Annotated[int, typer.Option(min=1, help="worker processes")] = 1,
    max_sequences: Annotated[
        int | None, typer.Option(min=1, help="keep only the first N short sequences")
    ] = None,
    set_: SetOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Cut a corpus into the preset's tokenised short sequences (Arrow, memory-mapped)."""
    from ctxsent.io import check_writable
    from ctxsent.objectives.pretrain_data import build_cross_thought_data

    check_writable(out, folder=True)
    summary = build_cross_thought_data(  # checks the preset and --set before the corpus
        corpus, out, preset, backbone, num_proc, max_sequences, overwrite=overwrite,
        overrides=set_ or (),
    )  # fmt: skip
    typer.echo(json.dumps(summary, indent=2))


@app.command("encoder")
def encoder(
    corpus: Path = typer.Option(..., help="Corpus folder from 'ctxsent corpus build'."),
    out: Path = typer.Option(..., help="Output data folder."),
    preset: str = typer.Option(..., help="An encoder preset ('ctxsent presets --family encoder')."),
    set_: SetOption = None,
    num_proc: int = typer.Option(1, min=1, help="Worker processes."),
    overwrite: OverwriteOption = False,
) -> None:
    """Build an encoder data folder: the preset's vocabulary and the corpus's word ids."""
    from ctxsent.io import check_writable
    from ctxsent.objectives.pretrain_data import build_encoder_data

    check_writable(out, folder=True)
    config = configured(preset, "encoder", {}, set_)  # vocab_size, max_sentences matter
    summary = build_encoder_data(
        corpus, out, config.vocab_size, config.max_sentences, num_proc, preset,
        overwrite=overwrite,
    )  # fmt: skip
    typer.echo(json.dumps(summary, indent=2))


@app.command("ssp")
def ssp(
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
    max_length: Annotated[
        int, typer.Option(min=MIN_INPUT_LENGTH, help="tokens per example, all segments included")
    ] = 128,
    block_size: Annotated[
        int,
        typer.Option(
            min=1, help="documents per work unit; easy negatives come from the same block"
        ),
    ] = 500,
    positives_per_paragraph: Annotated[
        int, typer.Option(min=1, help="positive examples drawn per paragraph")
    ] = 1,
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
    overwrite: OverwriteOption = False,
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
