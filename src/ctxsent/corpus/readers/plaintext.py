"""Plain text: one document per file, paragraphs separated by blank lines.

Hard-wrapped lines of a paragraph are stripped and joined with one space. The
whole file is one document (id and title: the file name without ``.gz`` and
its extension), so it is held in memory while it is split; put collections of
many documents in JSONL instead. Nothing is removed (a Project Gutenberg
header stays part of the text). Pass ``encoding`` for non-UTF-8 files
(``latin-1`` for some Gutenberg texts).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import groupby
from pathlib import Path

from ctxsent.corpus.document import RawDocument
from ctxsent.io import read_lines


def blank_line_paragraphs(lines: Iterable[str]) -> Iterator[str]:
    """Group lines into paragraphs at blank lines, joining each paragraph's lines with a space."""
    for nonblank, block in groupby((line.strip() for line in lines), key=bool):
        if nonblank:
            yield " ".join(block)


def document_name(path: str | Path) -> str:
    """``austen-emma.txt.gz`` → ``austen-emma``."""
    name = Path(path).name
    name = name.removesuffix(".gz")
    return name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name


def read_text(path: str | Path, encoding: str = "utf-8") -> Iterator[RawDocument]:
    """Yield the file as one document."""
    lines = (line for _, line in read_lines(path, encoding))
    name = document_name(path)
    yield RawDocument(id=name, title=name, paragraphs=list(blank_line_paragraphs(lines)), line=1)
