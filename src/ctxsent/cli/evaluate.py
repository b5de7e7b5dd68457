"""``ctxsent eval``: AS2 rankers (``as2``), sentence encoders (``senteval``), an SSP head on
held-out examples (``ssp``) and unsupervised paragraph ranking (``retrieval``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from ctxsent.cli.options import (
    AcceleratorOption,
    AlphaOption,
    BatchSizeOption,
    ColumnsOption,
    DataOption,
    InferencePrecisionOption,
    ModelOption,
    SeedOption,
    SplitOption,
    parse_columns,
    report_dropped,
)
from ctxsent.tasks.senteval import DEFAULT_TASKS

app = typer.Typer(no_args_is_help=True, help="Evaluate rankers and sentence encoders.")


@app.command("as2")
def as2(
    model: ModelOption,
    data: DataOption,
    split: SplitOption = None,
    columns: ColumnsOption = None,
    clean_questions: Annotated[
        bool, typer.Option("--clean/--all", help="drop questions without both labels")
    ] = True,
    batch_size: BatchSizeOption = 64,
    alpha: AlphaOption = None,
    against: Annotated[
        str | None,
        typer.Option(
            help="a second model scored on the same questions, or run:FILE (a run that "
            "--run-out wrote): its metrics and MODEL minus it, with 95% paired-bootstrap "
            "intervals over questions"
        ),
    ] = None,
    run_out: Annotated[
        Path | None,
        typer.Option(
            help="also write MODEL's scores as a TREC run file (QID Q0 DOCID RANK SCORE TAG), "
            "for --against run:FILE later"
        ),
    ] = None,
    accelerator: AcceleratorOption = "auto",
    precision: InferencePrecisionOption = "auto",
) -> None:
    """Score an AS2 split and print MAP, MRR, P@1, nDCG@10, Hits@k as one JSON object."""
    from ctxsent.evaluation.as2_evaluation import evaluate_as2_data

    report = evaluate_as2_data(
        model, data, split=split, columns=parse_columns(columns), clean_questions=clean_questions,
        against=against, alpha=alpha, batch_size=batch_size, accelerator=accelerator,
        precision=precision, show_progress=sys.stderr.isatty(), run_out=run_out,
    )  # fmt: skip
    report_dropped(report["dropped"], "; --all keeps them")
    typer.echo(json.dumps(report, indent=2))


@app.command("senteval")
def senteval(
    model: Annotated[
        str,
        typer.Option(
            help="a sentence encoder: a ctxsent encoder folder, glove-bow, bow:PATH, random, "
            "bi-encoder[:BACKBONE], minilm or st:PATH (see ctxsent.resolver)"
        ),
    ],
    tasks: Annotated[
        str, typer.Option(help=f"comma-separated task names, or 'all' ({','.join(DEFAULT_TASKS)})")
    ] = "all",
    data: Annotated[
        Path,
        typer.Option(
            envvar="CTXSENT_SHARED_DATA",
            help="folder laid out as ../shared/data (senteval/, sts12/, stsbenchmark/)",
        ),
    ] = Path("../shared/data"),
    setting: Annotated[
        Literal["quick", "literature"],
        typer.Option(help="quick (one C, for development) | literature (SentEval's)"),
    ] = "quick",
    cache: Annotated[
        Path | None, typer.Option(help="embedding cache folder (~/.cache/ctxsent/senteval)")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="do not read or write it")] = False,
    seed: Annotated[int, typer.Option(min=0, help="seed of folds and classifiers")] = 1111,
    output: Annotated[
        Path | None, typer.Option(help="also write the JSON report here (atomically)")
    ] = None,
    progress: Annotated[bool, typer.Option(help="progress bars on stderr")] = True,
    threads: Annotated[
        int | None,
        typer.Option(min=1, help="torch threads for encoding (1 is fastest on a busy CPU)"),
    ] = None,
    accelerator: AcceleratorOption = "auto",
) -> None:
    """Evaluate a sentence encoder on SentEval-style tasks: JSON on stdout, table on stderr."""
    from ctxsent.evaluation.senteval import DEFAULT_CACHE, evaluate_encoder, markdown_table

    report = evaluate_encoder(
        model, tasks, data, setting=setting, seed=seed, output=output, threads=threads,
        cache_dir=None if no_cache else cache or DEFAULT_CACHE, accelerator=accelerator,
        show_progress=progress, log=lambda line: typer.echo(line, err=True),
    )  # fmt: skip
    sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    typer.echo("\n" + markdown_table([report]), err=True)


@app.command("ssp")
def ssp(
    run: Annotated[Path, typer.Option(help="finished 'ctxsent pretrain ssp' run folder")],
    examples: Annotated[int, typer.Option(min=1, help="held-out examples to score")] = 1000,
    batch_size: BatchSizeOption = 64,
    accelerator: AcceleratorOption = "auto",
) -> None:
    """Score the run's SSP head on examples its training never drew (accuracy, AUC, log-loss)."""
    from ctxsent.evaluation.ssp_heldout import evaluate_run

    typer.echo(json.dumps(evaluate_run(run, examples, batch_size, accelerator), indent=2))


@app.command("retrieval")
def retrieval(
    models: Annotated[
        list[str] | None,
        typer.Argument(metavar="[MODEL]...", help="the models, as --model (older form)"),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(help="bm25, minilm, or a Cross-Thought/MLM model folder (repeatable)"),
    ] = None,
    squad: Annotated[Path, typer.Option(help="SQuAD v1.1 JSON (.gz ok)")] = Path(
        "../shared/data/squad/dev-v1.1.json.gz"
    ),
    questions: Annotated[
        int | None, typer.Option(min=1, help="a seeded random subset of the questions")
    ] = None,
    seed: SeedOption = 0,
    batch_size: BatchSizeOption = 64,
    accelerator: AcceleratorOption = "auto",
) -> None:
    """Unsupervised paragraph ranking (the paper's HotpotQA(u) setting) on SQuAD: Recall@1/5/20."""
    from ctxsent.evaluation.retrieval import squad_retrieval

    if not models and not model:
        raise typer.BadParameter("give at least one model", param_hint="'--model'")
    specs = [*(models or []), *(model or [])]
    results = squad_retrieval(specs, squad, questions, seed, batch_size, accelerator)
    typer.echo(json.dumps(results, indent=2))
