"""Raw text -> documents -> paragraphs -> sentences, stored as Arrow datasets.

``build_corpus`` reads WikiExtractor, WikiText, plain text, JSONL or SQuAD files, splits
paragraphs into sentences (nupunkt), drops evaluation data (:mod:`ctxsent.corpus.exclusions`),
applies the SSP paper's length filters and saves one row per document; ``load_corpus``
opens the result.
"""

from ctxsent.corpus.build import build_corpus
from ctxsent.corpus.document import Document, RawDocument
from ctxsent.corpus.filters import CorpusFilter
from ctxsent.corpus.readers import CorpusFormat, detect_format, read_documents
from ctxsent.corpus.storage import Corpus, load_corpus
from ctxsent.corpus.titles import EVALUATION_OVERLAP_TITLES, normalize_title

__all__ = [
    "EVALUATION_OVERLAP_TITLES",
    "Corpus",
    "CorpusFilter",
    "CorpusFormat",
    "Document",
    "RawDocument",
    "build_corpus",
    "detect_format",
    "load_corpus",
    "normalize_title",
    "read_documents",
]
