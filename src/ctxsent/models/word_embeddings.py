"""Word embeddings from pretrained vectors, and vocabulary expansion.

* Initialisation (RNN-CNN section 3.3; Mean-Max AAE section 4.2): training-vocabulary rows
  start from GloVe (:class:`~ctxsent.models.bag_of_words.WordVectors`); words without a
  vector get ``N(0, s^2)``, ``s`` the spread of the pretrained vectors; ``<pad>`` is zeros.
* Expansion, RNN-CNN section 4 (after Kiros et al., 2015): a least-squares linear map
  ``E(w) ~ W v(w) + b`` fitted on the words with both a learned embedding and a pretrained
  vector is applied to pretrained words outside the vocabulary (``"linear-map"``).
* Expansion, Mean-Max AAE section 4.2: the embeddings are frozen GloVe vectors, so new
  words take theirs (``"copy"``).

Choice left open: only the first ``max_new_words`` pretrained words (GloVe is sorted by
frequency) are added, so a saved encoder stays small; the papers add every GloVe word.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ctxsent.errors import InputError
from ctxsent.models.bag_of_words import WordVectors
from ctxsent.text.vocabulary import PAD_ID, SPECIALS, Vocabulary

Expansion = Literal["linear-map", "copy"]


def pretrained_embeddings(
    vocabulary: Vocabulary, vectors: WordVectors, seed: int = 0
) -> tuple[np.ndarray, int]:
    """Initial float32 embeddings ``(len(vocabulary), vectors.dim)``; count of words found."""
    rng = np.random.default_rng(seed)
    found = [(i, vectors.index[w]) for i, w in enumerate(vocabulary.words) if w in vectors.index]
    scale = float(np.asarray(vectors.vectors[: min(len(vectors.words), 50_000)]).std())
    matrix = rng.normal(0.0, scale, size=(len(vocabulary), vectors.dim)).astype(np.float32)
    if found:
        rows, sources = map(np.asarray, zip(*found, strict=True))
        matrix[rows] = np.asarray(vectors.vectors[sources], dtype=np.float32)
    matrix[PAD_ID] = 0.0
    return matrix, len(found)


def fit_expansion_map(
    vocabulary: Vocabulary, learned: np.ndarray, vectors: WordVectors
) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares ``(W, b)`` with ``learned[w] ~ vectors[w] @ W + b`` over shared words."""
    pairs = [
        (i, vectors.index[w])
        for i, w in enumerate(vocabulary.words)
        if w not in SPECIALS and w in vectors.index
    ]
    if len(pairs) <= vectors.dim:
        raise InputError(
            f"only {len(pairs)} vocabulary words have a pretrained vector; the expansion map "
            f"needs more than {vectors.dim}"
        )
    rows, sources = (np.asarray(column) for column in zip(*pairs, strict=True))
    inputs = np.asarray(vectors.vectors[sources], dtype=np.float64)
    design = np.hstack([inputs, np.ones((len(inputs), 1))])
    solution, *_ = np.linalg.lstsq(design, learned[rows].astype(np.float64), rcond=None)
    return solution[:-1].astype(np.float32), solution[-1].astype(np.float32)


def expand_embeddings(
    vocabulary: Vocabulary,
    learned: np.ndarray,
    vectors: WordVectors,
    mode: Expansion,
    max_new_words: int,
) -> tuple[Vocabulary, np.ndarray]:
    """The vocabulary extended by up to ``max_new_words`` pretrained words, and their embeddings."""
    candidates = [
        w for w in vectors.words[: max_new_words + len(vocabulary)] if w not in vocabulary.index
    ]
    new_words = candidates[:max_new_words]
    if not new_words:
        return vocabulary, learned
    new_vectors = np.asarray(
        vectors.vectors[[vectors.index[w] for w in new_words]], dtype=np.float32
    )
    if mode == "linear-map":
        weight, bias = fit_expansion_map(vocabulary, learned, vectors)
        new_rows = new_vectors @ weight + bias
    elif mode == "copy":
        if vectors.dim != learned.shape[1]:
            raise InputError(
                f"{vectors.dim}-d vectors cannot extend {learned.shape[1]}-d embeddings"
            )
        new_rows = new_vectors
    else:
        raise ValueError(f"unknown expansion {mode!r}")
    return vocabulary.extended(new_words), np.vstack([learned, new_rows]).astype(np.float32)
