"""Readers: stream raw documents out of corpus files, one generator per format.

Every reader has the signature ``read(path, encoding="utf-8") -> Iterator[RawDocument]``
(the line-oriented ones also take ``start_line``, see :mod:`ctxsent.corpus.shards`),
reads ``.gz`` transparently, never holds more than one document in memory
(SQuAD, a single JSON value, is parsed whole) and raises
:class:`~ctxsent.errors.InputError` naming the file and line for bad input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path

from ctxsent.corpus.document import RawDocument
from ctxsent.corpus.readers.jsonl import read_jsonl
from ctxsent.corpus.readers.plaintext import read_text
from ctxsent.corpus.readers.squad import read_squad
from ctxsent.corpus.readers.wikiextractor import read_wikiextractor
from ctxsent.corpus.readers.wikitext import is_title_line, read_wikitext
from ctxsent.io import open_text

Reader = Callable[[str | Path, str], Iterator[RawDocument]]


class CorpusFormat(StrEnum):
    AUTO = "auto"
    WIKIEXTRACTOR = "wikiextractor"
    WIKITEXT = "wikitext"
    TEXT = "text"
    JSONL = "jsonl"
    SQUAD = "squad"


READERS: dict[CorpusFormat, Reader] = {
    CorpusFormat.WIKIEXTRACTOR: read_wikiextractor,
    CorpusFormat.WIKITEXT: read_wikitext,
    CorpusFormat.TEXT: read_text,
    CorpusFormat.JSONL: read_jsonl,
    CorpusFormat.SQUAD: read_squad,
}

_SNIFF_LINES = 1000


def detect_format(path: str | Path) -> CorpusFormat:
    """Guess a file's format from its name, then from its first non-blank line.

    ``*.jsonl`` → JSONL and ``*.json`` → SQuAD (``.gz`` ignored); otherwise a
    first line ``<doc …`` → WikiExtractor, `` = Title = `` → WikiText, ``{`` → JSONL,
    anything else → plain text. Raises :class:`~ctxsent.errors.InputError` for a
    missing file.
    """
    suffix = Path(Path(path).name.removesuffix(".gz")).suffix.lower()
    if suffix == ".jsonl":
        return CorpusFormat.JSONL
    if suffix == ".json":
        return CorpusFormat.SQUAD
    first = _first_non_blank_line(path)
    if first.startswith("<doc"):
        return CorpusFormat.WIKIEXTRACTOR
    if is_title_line(first.strip()):
        return CorpusFormat.WIKITEXT
    if first.startswith("{"):
        return CorpusFormat.JSONL
    return CorpusFormat.TEXT


def _first_non_blank_line(path: str | Path) -> str:
    # Latin-1 decodes any byte, and the markers sniffed for are ASCII.
    with open_text(path, encoding="latin-1") as handle:
        for _, line in zip(range(_SNIFF_LINES), handle, strict=False):
            if line.strip():
                return line
    return ""


def read_documents(
    path: str | Path, fmt: CorpusFormat = CorpusFormat.AUTO, encoding: str = "utf-8"
) -> Iterator[RawDocument]:
    """Stream the raw documents of one file (format detected when ``fmt`` is ``auto``)."""
    if fmt == CorpusFormat.AUTO:
        fmt = detect_format(path)
    return READERS[CorpusFormat(fmt)](path, encoding)


__all__ = ["READERS", "CorpusFormat", "RawDocument", "Reader", "detect_format", "read_documents"]
