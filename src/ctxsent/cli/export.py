"""``ctxsent export``: a model to sentence-transformers, a CrossEncoder or ONNX
(:func:`ctxsent.export.export_model`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ctxsent.cli.options import EitherModelOption, ModelArgument, OverwriteOption, one_model
from ctxsent.export import ExportFormat
from ctxsent.onnx_runtime import Quantization


def export(
    argument: ModelArgument = None,
    model: EitherModelOption = None,
    out: Annotated[Path, typer.Option(help="folder to write")] = ...,
    to: Annotated[ExportFormat, typer.Option(help="the format to write")] = "onnx",
    overwrite: OverwriteOption = False,
    quantize: Annotated[
        Quantization,
        typer.Option(help="--to onnx: int8 weights (dynamic quantisation; scores change slightly)"),
    ] = "none",
) -> None:
    """Export a model: an encoder to sentence-transformers, a ranker to a CrossEncoder, a
    cross-encoder or bi-encoder to ONNX."""
    from ctxsent.export import export_model

    model = one_model(argument, model)
    export_model(model, out, to, overwrite, quantize)
    typer.echo(json.dumps({"model": model, "format": to, "out": str(out)}))
