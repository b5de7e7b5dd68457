"""What every word-level sentence encoder shares: a vocabulary, ``encode()``, save and load.

Subclasses (:mod:`~ctxsent.models.rnn_cnn`, :mod:`~ctxsent.models.mean_max_aae`) define
``forward(ids, mask) -> (batch, dim)`` and a config dataclass with ``vocab_size``,
``embedding_dim`` and ``max_length``. Decoders are separate modules, so a saved folder holds
the encoder only: ``ctxsent.json`` (kind + config), ``model.safetensors`` and ``vocab.txt``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from ctxsent.errors import InputError, ModelFolderError
from ctxsent.models.inference import inference
from ctxsent.protocols import encode_inputs
from ctxsent.saving import (
    config_from,
    load_weights,
    model_folder,
    read_manifest,
    save_weights,
)
from ctxsent.text.length_chunks import length_sorted_chunks
from ctxsent.text.vocabulary import EOS_ID, PAD_ID, Vocabulary

WEIGHTS = "model.safetensors"
VOCABULARY = "vocab.txt"


class WordLevelEncoder(nn.Module):
    """Base class: ``embedding`` is an ``nn.Embedding`` over ``vocabulary``."""

    kind: ClassVar[str]
    config_class: ClassVar[type]
    append_eos: ClassVar[bool] = False
    embedding: nn.Embedding

    def __init__(self, config: Any, vocabulary: Vocabulary) -> None:
        super().__init__()
        if config.vocab_size != len(vocabulary):
            raise ValueError(f"config.vocab_size={config.vocab_size} but {len(vocabulary)} words")
        self.config = config
        self.vocabulary = vocabulary

    @property
    def dim(self) -> int:
        """Size of the sentence vector."""
        raise NotImplementedError

    def batch_ids(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Word ids padded to the longest text (at most ``max_length``) and the boolean mask."""
        rows = []
        for i, text in enumerate(texts):
            ids = self.vocabulary.ids(text)[: self.config.max_length]
            if not ids:
                raise InputError(f"text {i} is empty", field="texts")
            rows.append(ids + [EOS_ID] if self.append_eos else ids)
        ids = torch.full((len(rows), max(map(len, rows))), PAD_ID, dtype=torch.long)
        for row, word_ids in enumerate(rows):
            ids[row, : len(word_ids)] = torch.tensor(word_ids)
        return ids.to(self.embedding.weight.device), ids.ne(PAD_ID).to(self.embedding.weight.device)

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 128,
        show_progress: bool = False,
        **options: Any,
    ) -> np.ndarray:
        """Embed ``texts`` into a ``(len(texts), dim)`` float32 array, in input order.

        ``texts`` may be MTEB 2's batches, and ``options`` MTEB's keyword arguments, which do
        not change the embeddings (:func:`~ctxsent.protocols.encode_inputs`).
        """
        texts, show_progress = encode_inputs(texts, options, show_progress)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        device = self.embedding.weight.device
        with inference(self, device, total=len(texts), show_progress=show_progress) as progress:
            for rows in length_sorted_chunks(texts, batch_size):
                ids, mask = self.batch_ids([texts[i] for i in rows])
                out[rows] = self(ids, mask).float().cpu().numpy()
                progress.update(len(rows))
        return out

    def with_vocabulary(self, vocabulary: Vocabulary, embeddings: np.ndarray) -> WordLevelEncoder:
        """A copy whose embedding table is ``embeddings`` over ``vocabulary`` (expansion)."""
        if embeddings.shape != (len(vocabulary), self.config.embedding_dim):
            raise ValueError(f"embeddings of shape {embeddings.shape} for {len(vocabulary)} words")
        clone = copy.deepcopy(self)
        clone.config = replace(self.config, vocab_size=len(vocabulary))
        clone.vocabulary = vocabulary
        clone.embedding = nn.Embedding.from_pretrained(
            torch.from_numpy(embeddings), freeze=True, padding_idx=PAD_ID
        )
        return clone

    def save_pretrained(self, folder: str | Path, overwrite: bool = False) -> None:
        """Write the encoder folder atomically; an existing one is replaced if it holds this
        kind of encoder or ``overwrite`` is given (:func:`~ctxsent.io.check_output`)."""
        with model_folder(folder, self.kind, asdict(self.config), overwrite) as staged:
            self.vocabulary.save(staged / VOCABULARY)
            save_weights(self, staged / WEIGHTS)

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> WordLevelEncoder:
        folder = Path(folder)
        manifest = read_manifest(folder, cls.kind)
        config = config_from(cls.config_class, manifest, folder)
        vocabulary_path = folder / VOCABULARY
        if not vocabulary_path.is_file():
            raise ModelFolderError(f"no {VOCABULARY}", path=folder)
        try:
            model = cls(config, Vocabulary.load(vocabulary_path))
        except ValueError as err:
            raise ModelFolderError(str(err), path=folder) from None
        load_weights(model, folder / WEIGHTS)
        return model.eval()
