"""Counts gathered while building a corpus, summed over shards."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

#: How ``tokens`` are counted everywhere in corpus summaries.
TOKEN_COUNTER = "whitespace-separated words (str.split)"


@dataclass
class CorpusStats:
    """What was read, excluded (documents by title, sentences by text), dropped by each length
    filter, and kept.

    ``*_read`` counts cover the documents not excluded by title; each ``*_excluded`` or
    ``*_dropped`` counts only what its own filter removed, so ``documents_read = documents +
    documents_excluded + documents_dropped``. ``documents_without_paragraph_breaks`` counts
    documents read as one paragraph (plain text without blank lines between paragraphs)."""

    documents_read: int = 0
    documents_without_paragraph_breaks: int = 0
    paragraphs_read: int = 0
    sentences_read: int = 0
    tokens_read: int = 0
    documents_excluded: int = 0
    sentences_excluded: int = 0
    sentences_dropped: int = 0
    paragraphs_dropped: int = 0
    documents_dropped: int = 0
    documents: int = 0
    paragraphs: int = 0
    sentences: int = 0
    tokens: int = 0
    excluded_titles: list[str] = field(default_factory=list)

    def merge(self, other: CorpusStats) -> None:
        for item in fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> CorpusStats:
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))

    def to_summary(self) -> dict:
        """The counts as reported in ``summary.json``."""
        return {
            "documents": self.documents,
            "paragraphs": self.paragraphs,
            "sentences": self.sentences,
            "tokens": self.tokens,
            "token_counter": TOKEN_COUNTER,
            "read": {
                "documents": self.documents_read,
                "paragraphs": self.paragraphs_read,
                "sentences": self.sentences_read,
                "tokens": self.tokens_read,
                "documents_without_paragraph_breaks": self.documents_without_paragraph_breaks,
            },
            "dropped": {
                "documents_excluded_by_title": self.documents_excluded,
                "sentences_excluded_by_text": self.sentences_excluded,
                "sentences_too_short": self.sentences_dropped,
                "paragraphs_too_short": self.paragraphs_dropped,
                "documents_too_short": self.documents_dropped,
            },
            "excluded_titles": sorted(set(self.excluded_titles)),
        }
