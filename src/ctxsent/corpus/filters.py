"""The corpus filters: evaluation exclusions, then the SSP paper's length filters.

Defaults follow the context-aware AS2 pre-training paper (section 5): sentences under 20
characters, paragraphs under 60 and documents under 200 are dropped. In order:

1. a document whose title is excluded (by default the built-in evaluation overlaps,
   :data:`~ctxsent.corpus.titles.EVALUATION_OVERLAP_TITLES`) is dropped before splitting;
2. sentences shorter than ``min_sentence_chars`` are removed;
3. sentences equal to an excluded one are removed (:mod:`ctxsent.corpus.exclusions`;
   after 2, so only sentences that would be kept count as excluded);
4. paragraphs whose *remaining* sentences total under ``min_paragraph_chars`` go (an empty
   one always does);
5. documents whose remaining paragraphs total under ``min_document_chars`` go.

Lengths are string lengths (code points) of the sentences, without the spaces between them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ctxsent.corpus.document import Document, RawDocument
from ctxsent.corpus.exclusions import normalize_sentence, normalize_sentences
from ctxsent.corpus.stats import CorpusStats
from ctxsent.corpus.titles import EVALUATION_OVERLAP_TITLES, normalize_title, normalize_titles
from ctxsent.text import split_sentences


@dataclass(frozen=True)
class CorpusFilter:
    """Which documents, paragraphs and sentences make it into the corpus.

    ``exclude_titles`` (default: the built-in evaluation overlaps; pass an empty set to
    keep them) and ``exclude_sentences`` may be given in any spelling; they are stored
    normalised (:func:`~ctxsent.corpus.titles.normalize_title`,
    :func:`~ctxsent.corpus.exclusions.normalize_sentence`).
    """

    min_sentence_chars: int = 20
    min_paragraph_chars: int = 60
    min_document_chars: int = 200
    exclude_titles: frozenset[str] = frozenset(EVALUATION_OVERLAP_TITLES)
    exclude_sentences: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "exclude_titles", normalize_titles(self.exclude_titles))
        object.__setattr__(self, "exclude_sentences", normalize_sentences(self.exclude_sentences))

    def excludes(self, title: str) -> bool:
        return bool(self.exclude_titles) and normalize_title(title) in self.exclude_titles

    def excludes_sentence(self, sentence: str) -> bool:
        return bool(self.exclude_sentences) and (
            normalize_sentence(sentence) in self.exclude_sentences
        )

    def to_dict(self) -> dict:
        return {
            "min_sentence_chars": self.min_sentence_chars,
            "min_paragraph_chars": self.min_paragraph_chars,
            "min_document_chars": self.min_document_chars,
            "excluded_title_count": len(self.exclude_titles),
            "excluded_sentence_count": len(self.exclude_sentences),
        }


def process_document(
    raw: RawDocument, corpus_filter: CorpusFilter, stats: CorpusStats
) -> Document | None:
    """Exclude, split into sentences and filter one document, counting into ``stats``."""
    stats.documents_read += 1
    if corpus_filter.excludes(raw.title):
        stats.documents_excluded += 1
        stats.excluded_titles.append(raw.title)
        return None
    if len(raw.paragraphs) == 1:
        stats.documents_without_paragraph_breaks += 1
    paragraphs = [
        _filter_paragraph(split_sentences(text), corpus_filter, stats) for text in raw.paragraphs
    ]
    kept = [sentences for sentences in paragraphs if sentences]
    if _chars(kept) < corpus_filter.min_document_chars:
        stats.documents_dropped += 1
        return None
    stats.documents += 1
    stats.paragraphs += len(kept)
    stats.sentences += sum(len(sentences) for sentences in kept)
    stats.tokens += sum(len(sentence.split()) for sentences in kept for sentence in sentences)
    return Document(id=raw.id, title=raw.title, paragraphs=kept)


def _filter_paragraph(
    sentences: list[str], corpus_filter: CorpusFilter, stats: CorpusStats
) -> list[str]:
    stats.paragraphs_read += 1
    stats.sentences_read += len(sentences)
    stats.tokens_read += sum(len(sentence.split()) for sentence in sentences)
    long_enough = [s for s in sentences if len(s) >= corpus_filter.min_sentence_chars]
    stats.sentences_dropped += len(sentences) - len(long_enough)
    kept = [s for s in long_enough if not corpus_filter.excludes_sentence(s)]
    stats.sentences_excluded += len(long_enough) - len(kept)
    if not kept or sum(map(len, kept)) < corpus_filter.min_paragraph_chars:
        stats.paragraphs_dropped += 1
        return []
    return kept


def _chars(paragraphs: Iterable[list[str]]) -> int:
    return sum(len(sentence) for sentences in paragraphs for sentence in sentences)
