"""``ctxsent cascade``: choose a cascade's drop rates for a cost budget (``tune``) and chain
independently trained rankers into the Sequential Ranker baseline (``sequential``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.cli.options import AlphaOption, BatchSizeOption, OverwriteOption, positive
from ctxsent.errors import InputError

app = typer.Typer(no_args_is_help=True, help="Cascade Transformer tools.")


@app.command("tune")
def tune(
    model: Annotated[Path, typer.Option(help="a saved cascade folder")],
    data: Annotated[str, typer.Option(help="NAME:PATH of the tuning set, e.g. wikiqa:DIR")],
    budget: Annotated[
        float, typer.Option(callback=positive, help="max relative cost (1.0 = monolithic)")
    ],
    split: Annotated[str, typer.Option(help="split to tune on (choose on dev)")] = "dev",
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
) -> None:
    """Choose per-exit drop rates: most accurate on dev within a cost budget."""
    from ctxsent.evaluation.cascade_tuning import plot_settings, pyplot, tune_cascade
    from ctxsent.io import check_writable
    from ctxsent.models.cascade import CascadeRanker
    from ctxsent.models.registry import load_model_folder as load
    from ctxsent.tasks.as2_load import evaluation_records
    from ctxsent.tasks.as2_records import sample_questions

    if save:
        check_writable(model, folder=True)
    if plot is not None:
        check_writable(plot, folder=False)
        pyplot()  # a missing optional dependency stops the run before any work
    ranker = load(model)
    if not isinstance(ranker, CascadeRanker):
        raise InputError("not a cascade model", path=model)
    records = evaluation_records(data, split, clean_questions=True)
    if questions is not None:
        records = sample_questions(records, questions)
    chosen, settings = tune_cascade(ranker, records, budget, metric, search, batch_size)
    if save:
        ranker.config.alphas = list(chosen.alphas)
        ranker.save_pretrained(model)
    if plot is not None:
        plot_settings(settings, chosen, metric, plot)
    report = {
        "alphas": list(chosen.alphas),
        "relative_cost": round(chosen.relative_cost, 4),
        "dev": chosen.metrics,
        "questions": len({r.question_id for r in records}),
        "settings_tried": len(settings),
        "saved": save,
    }
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
    from ctxsent.io import check_output
    from ctxsent.models.registry import load_model_folder as load
    from ctxsent.models.sequential import SequentialRanker
    from ctxsent.models.staged import set_alphas

    check_output(out, SequentialRanker.kind, overwrite)  # before the stages load
    ranker = SequentialRanker([load(folder) for folder in stage])
    set_alphas(ranker, alpha)
    ranker.save_pretrained(out, overwrite)
    report = {"model": str(out), "depths": ranker.depths, "alphas": ranker.alphas}
    typer.echo(json.dumps(report, indent=2))
