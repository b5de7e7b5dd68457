"""Text utilities shared by corpus building, AS2 data and ranking."""

from ctxsent.text.sentences import neighbours, sentence_spans, split_sentences

__all__ = ["neighbours", "sentence_spans", "split_sentences"]
