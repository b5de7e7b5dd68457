"""``ctxsent pipeline build``: a retrieve-then-rerank pipeline saved as one model folder
(:mod:`ctxsent.models.pipeline`), which ``rank``, ``eval as2`` and ``serve`` take like any
model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ctxsent.cli.options import OverwriteOption

app = typer.Typer(no_args_is_help=True, help="Retrieve-then-rerank pipelines.")


@app.command("build")
def build(
    retriever: Annotated[
        str,
        typer.Option(
            help="first stage: bm25, bi-encoder[:BACKBONE], a saved bi-encoder folder, or a "
            "hybrid of them joined by '+' (hybrid = bm25+bi-encoder)"
        ),
    ],
    reranker: Annotated[
        str, typer.Option(help="a saved ranker folder (cross-encoder, cascade, ...) or a spec")
    ],
    top_k: Annotated[int, typer.Option(min=1, help="candidates per question the reranker sees")],
    out: Annotated[Path, typer.Option(help="folder to write the pipeline to")],
    fusion: Annotated[
        str, typer.Option(help="hybrid first stage: rrf (reciprocal rank fusion, k=60) or rrf:K")
    ] = "rrf",
    overwrite: OverwriteOption = False,
) -> None:
    """Chain a first stage and a reranker into one model folder."""
    from ctxsent.resolver import build_pipeline

    folder = build_pipeline(retriever, reranker, top_k, out, fusion, overwrite)
    report = {"model": str(folder), "retriever": retriever, "reranker": reranker, "top_k": top_k}
    typer.echo(json.dumps(report, indent=2))
