"""``ctxsent data …``: commands that build labelled data sets (mounted by ``ctxsent.cli``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ctxsent.cli.options import OverwriteOption, SeedOption

app = typer.Typer(no_args_is_help=True)


@app.callback()
def data() -> None:
    """Build labelled data sets (AS2)."""


@app.command("squad-as2")
def squad_as2(
    squad: Annotated[Path, typer.Option(help="SQuAD v1.1-format JSON (.json or .json.gz)")],
    out: Annotated[Path, typer.Option(help="folder for {train,dev,test}.jsonl")],
    seed: SeedOption = 0,
    overwrite: OverwriteOption = False,
) -> None:
    """Pair every SQuAD question with every sentence of its article (ASNQ-style AS2).

    A sentence is positive when it holds an answer span. Splits are by article, in the order
    of a seeded hash of the title: dev and test get 15% of the articles each, at least 3
    while train keeps a third (SQuAD v1.1 dev, seed 0: 34 / 7 / 7 articles, 8,170 / 1,258 /
    1,142 questions). Questions are listed round-robin over a split's articles.

    Writes {train,dev,test}.jsonl and summary.json, and prints the summary as JSON.
    """
    from ctxsent.tasks.squad_as2 import build_squad_as2

    typer.echo(json.dumps(build_squad_as2(squad, out, seed, overwrite), indent=2))
