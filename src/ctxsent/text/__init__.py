"""Text utilities shared by corpus building, AS2 data and ranking."""

from ctxsent.text.sentences import sentence_spans, split_sentences

__all__ = ["sentence_spans", "split_sentences"]
