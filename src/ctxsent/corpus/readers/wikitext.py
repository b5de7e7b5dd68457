"""WikiText raw files (``wiki.valid.raw``): `` = Title = `` articles, one paragraph per line.

Choices: a `` = Title = `` line is a title only between blank lines (or the file's edges),
as two equation lines of the test split also start with `` = ``; section headings
`` = = Section = = `` follow the same rule and are dropped; every other non-blank line is a
paragraph. The escapes ``@-@``, ``@,@``, ``@.@`` are undone (``3 @.@ 1`` → ``3.1``), the
rest of the tokenisation kept. Text before the first title is an untitled document; a
document's id is its title's line number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ctxsent.corpus.document import RawDocument
from ctxsent.io import read_lines

_ESCAPE = re.compile(r" ?@([-,.])@ ?")


def unescape_wikitext(text: str) -> str:
    """Undo WikiText's ``@-@``, ``@,@`` and ``@.@`` escapes."""
    return _ESCAPE.sub(r"\1", text) if "@" in text else text


def is_title_line(stripped: str) -> bool:
    """``= Title =`` (already stripped), not a section heading ``= = Section = =``."""
    return (
        len(stripped) > 4
        and stripped.startswith("= ")
        and stripped.endswith(" =")
        and not stripped.startswith("= =")
    )


def _is_heading_line(stripped: str) -> bool:
    return stripped.startswith("= =") and stripped.endswith("= =")


def read_wikitext(
    path: str | Path, encoding: str = "utf-8", start_line: int = 1
) -> Iterator[RawDocument]:
    """Yield the articles of a WikiText raw file that start on or after ``start_line``."""
    lines = read_lines(path, encoding)
    doc: RawDocument | None = None
    previous_blank = True
    upcoming = next(lines, None)
    while upcoming is not None:
        line_no, line = upcoming
        upcoming = next(lines, None)
        stripped = line.strip()
        if not stripped:
            previous_blank = True
            continue
        framed = previous_blank and (upcoming is None or not upcoming[1].strip())
        previous_blank = False
        if framed and is_title_line(stripped):
            if doc is not None and doc.line >= start_line:
                yield doc
            title = unescape_wikitext(stripped[2:-2].strip())
            doc = RawDocument(id=str(line_no), title=title, paragraphs=[], line=line_no)
        elif framed and _is_heading_line(stripped):
            continue
        else:
            if doc is None:
                doc = RawDocument(id=str(line_no), title="", paragraphs=[], line=line_no)
            if doc.line >= start_line:
                doc.paragraphs.append(unescape_wikitext(stripped))
    if doc is not None and doc.line >= start_line:
        yield doc
