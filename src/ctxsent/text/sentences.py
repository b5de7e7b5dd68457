"""Sentence splitting with nupunkt (Punkt-style, no downloads).

The papers split with NLTK's Punkt tokenizer (SSP paper, section 5); nupunkt is
a fast reimplementation with a bundled English model, so no data download is
needed. Spans are character offsets into the input with surrounding
whitespace trimmed, so callers can match answer offsets (SQuAD) against them.
"""

from __future__ import annotations

import nupunkt


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Return ``(start, end)`` character offsets of the sentences in ``text``.

    Whitespace at either end of a sentence is excluded; empty sentences are dropped.
    """
    spans = []
    for start, end in nupunkt.sent_spans(text):
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append((start, end))
    return spans


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences (whitespace-trimmed, none empty)."""
    return [text[start:end] for start, end in sentence_spans(text)]


def neighbours(sentences: list[str]) -> list[tuple[str, str]]:
    """``(previous, next)`` sentence of each sentence ("" at the ends): AS2 context."""
    padded = ["", *sentences, ""]
    return list(zip(padded[:-2], padded[2:], strict=True))
