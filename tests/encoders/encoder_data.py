"""Synthetic corpora and word vectors for the encoder tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ctxsent.corpus import Document
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
