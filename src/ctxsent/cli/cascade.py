"""``ctxsent cascade``: choose a cascade's drop rates for a cost budget (``tune``) and chain
independently trained rankers into the Sequential Ranker baseline (``sequential``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.cli.options import (
    AcceleratorOption,
    AlphaOption,
    BatchSizeOption,
    ColumnsOption,
    DataOption,
    OverwriteOption,
    SplitOption,
    parse_columns,
    positive,
    report_dropped,
)

app = typer.Typer(no_args_is_help=True, help="Cascade Transformer tools.")


@app.command("tune")
def tune(
    model: Annotated[Path, typer.Option(help="a saved cascade folder")],
    data: DataOption,
    budget: Annotated[
        float, typer.Option(callback=positive, help="max relative cost (1.0 = monolithic)")
    ],
    split: SplitOption = None,
    columns: ColumnsOption = None,
    questions: Annotated[
        int | None,
        typer.Option(min=1, help="tune on N questions drawn at random (seed 0) from a large split"),
    ] = None,
    metric: Annotated[
        Literal["map", "mrr", "p@1", "ndcg@10"], typer.Option(help="metric the drop rates keep")
    ] = "map",
    search: Annotated[
        Literal["grid", "greedy", "both"],
        typer.Option(help="grid over shared rates, greedy per exit, or both"),
    ] = "both",
    plot: Annotated[Path | None, typer.Option(help="write accuracy vs cost as a PNG")] = None,
    save: Annotated[bool, typer.Option(help="store the chosen rates in the model")] = True,
    batch_size: BatchSizeOption = 64,
    accelerator: AcceleratorOption = "auto",
) -> None:
    """Choose per-exit drop rates: most accurate on dev (a folder's default split) within a
    cost budget."""
    from ctxsent.evaluation.cascade_tuning import tune_saved_cascade

    report = tune_saved_cascade(
        model, data, budget, split=split, columns=parse_columns(columns), questions=questions,
        metric=metric, search=search, plot=plot, save=save, batch_size=batch_size,
        accelerator=accelerator,
    )  # fmt: skip
    report_dropped(report["dropped"])
    typer.echo(json.dumps(report, indent=2))


@app.command("sequential")
def sequential(
    stage: Annotated[
        list[Path], typer.Option(help="a saved ranker per stage, shallowest first (repeat)")
    ],
    out: Annotated[Path, typer.Option(help="folder for the Sequential Ranker")],
    alpha: AlphaOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Chain independently trained rankers into the Sequential Ranker baseline (paper 4.2)."""
    from ctxsent.models.registry import load_model_folder
    from ctxsent.models.sequential import build_sequential

    ranker = build_sequential(stage, out, load_model_folder, alpha, overwrite)
    report = {"model": str(out), "depths": ranker.depths, "alphas": ranker.alphas}
    typer.echo(json.dumps(report, indent=2))
