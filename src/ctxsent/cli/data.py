"""``ctxsent data …``: commands that build labelled data sets (mounted by ``ctxsent.cli``)."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True)


@app.callback()
def data() -> None:
    """Build labelled data sets (AS2)."""


@app.command("squad-as2")
def squad_as2(
    squad: Path = typer.Option(..., "--squad", help="SQuAD v1.1-format JSON (.json or .json.gz)."),
    out: Path = typer.Option(..., "--out", help="Output folder for {train,dev,test}.jsonl."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the article → split assignment."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace OUT even if it is not a squad-as2 folder."
    ),
) -> None:
    """Pair every SQuAD question with every sentence of its article (ASNQ-style AS2).

    A sentence is positive when it holds an answer span.

    Splits are by article, in the order of a seeded hash of the title.

    Dev and test get 15% of the articles each, at least 3 while train keeps a third.

    SQuAD v1.1 dev with seed 0 gives 34 / 7 / 7 articles (8,170 / 1,258 / 1,142 questions).

    Questions are listed round-robin over a split's articles, so the first few span them all.

    Writes {train,dev,test}.jsonl and summary.json, and prints the summary as JSON.
    """
    import json

    from ctxsent.tasks.squad_as2 import build_squad_as2

    summary = build_squad_as2(squad, out, seed, overwrite)
    typer.echo(json.dumps(summary, indent=2))
