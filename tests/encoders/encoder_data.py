"""Synthetic corpora and word vectors for the encoder tests, and the corpus as word ids in
memory (:func:`tokenize_corpus`): the reference an encoder data folder's lazy
:class:`~ctxsent.objectives.pretrain_data.ArrowSentences` is checked against."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctxsent.corpus import Document
from ctxsent.errors import InputError
from ctxsent.text.vocabulary import Vocabulary
from synthetic import write_corpus  # noqa: F401  (the encoder tests' corpus folders)

WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "ran",
    "on",
    "under",
    "mat",
    "rug",
    "red",
    "blue",
    "big",
    "small",
    "bird",
    "fish",
    "swam",
    "flew",
]


def synthetic_documents(n_documents: int = 6, seed: int = 0) -> list[Document]:
    """Documents of 2 paragraphs x 3 sentences of 3-8 words from :data:`WORDS`."""
    rng = np.random.default_rng(seed)
    documents = []
    for d in range(n_documents):
        paragraphs = [
            [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 9)))) + "." for _ in range(3)]
            for _ in range(2)
        ]
        documents.append(Document(f"doc{d}", f"Title {d}", paragraphs))
    return documents


def write_word_vectors(path: Path, dim: int = 16, extra: int = 30, seed: int = 0) -> Path:
    """A GloVe text file covering :data:`WORDS` plus ``extra`` words unseen in the corpus."""
    rng = np.random.default_rng(seed)
    words = [*WORDS, ".", *(f"novel{i}" for i in range(extra))]
    lines = [w + " " + " ".join(f"{x:.5f}" for x in rng.normal(size=dim)) for w in words]
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass(frozen=True)
class TokenizedCorpus:
    """A corpus as word ids: sentence ``i`` is ``tokens[starts[i]:ends[i]]``.

    ``document_ends[i]`` is where the token stream of sentence ``i``'s document
    ends (the next-window targets never cross documents) and ``next_sentence[i]``
    is the index of the following sentence of the same document, or -1.
    """

    tokens: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    document_ends: np.ndarray
    next_sentence: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    def sentence(self, i: int) -> np.ndarray:
        return self.tokens[self.starts[i] : self.ends[i]]

    # what the example datasets read (next_window, reconstruct); a data folder's
    # :class:`~ctxsent.objectives.pretrain_data.ArrowSentences` answers the same, lazily
    def sentence_lengths(self) -> np.ndarray:
        return self.ends - self.starts

    def document_sizes(self) -> np.ndarray:
        """Sentences in each document, in order."""
        return np.diff(np.concatenate([[-1], np.flatnonzero(self.next_sentence < 0)]))

    def following(self, i: int, count: int) -> np.ndarray:
        """Up to ``count`` tokens after sentence ``i``, inside its document."""
        return self.tokens[self.ends[i] : min(self.ends[i] + count, self.document_ends[i])]


def corpus_sentences(documents: Iterable[Document], limit: int | None = None) -> Iterator[str]:
    """Sentences of ``documents`` (:class:`~ctxsent.corpus.document.Document`: paragraphs of
    sentences) in reading order, at most ``limit``."""
    count = 0
    for document in documents:
        for paragraph in document.paragraphs:
            for sentence in paragraph:
                if limit is not None and count >= limit:
                    return
                count += 1
                yield sentence


def tokenize_corpus(
    documents: Iterable[Document], vocabulary: Vocabulary, limit: int | None = None
) -> TokenizedCorpus:
    """Word ids of the first ``limit`` sentences; sentences without words are skipped."""
    tokens: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    document_ends: list[int] = []
    next_sentence: list[int] = []
    remaining = limit
    for document in documents:
        first = len(starts)
        text = corpus_sentences([document], remaining)
        for sentence in text:
            ids = vocabulary.ids(sentence)
            if ids:
                starts.append(len(tokens))
                tokens.extend(ids)
                ends.append(len(tokens))
                next_sentence.append(len(starts))
        if len(starts) > first:
            next_sentence[-1] = -1
            document_ends.extend([len(tokens)] * (len(starts) - first))
        if remaining is not None:
            remaining = limit - len(starts)
            if remaining <= 0:
                break
    if not starts:
        raise InputError("the corpus has no sentence with a word in it")
    return TokenizedCorpus(
        np.asarray(tokens, dtype=np.int32),
        np.asarray(starts, dtype=np.int64),
        np.asarray(ends, dtype=np.int64),
        np.asarray(document_ends, dtype=np.int64),
        np.asarray(next_sentence, dtype=np.int64),
    )
