"""WikiExtractor output: ``<doc id=… url=… title=…>`` blocks, one paragraph per line.

Format (attardi/wikiextractor): a ``<doc …>`` line, the title on its own line, a blank
line, the text, ``</doc>``. Choices:

* Every non-empty line of a document is a paragraph (lead paragraphs are often not
  separated by blank lines); the first line is skipped when, cleaned, it is the title.
* Leftover markup: ``<ref …>…</ref>`` and ``<ref …/>`` go with their content, ``<br>``
  becomes a space, other tags (``<nowiki>``, ``<poem>``, …) go but their text stays, HTML
  entities are unescaped and whitespace runs collapsed; a line left empty is no paragraph.
  The space WikiExtractor leaves where a citation was ("people .") is kept.
* A ``<doc`` line without ``id`` and ``title``, a second ``<doc>`` before ``</doc>``, text
  outside a document, or a missing final ``</doc>`` is an :class:`~ctxsent.errors.InputError`
  naming the file and line.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from itertools import dropwhile
from pathlib import Path

from ctxsent.corpus.document import RawDocument
from ctxsent.errors import InputError
from ctxsent.io import read_lines

_DOC_START = re.compile(r"<doc\b")
_DOC_LINE = re.compile(r"<doc\b(?P<attrs>[^<>]*)>")
_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_REF = re.compile(r"<ref\b[^<>]*/>|<ref\b[^<>]*>.*?</ref>", re.IGNORECASE)
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")


def clean_markup(line: str) -> str:
    """Remove the markup WikiExtractor leaves behind (see the module docstring)."""
    if "<" in line:
        line = _TAG.sub("", _BREAK.sub(" ", _REF.sub("", line)))
    if "&" in line:
        line = html.unescape(line)
    return " ".join(line.split())


def read_wikiextractor(
    path: str | Path, encoding: str = "utf-8", start_line: int = 1
) -> Iterator[RawDocument]:
    """Yield the documents of a WikiExtractor file (``.gz`` read transparently).

    With ``start_line``, lines before the first ``<doc>`` on or after it are skipped unparsed.
    """
    lines = read_lines(path, encoding)
    if start_line > 1:
        lines = dropwhile(lambda item: item[0] < start_line or not _DOC_START.match(item[1]), lines)
    doc: RawDocument | None = None
    title_pending = False
    for line_no, line in lines:
        if _DOC_START.match(line):
            if doc is not None:
                raise InputError(
                    f"<doc> opened before </doc> of line {doc.line}", path=path, line=line_no
                )
            doc = _start_document(line, path, line_no)
            title_pending = True
        elif line.strip() == "</doc>":
            if doc is None:
                raise InputError("</doc> without a matching <doc>", path=path, line=line_no)
            yield doc
            doc = None
        elif doc is None:
            if line.strip():
                raise InputError("text outside <doc> … </doc>", path=path, line=line_no)
        else:
            paragraph = clean_markup(line)
            if paragraph and not (title_pending and paragraph == doc.title):
                doc.paragraphs.append(paragraph)
            title_pending = False
    if doc is not None:
        raise InputError("<doc> not closed by </doc> at end of file", path=path, line=doc.line)


def _start_document(line: str, path: str | Path, line_no: int) -> RawDocument:
    match = _DOC_LINE.fullmatch(line.strip())
    if match is None:
        raise InputError("malformed <doc> line", path=path, line=line_no)
    attributes = dict(_ATTRIBUTE.findall(match["attrs"]))
    for name in ("id", "title"):
        if name not in attributes:
            raise InputError("missing in <doc> line", path=path, line=line_no, field=name)
    return RawDocument(
        id=attributes["id"], title=html.unescape(attributes["title"]), paragraphs=[], line=line_no
    )
