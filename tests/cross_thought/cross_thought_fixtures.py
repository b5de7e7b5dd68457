"""Tiny random Cross-Thought models and a synthetic corpus for the Cross-Thought tests, and a
corpus cut into short sequences in memory (:func:`chunk_documents`): the reference a data
folder's lazy :class:`~ctxsent.objectives.pretrain_data.ArrowChunks` is checked against."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from ctxsent.corpus.document import Document
from ctxsent.corpus.titles import normalize_title, normalize_titles
from ctxsent.errors import InputError
from ctxsent.models.cross_thought import CrossThoughtConfig, CrossThoughtModel
from ctxsent.objectives.cross_thought import cut_sequences, paragraph_texts

TINY_BERT = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64)


def tiny_model(num_special: int = 2, cross_sequence: bool = True, **config) -> CrossThoughtModel:
    """A 2-layer, width-32 random Cross-Thought with MiniLM's tokenizer, dropout off."""
    torch.manual_seed(0)
    settings = dict(pretrained=False, num_special=num_special, cross_sequence=cross_sequence)
    model = CrossThoughtModel.build(CrossThoughtConfig(**settings, **config), TINY_BERT)
    return model.eval()


def synthetic_documents(count: int = 4, paragraphs: int = 6) -> list[Document]:
    """Documents about numbered towns; each paragraph repeats its town's name."""
    return [
        Document(
            str(d),
            f"Town {d}",
            [
                [f"Town {d} has a harbour number {p}.", f"The lighthouse of town {d} is old."]
                for p in range(paragraphs)
            ],
        )
        for d in range(count)
    ]


@dataclass(frozen=True)
class TokenChunks:
    """Short sequences in corpus order: ``ids`` ``(C, L)`` padded with ``pad_id``, ``lengths``.

    The in-memory form of a Cross-Thought data folder
    (:class:`~ctxsent.objectives.pretrain_data.ArrowChunks` reads the same rows lazily).
    """

    ids: np.ndarray
    lengths: np.ndarray
    pad_id: int

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def tokens(self) -> int:
        return int(self.lengths.sum())

    def rows(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Sequences ``[start, stop)``: ids ``(n, L)`` and lengths."""
        return self.ids[start:stop], self.lengths[start:stop]


def chunk_documents(
    documents: Iterable[Document],
    tokenizer,
    sequence_length: int = 64,
    *,
    max_chunks: int | None = None,
    min_tokens: int = 8,
    exclude_titles: Iterable[str] = (),
) -> TokenChunks:
    """Cut running text into ``sequence_length``-token sequences, in order (section 3.1).

    Documents whose title is in ``exclude_titles`` (evaluation articles) are skipped.
    Stops once ``max_chunks`` sequences are collected.
    """
    if sequence_length < 1 or min_tokens < 1:
        raise InputError("sequence_length and min_tokens must be positive", field="sequence_length")
    excluded = normalize_titles(exclude_titles)
    pieces: list[list[int]] = []
    for document in documents:
        if normalize_title(document.title) in excluded:
            continue
        paragraphs = paragraph_texts(document.paragraphs)
        if not paragraphs:
            continue
        encoded = tokenizer(paragraphs, add_special_tokens=False)["input_ids"]
        tokens = [token for paragraph in encoded for token in paragraph]
        pieces += cut_sequences(tokens, sequence_length, min_tokens)
        if max_chunks is not None and len(pieces) >= max_chunks:
            pieces = pieces[:max_chunks]
            break
    if not pieces:
        raise InputError(f"the corpus gave no sequence of at least {min_tokens} tokens")
    pad_id = tokenizer.pad_token_id or 0
    ids = np.full((len(pieces), sequence_length), pad_id, dtype=np.int32)
    for row, piece in enumerate(pieces):
        ids[row, : len(piece)] = piece
    return TokenChunks(ids, np.array([len(p) for p in pieces], dtype=np.int32), pad_id)
