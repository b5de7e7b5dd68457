"""``ctxsent corpus``: build sentence corpora from raw text files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ctxsent.cli.options import OverwriteOption
from ctxsent.corpus.readers import CorpusFormat

app = typer.Typer(
    help="Build corpora: documents → paragraphs → sentences, stored as Arrow datasets.",
    no_args_is_help=True,
)


@app.command()
def build(
    inputs: Annotated[
        list[Path],
        typer.Argument(help="corpus files; .gz is read transparently", show_default=False),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="folder to write the corpus to")],
    fmt: Annotated[
        CorpusFormat, typer.Option("--format", help="input format; auto detects it per file")
    ] = CorpusFormat.AUTO,
    min_sentence_chars: Annotated[int, typer.Option(min=0, help="drop shorter sentences")] = 20,
    min_paragraph_chars: Annotated[
        int, typer.Option(min=0, help="drop paragraphs whose kept sentences are shorter in total")
    ] = 60,
    min_document_chars: Annotated[
        int, typer.Option(min=0, help="drop documents whose kept paragraphs are shorter in total")
    ] = 200,
    exclude_titles: Annotated[
        list[Path] | None,
        typer.Option(help="file of titles to drop, one per line (repeatable; = titles:FILE)"),
    ] = None,
    exclude_from: Annotated[
        list[str] | None,
        typer.Option(
            help="drop an evaluation set (repeatable): the articles, by title, of wikiqa:DIR, "
            "selqa:DIR, squad:FILE, squad-as2:DIR or wikitext:FILE; the sentences, by "
            "normalised text, of senteval:DATA_DIR (every SentEval/STS task found) or one "
            "task, e.g. sts12:DATA_DIR, stsb:DATA_DIR, sick-r:DATA_DIR"
        ),
    ] = None,
    exclude_evaluation_overlaps: Annotated[
        bool,
        typer.Option(
            "--exclude-evaluation-overlaps/--keep-evaluation-overlaps",
            help="drop the built-in list of Wikipedia articles that overlap WikiText-2, SQuAD "
            "dev, WikiQA and SelQA",
        ),
    ] = True,
    num_proc: Annotated[int, typer.Option(min=1, help="worker processes")] = 1,
    encoding: Annotated[str, typer.Option(help="text encoding of the inputs, e.g. latin-1")] = (
        "utf-8"
    ),
    overwrite: OverwriteOption = False,
) -> None:
    """Split documents into paragraphs and sentences, filter them, and save an Arrow corpus;
    print its summary as JSON."""
    from ctxsent.corpus.build import build_corpus
    from ctxsent.corpus.filters import CorpusFilter

    keep = {} if exclude_evaluation_overlaps else {"exclude_titles": frozenset()}
    corpus_filter = CorpusFilter(
        min_sentence_chars, min_paragraph_chars, min_document_chars, **keep
    )
    sources = [f"titles:{path}" for path in exclude_titles or []] + (exclude_from or [])
    summary = build_corpus(
        inputs, out, fmt=fmt, corpus_filter=corpus_filter, exclude_from=sources,
        encoding=encoding, num_proc=num_proc, overwrite=overwrite,
    )  # fmt: skip
    typer.echo(json.dumps(summary, indent=2, ensure_ascii=False))
