"""JSON Lines: one document per line.

Each non-blank line is an object with ``text`` (paragraphs separated by blank
lines, hard-wrapped lines joined) or ``paragraphs`` (a list of strings), and
optionally ``title`` and ``id`` (default: the line number). Anything else is an
:class:`~ctxsent.errors.InputError` naming the file, line and field.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import dropwhile
from pathlib import Path

from ctxsent.corpus.document import RawDocument
from ctxsent.corpus.readers.plaintext import blank_line_paragraphs
from ctxsent.errors import InputError
from ctxsent.io import read_json_lines


def read_jsonl(
    path: str | Path, encoding: str = "utf-8", start_line: int = 1
) -> Iterator[RawDocument]:
    """Yield one document per JSON line, from line ``start_line`` on."""
    lines = read_json_lines(path, encoding)
    for line_no, record in dropwhile(lambda item: item[0] < start_line, lines):
        yield RawDocument(
            id=_string_field(record, "id", str(line_no), path, line_no),
            title=_string_field(record, "title", "", path, line_no),
            paragraphs=_paragraphs(record, path, line_no),
            line=line_no,
        )


def _string_field(record: dict, name: str, default: str, path: str | Path, line_no: int) -> str:
    value = record.get(name, default)
    if not isinstance(value, str | int):
        raise InputError("expected a string", path=path, line=line_no, field=name)
    return str(value)


def _paragraphs(record: dict, path: str | Path, line_no: int) -> list[str]:
    if "paragraphs" in record:
        paragraphs = record["paragraphs"]
        if not isinstance(paragraphs, list) or not all(isinstance(p, str) for p in paragraphs):
            raise InputError(
                "expected a list of strings", path=path, line=line_no, field="paragraphs"
            )
        return [" ".join(p.split()) for p in paragraphs if p.strip()]
    if "text" in record:
        if not isinstance(record["text"], str):
            raise InputError("expected a string", path=path, line=line_no, field="text")
        return list(blank_line_paragraphs(record["text"].splitlines()))
    raise InputError("missing (give 'text' or 'paragraphs')", path=path, line=line_no, field="text")
