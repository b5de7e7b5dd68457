"""RNN-CNN's objective: from sentence ``S_i``, predict the words that follow it.

Targets (section 2, appendix A.1-A.2): the next ``N`` contiguous words (``target="window"``,
``N=30``; Table 4 also tries 10 and 50), or the next sentence padded / cut to ``N`` words
(``target="sentence"``, Table 4 row †). Loss: eq. (3), the negative log-likelihood summed
over target positions and averaged over the batch's sentences; padding carries none.
Choices: windows stay inside a document (padded when it ends early); a document's last
sentence is no input; inputs are cut at ``max_length`` words (appendix B: 30).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset

from ctxsent.models.rnn_cnn import DecoderConfig, RnnCnnEncoder, build_decoder
from ctxsent.objectives.global_batch import global_mean
from ctxsent.objectives.pretrain_data import ArrowSentences
from ctxsent.text.vocabulary import PAD_ID

TargetKind = Literal["window", "sentence"]


class NextWindowDataset(Dataset):
    """Item ``k``: (input sentence ids, target ids) as int64 arrays, over the sentences of a lazy
    :class:`~ctxsent.objectives.pretrain_data.ArrowSentences` that have a next one in their
    document, found by arithmetic on the per-document counts (no per-example index)."""

    def __init__(
        self,
        corpus: ArrowSentences,
        target: TargetKind = "window",
        target_length: int = 30,
        max_length: int = 30,
    ) -> None:
        if target not in ("window", "sentence"):
            raise ValueError(f"target must be 'window' or 'sentence', got {target!r}")
        self.corpus, self.target = corpus, target
        self.target_length, self.max_length = target_length, max_length
        sizes = corpus.document_sizes()
        self.first_sentence = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.first_example = np.concatenate([[0], np.cumsum(np.maximum(sizes - 1, 0))])

    def __len__(self) -> int:
        return int(self.first_example[-1])

    def sentence_index(self, k: int) -> int:
        """The corpus index of item ``k``'s input sentence."""
        document = int(np.searchsorted(self.first_example, k, side="right")) - 1
        return int(self.first_sentence[document] + k - self.first_example[document])

    def input_lengths(self) -> np.ndarray:
        sizes = self.corpus.document_sizes()
        keep = np.ones(int(sizes.sum()), dtype=bool)
        keep[(self.first_sentence + sizes - 1)[sizes > 0]] = False  # last of each document
        return np.minimum(self.corpus.sentence_lengths()[keep], self.max_length)

    def __getitem__(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        corpus, i = self.corpus, self.sentence_index(k)
        source = corpus.sentence(i)[: self.max_length]
        if self.target == "window":
            target = corpus.following(i, self.target_length)
        else:
            target = corpus.sentence(i + 1)[: self.target_length]
        return source.astype(np.int64), target.astype(np.int64)


def pad_rows(rows: list[np.ndarray], length: int | None = None) -> torch.Tensor:
    """Stack id arrays into ``(len(rows), length or longest)``, padded with ``<pad>``."""
    width = length or max(len(row) for row in rows)
    out = torch.full((len(rows), width), PAD_ID, dtype=torch.long)
    for r, row in enumerate(rows):
        out[r, : len(row)] = torch.from_numpy(row[:width])
    return out


def collate_next_window(
    items: list[tuple[np.ndarray, np.ndarray]], target_length: int
) -> dict[str, torch.Tensor]:
    """Inputs padded to the longest in the batch; targets to exactly ``target_length``."""
    ids = pad_rows([source for source, _ in items])
    targets = pad_rows([target for _, target in items], target_length)
    return {"input_ids": ids, "input_mask": ids.ne(PAD_ID), "targets": targets}


def summed_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Eq. (3) / eq. (22): NLL summed over non-padded positions, averaged over the step's
    global batch (:func:`~ctxsent.objectives.global_batch.global_mean`)."""
    total = F.cross_entropy(
        logits.flatten(0, 1).float(), targets.flatten(), ignore_index=PAD_ID, reduction="sum"
    )
    return global_mean(total, len(targets))


class NextWindowObjective(nn.Module):
    """Encoder + decoder; ``objective(batch)`` returns ``{"loss": eq. (3)}``."""

    def __init__(self, encoder: RnnCnnEncoder, decoder: DecoderConfig) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = build_decoder(decoder, encoder.dim, encoder.config.embedding_dim)

    def forward(self, batch: dict[str, torch.Tensor], generator=None) -> dict[str, torch.Tensor]:
        z = self.encoder(batch["input_ids"], batch["input_mask"])
        logits = self.decoder(z, batch["targets"], self.encoder.embedding)
        return {"loss": summed_nll(logits, batch["targets"])}
