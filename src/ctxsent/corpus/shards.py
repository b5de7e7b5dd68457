"""Split the input files into shards that worker processes build independently.

A line-oriented file (WikiExtractor, WikiText, JSONL) is cut into line ranges;
a document belongs to the shard holding the line it starts on. Every shard's
reader streams its file from the top (gzip cannot seek), skipping the documents
before its range without processing them, and stops after its range. Shards
are listed in file order and each yields its documents in order, so the corpus
is the same for any number of processes. Plain text and SQuAD files are one
shard each.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ctxsent.corpus.document import RawDocument
from ctxsent.corpus.readers import READERS, CorpusFormat
from ctxsent.corpus.readers.jsonl import read_jsonl
from ctxsent.corpus.readers.wikiextractor import read_wikiextractor
from ctxsent.corpus.readers.wikitext import read_wikitext
from ctxsent.errors import InputError

#: Readers of line-oriented formats; they skip documents starting before ``start_line``.
LINE_SHARDED: dict[CorpusFormat, Callable[..., Iterator[RawDocument]]] = {
    CorpusFormat.WIKIEXTRACTOR: read_wikiextractor,
    CorpusFormat.WIKITEXT: read_wikitext,
    CorpusFormat.JSONL: read_jsonl,
}

#: Shards per process: more than one lets the contiguous groups that
#: ``datasets`` hands to each process come out roughly equal in size.
SHARDS_PER_PROCESS = 4


@dataclass(frozen=True)
class Shard:
    """Documents of ``path`` starting on lines ``first_line`` … ``end_line - 1`` (1-based)."""

    index: int
    path: str
    format: CorpusFormat
    encoding: str = "utf-8"
    first_line: int = 1
    end_line: int | None = None

    def documents(self) -> Iterator[RawDocument]:
        """Stream the raw documents this shard owns."""
        if self.format not in LINE_SHARDED:
            yield from READERS[self.format](self.path, self.encoding)
            return
        read = LINE_SHARDED[self.format]
        for doc in read(self.path, self.encoding, start_line=self.first_line):
            if self.end_line is not None and doc.line >= self.end_line:
                return
            yield doc


def count_lines(path: str | Path) -> int:
    """Number of lines of a (``.gz``) file, counted on raw bytes."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", path=path)
    opener = gzip.open if path.suffix == ".gz" else open
    lines, last = 0, b"\n"
    with opener(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


def plan_shards(
    files: list[tuple[str | Path, CorpusFormat]], encoding: str = "utf-8", num_proc: int = 1
) -> list[Shard]:
    """One shard per file for one process; line ranges of about equal size for more."""
    if num_proc <= 1:
        return [Shard(i, str(path), fmt, encoding) for i, (path, fmt) in enumerate(files)]
    sizes = [count_lines(path) if fmt in LINE_SHARDED else 0 for path, fmt in files]
    target = max(1, math.ceil(sum(sizes) / (num_proc * SHARDS_PER_PROCESS)))
    shards: list[Shard] = []
    for (path, fmt), size in zip(files, sizes, strict=True):
        pieces = max(1, round(size / target))
        bounds = [1 + size * k // pieces for k in range(pieces)] + [None]
        for first, end in zip(bounds, bounds[1:], strict=False):
            shards.append(Shard(len(shards), str(path), fmt, encoding, first, end))
    return shards
