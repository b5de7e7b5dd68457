"""Mean-Max AAE's objective: reconstruct the input sentence from its mean-max views.

Training data are unordered sentences (section 2: "trained on sets of sentences in
arbitrary order"), so each sentence is an example on its own. The encoder reads the
sentence followed by ``</s>`` (section 3.1); the decoder reads ``<s>`` + sentence and
predicts sentence + ``</s>`` (teacher forcing; its attention over the views is what steers
the reconstruction, section 3.5). Loss: eq. (22), the negative log-likelihood of the
sentence summed over positions and averaged over the batch.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from ctxsent.models.mean_max_aae import MeanMaxAaeEncoder, MeanMaxDecoder
from ctxsent.objectives.next_window import pad_rows, summed_nll
from ctxsent.objectives.pretrain_data import ArrowSentences
from ctxsent.text.vocabulary import BOS_ID, EOS_ID, PAD_ID


class SentenceDataset(Dataset):
    """Item ``i``: the ids of sentence ``i`` of a lazy
    :class:`~ctxsent.objectives.pretrain_data.ArrowSentences`, cut at ``max_length`` words."""

    def __init__(self, corpus: ArrowSentences, max_length: int = 30) -> None:
        self.corpus, self.max_length = corpus, max_length

    def __len__(self) -> int:
        return len(self.corpus)

    def input_lengths(self) -> np.ndarray:
        return np.minimum(self.corpus.sentence_lengths(), self.max_length)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.corpus.sentence(i)[: self.max_length].astype(np.int64)


def collate_reconstruction(items: list[np.ndarray]) -> dict[str, torch.Tensor]:
    """Encoder input ``w </s>``, decoder input ``<s> w``, targets ``w </s>``."""
    eos, bos = np.array([EOS_ID]), np.array([BOS_ID])
    ids = pad_rows([np.concatenate([row, eos]) for row in items])
    return {
        "input_ids": ids,
        "input_mask": ids.ne(PAD_ID),
        "decoder_inputs": pad_rows([np.concatenate([bos, row]) for row in items]),
        "targets": ids,
    }


class ReconstructionObjective(nn.Module):
    """Encoder + mean-max decoder; ``objective(batch)`` returns ``{"loss": eq. (22)}``."""

    def __init__(self, encoder: MeanMaxAaeEncoder) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = MeanMaxDecoder(encoder.config)

    def forward(self, batch: dict[str, torch.Tensor], generator=None) -> dict[str, torch.Tensor]:
        views = self.encoder.views(batch["input_ids"], batch["input_mask"])
        logits = self.decoder(views, batch["decoder_inputs"], self.encoder.embedding)
        return {"loss": summed_nll(logits, batch["targets"])}
