"""``ctxsent rank`` and ``ctxsent demo``: answer questions over a document."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from ctxsent.cli.options import (
    AcceleratorOption,
    AlphaOption,
    BatchSizeOption,
    ColumnsOption,
    InferencePrecisionOption,
    ModelOption,
    SplitOption,
)

EXAMPLES = Path(__file__).parent.parent / "examples"


def rank(
    question: Annotated[
        list[str] | None, typer.Option(help="a question (repeat for several); with --document")
    ] = None,
    document: Annotated[
        Path | None, typer.Option(help="text file whose sentences are the candidates")
    ] = None,
    data: Annotated[
        str | None,
        typer.Option(
            help="instead of --question/--document: rank each question's candidates of an AS2 "
            "file or data set (FILE.tsv/.csv/.jsonl/.parquet, hf:NAME, NAME:PATH; labels unused)"
        ),
    ] = None,
    split: SplitOption = None,
    columns: ColumnsOption = None,
    model: ModelOption = "bi-encoder",
    top_k: Annotated[int, typer.Option(min=1, help="answers to show per question")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of text")] = False,
    alpha: AlphaOption = None,
    batch_size: BatchSizeOption = 64,
    accelerator: AcceleratorOption = "auto",
    precision: InferencePrecisionOption = "auto",
) -> None:
    """Answer questions: over a document (split into sentences), or over the candidates of
    each question in a data file; score each candidate and show the best."""
    from ctxsent.serving.answers import rank_answers

    results = rank_answers(
        model, question or (), document, data, split, columns, top_k, alpha,
        batch_size, accelerator, precision,
    )  # fmt: skip
    if as_json:
        payload = [{k: v for k, v in asdict(r).items() if k != "contextual"} for r in results]
        typer.echo(json.dumps(payload, indent=2))
        return
    for result in results:
        typer.secho(f"\nQ: {result.question}", bold=True)
        for place, answer in enumerate(result.answers, start=1):
            typer.echo(f"  {place}. [{answer.score:+.3f}] {answer.candidate}")
            if result.contextual and (answer.previous or answer.next):
                typer.secho(f"       context: {answer.previous} | {answer.next}", dim=True)


def demo(model: ModelOption = "bi-encoder") -> None:
    """Rank the sentences of a sample document for a few questions, on built-in defaults.

    The default ranker is the zero-shot MiniLM bi-encoder: it needs no training and,
    at CPU fine-tuning budgets, beat our fine-tuned cross-encoders (BENCHMARKS.md).
    """
    questions = [
        line for line in (EXAMPLES / "questions.txt").read_text().splitlines() if line.strip()
    ]
    typer.secho(f"model: {model}   document: {EXAMPLES / 'lighthouse.txt'}", dim=True)
    rank(questions, EXAMPLES / "lighthouse.txt", model=model, top_k=2)
