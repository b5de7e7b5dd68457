"""The corpus unit: a document made of paragraphs made of sentences."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class RawDocument:
    """A document as a reader yields it: paragraph texts, not yet split into sentences.

    ``line`` is the 1-based line of the input file where the document starts; it
    decides which shard of a line-sharded file owns the document (``None`` for
    formats that are never sharded).
    """

    id: str
    title: str
    paragraphs: list[str]
    line: int | None = None


@dataclass(slots=True)
class Document:
    """A document after sentence splitting: ``paragraphs[i][j]`` is sentence j of paragraph i."""

    id: str
    title: str
    paragraphs: list[list[str]]

    def to_row(self) -> dict:
        """The Arrow row stored for this document."""
        return {"id": self.id, "title": self.title, "paragraphs": self.paragraphs}
