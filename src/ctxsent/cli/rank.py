"""``ctxsent rank`` and ``ctxsent demo``: answer questions over a document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ctxsent.cli.options import AlphaOption, ModelOption

EXAMPLES = Path(__file__).parent.parent / "examples"


def rank(
    question: Annotated[list[str], typer.Option(help="a question (repeat for several)")],
    document: Annotated[Path, typer.Option(help="text file whose sentences are the candidates")],
    model: ModelOption = "bi-encoder",
    top_k: Annotated[int, typer.Option(min=1, help="answers to show per question")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of text")] = False,
    alpha: AlphaOption = None,
) -> None:
    """Answer questions over a document: split it into sentences, score each, show the best."""
    from ctxsent.errors import check_unicode
    from ctxsent.io import read_lines
    from ctxsent.models.staged import set_alphas
    from ctxsent.resolver import load_ranker

    for q in question:
        check_unicode(q, "question")
    text = "\n".join(line for _, line in read_lines(document))
    ranker = load_ranker(model)
    set_alphas(ranker, alpha)
    results = {q: ranker.rank_document(q, text, top_k=top_k) for q in question}
    if as_json:
        payload = [
            {"question": q, "answers": [vars(answer) for answer in answers]}
            for q, answers in results.items()
        ]
        typer.echo(json.dumps(payload, indent=2))
        return
    for q, answers in results.items():
        typer.secho(f"\nQ: {q}", bold=True)
        for place, answer in enumerate(answers, start=1):
            typer.echo(f"  {place}. [{answer.score:+.3f}] {answer.candidate}")
            if ranker.contextual and (answer.previous or answer.next):
                typer.secho(f"       context: {answer.previous} | {answer.next}", dim=True)


def demo(
    model: Annotated[
        str, typer.Option(help="bm25 | bi-encoder[:BACKBONE] | a saved ctxsent ranker folder")
    ] = "bi-encoder",
) -> None:
    """Rank the sentences of a sample document for a few questions, on built-in defaults.

    The default ranker is the zero-shot MiniLM bi-encoder: it needs no training and,
    at CPU fine-tuning budgets, beat our fine-tuned cross-encoders (BENCHMARKS.md).
    """
    questions = [
        line for line in (EXAMPLES / "questions.txt").read_text().splitlines() if line.strip()
    ]
    typer.secho(f"model: {model}   document: {EXAMPLES / 'lighthouse.txt'}", dim=True)
    rank(questions, EXAMPLES / "lighthouse.txt", model=model, top_k=2, as_json=False, alpha=None)
