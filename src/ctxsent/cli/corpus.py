"""``ctxsent corpus``: build sentence corpora from raw text files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ctxsent.corpus.readers import CorpusFormat

app = typer.Typer(
    help="Build corpora: documents → paragraphs → sentences, stored as Arrow datasets.",
    no_args_is_help=True,
)


@app.command()
def build(
    inputs: Annotated[
        list[Path],
        typer.Argument(help="Corpus files; .gz is read transparently.", show_default=False),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the corpus to.")],
    fmt: Annotated[
        CorpusFormat, typer.Option("--format", help="Input format; auto detects it per file.")
    ] = CorpusFormat.AUTO,
    min_sentence_chars: Annotated[int, typer.Option(min=0, help="Drop shorter sentences.")] = 20,
    min_paragraph_chars: Annotated[
        int, typer.Option(min=0, help="Drop paragraphs whose kept sentences are shorter in total.")
    ] = 60,
    min_document_chars: Annotated[
        int, typer.Option(min=0, help="Drop documents whose kept paragraphs are shorter in total.")
    ] = 200,
    exclude_titles: Annotated[
        list[Path] | None,
        typer.Option("--exclude-titles", help="File of titles to drop, one per line (repeatable)."),
    ] = None,
    exclude_from: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude-from",
            help="Drop an evaluation set (repeatable): the articles, by title, of wikiqa:DIR, "
            "selqa:DIR, squad:FILE, squad-as2:DIR or wikitext:FILE; the sentences, by "
            "normalised text, of senteval:DATA_DIR (every SentEval/STS task found) or one "
            "task, e.g. sts12:DATA_DIR, stsb:DATA_DIR, sick-r:DATA_DIR.",
        ),
    ] = None,
    exclude_evaluation_overlaps: Annotated[
        bool,
        typer.Option(
            "--exclude-evaluation-overlaps/--keep-evaluation-overlaps",
            help="Drop the built-in list of Wikipedia articles that overlap WikiText-2, SQuAD "
            "dev, WikiQA and SelQA (the default; --exclude-evaluation-overlaps is accepted).",
        ),
    ] = True,
    num_proc: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    encoding: Annotated[
        str, typer.Option(help="Text encoding of the inputs, e.g. latin-1.")
    ] = "utf-8",
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing corpus folder.")
    ] = False,
) -> None:
    """Split documents into paragraphs and sentences, filter them, and save an Arrow corpus."""
    from ctxsent.corpus.build import build_corpus, check_corpus_output
    from ctxsent.corpus.exclusions import exclusions_from_source
    from ctxsent.corpus.filters import CorpusFilter
    from ctxsent.corpus.titles import EVALUATION_OVERLAP_TITLES, titles_from_file

    check_corpus_output(out, overwrite)  # before the exclusions load
    titles = list(EVALUATION_OVERLAP_TITLES) if exclude_evaluation_overlaps else []
    sentences: list[str] = []
    for path in exclude_titles or []:
        titles += titles_from_file(path)
    for spec in exclude_from or []:
        exclusions = exclusions_from_source(spec)
        titles += exclusions.titles
        sentences += exclusions.sentences
    corpus_filter = CorpusFilter(
        min_sentence_chars=min_sentence_chars,
        min_paragraph_chars=min_paragraph_chars,
        min_document_chars=min_document_chars,
        exclude_titles=frozenset(titles),
        exclude_sentences=frozenset(sentences),
    )
    summary = build_corpus(
        inputs,
        out,
        fmt=fmt,
        corpus_filter=corpus_filter,
        encoding=encoding,
        num_proc=num_proc,
        overwrite=overwrite,
    )
    _print_table(summary, out)
    typer.echo(json.dumps(summary, indent=2, ensure_ascii=False))


def _print_table(summary: dict, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Corpus {out}")
    for column in ("", "kept", "read", "dropped"):
        table.add_column(column, justify="right")
    dropped = summary["dropped"]
    table.add_row(
        "documents",
        f"{summary['documents']:,}",
        f"{summary['read']['documents']:,}",
        f"{dropped['documents_too_short']:,} short + {dropped['documents_excluded_by_title']:,} "
        "excluded",
    )
    table.add_row(
        "paragraphs",
        f"{summary['paragraphs']:,}",
        f"{summary['read']['paragraphs']:,}",
        f"{dropped['paragraphs_too_short']:,} short",
    )
    table.add_row(
        "sentences",
        f"{summary['sentences']:,}",
        f"{summary['read']['sentences']:,}",
        f"{dropped['sentences_too_short']:,} short + {dropped['sentences_excluded_by_text']:,} "
        "excluded",
    )
    table.add_row("tokens", f"{summary['tokens']:,}", f"{summary['read']['tokens']:,}", "")
    table.caption = f"tokens: {summary['token_counter']}"
    Console(stderr=True).print(table)
    unbroken = summary["read"]["documents_without_paragraph_breaks"]
    if unbroken:
        documents = "1 document" if unbroken == 1 else f"{unbroken:,} documents"
        typer.echo(
            f"warning: {documents} had no blank line between paragraphs and each is one "
            "paragraph (in plain text, put a blank line between paragraphs)",
            err=True,
        )
