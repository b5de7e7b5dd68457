"""``ctxsent rank`` and ``ctxsent demo``: answer questions over a document."""

from __future__ import annotations

import json
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
    parse_columns,
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
    from ctxsent.errors import InputError, check_unicode
    from ctxsent.models.staged import set_alphas
    from ctxsent.resolver import load_ranker

    if (data is None) == (document is None) or (document is not None) != bool(question):
        raise InputError(
            "give --question (repeatable) with --document, or --data alone", field="data"
        )
    for name, value in (("columns", columns), ("split", split)):
        if value is not None and data is None:
            raise InputError("applies to --data only", field=name)
    if data is not None:
        from ctxsent.tasks.as2_load import evaluation_records

        records, _ = evaluation_records(data, split, False, parse_columns(columns))
    else:
        from ctxsent.io import read_lines

        for q in question:
            check_unicode(q, "question")
        text = "\n".join(line for _, line in read_lines(document))
    ranker = load_ranker(model, precision, accelerator)
    set_alphas(ranker, alpha)
    if data is not None:
        from ctxsent.models.ranker_base import rank_questions

        results = [
            (record.question_id, record.question, answers)
            for record, answers in rank_questions(ranker, records, top_k, batch_size)
        ]
    else:
        results = [(q, q, ranker.rank_document(q, text, top_k=top_k)) for q in question]
    if as_json:
        payload = [
            {"question_id": qid, "question": q, "answers": [vars(answer) for answer in answers]}
            for qid, q, answers in results
        ]
        typer.echo(json.dumps(payload, indent=2))
        return
    for _, q, answers in results:
        typer.secho(f"\nQ: {q}", bold=True)
        for place, answer in enumerate(answers, start=1):
            typer.echo(f"  {place}. [{answer.score:+.3f}] {answer.candidate}")
            if ranker.contextual and (answer.previous or answer.next):
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
