"""Mean-Max AAE (Zhang et al., 2018): a self-attention autoencoder, and the mean-max RAE.

Encoder (section 3.3, eqs. 8-11): frozen word vectors plus sinusoidal positions (eqs. 1-2),
multi-head self-attention *without* a residual (the width grows from ``d_e`` to ``d_h``)
and layer norm, then a ReLU feed-forward sub-layer with residual and layer norm. The
representation (section 3.4, eqs. 12-14) is ``[mean_t h_t; max_t h_t]``; ``pooling="mean"``
/ ``"max"`` give the mean / max AAE of Table 3.

Decoder (section 3.5, eqs. 15-22): masked self-attention (no residual) and layer norm,
attention over the pooled views ``{mean, max}`` with residual and layer norm, a
feed-forward sub-layer with residual and layer norm, and a softmax over the vocabulary
reconstructing the sentence followed by ``</s>``.

Every sub-layer ends in layer norm: our copy of the paper lost eqs. 8-20, and the authors'
model (github.com/Zminghua/SentEncoding, ``modules.py``) normalises each attention output;
without it the self-attention output reaches the views at whatever scale training drifts
to. Their ReLU on the query/key/value projections and missing output projection are not
copied: we keep the linear projections and output matrix of eqs. 3-7.

``architecture="lstm"`` is the mean-max RAE of section 4.4: a BiLSTM encoder (``d_h/2`` per
direction) and an LSTM decoder whose outputs attend over the views (residual + layer norm).

Published settings: ``d_h=2048``, ``d_f=4096``, 8 heads, dropout 0.5, Adam 2e-4, gradient
norm clipped at 5, batch 64. Choices: one encoder and one decoder layer; dropout after
every sub-layer; the RAE decoder starts from a zero state (``z`` reaches it only through
attention); the output softmax is its own ``d_h x |V|`` matrix (the frozen ``d_e``-wide
embeddings cannot be tied to ``d_h``-wide states).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ctxsent.models.pooling import Pooling, pooled_views
from ctxsent.models.word_level_encoder import WordLevelEncoder
from ctxsent.saving import register_model
from ctxsent.text.vocabulary import PAD_ID, Vocabulary


@dataclass
class MeanMaxAaeConfig:
    vocab_size: int
    embedding_dim: int = 300
    architecture: Literal["attention", "lstm"] = "attention"
    hidden_size: int = 2048
    ffn_size: int = 4096
    heads: int = 8
    dropout: float = 0.5
    pooling: Pooling = "mean-max"
    max_length: int = 30


def positional_encoding(length: int, dim: int, device: torch.device) -> torch.Tensor:
    """Eqs. (1)-(2): ``PE[p, 2i] = sin(p / 10000^(2i/d))``, ``PE[p, 2i+1] = cos(...)``."""
    position = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    rates = torch.exp(
        torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim)
    )
    encoding = torch.zeros(length, dim, device=device)
    encoding[:, 0::2] = torch.sin(position * rates)
    encoding[:, 1::2] = torch.cos(position * rates)[:, : dim // 2]
    return encoding


class MultiHeadAttention(nn.Module):
    """Eqs. (3)-(7): scaled dot-product attention in ``heads`` subspaces of a ``d_h`` space."""

    def __init__(self, query_dim: int, key_dim: int, hidden: int, heads: int, dropout: float):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        self.heads, self.dropout = heads, dropout
        self.query = nn.Linear(query_dim, hidden)
        self.key = nn.Linear(key_dim, hidden)
        self.value = nn.Linear(key_dim, hidden)
        self.output = nn.Linear(hidden, hidden)

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        causal: bool = False,
    ) -> torch.Tensor:
        def split(x: torch.Tensor) -> torch.Tensor:
            return x.view(x.shape[0], x.shape[1], self.heads, -1).transpose(1, 2)

        mask = None if key_mask is None else key_mask[:, None, None, :]
        attended = F.scaled_dot_product_attention(
            split(self.query(queries)),
            split(self.key(keys)),
            split(self.value(keys)),
            attn_mask=mask,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=causal,
        )
        return self.output(attended.transpose(1, 2).flatten(2))


def feed_forward(hidden: int, inner: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(hidden, inner), nn.ReLU(), nn.Linear(inner, hidden))


@register_model("mean-max-aae-encoder")
class MeanMaxAaeEncoder(WordLevelEncoder):
    """The AAE (or RAE) encoder; ``forward`` returns the concatenated pooled views."""

    config_class = MeanMaxAaeConfig
    append_eos = True  # section 3.1: "</s>" ends every input sequence

    def __init__(self, config: MeanMaxAaeConfig, vocabulary: Vocabulary) -> None:
        super().__init__(config, vocabulary)
        self.embedding = nn.Embedding(config.vocab_size, config.embedding_dim, padding_idx=PAD_ID)
        self.embedding.weight.requires_grad_(False)  # frozen GloVe vectors, section 4.2
        self.drop = nn.Dropout(config.dropout)
        if config.architecture == "attention":
            self.attention = MultiHeadAttention(
                config.embedding_dim,
                config.embedding_dim,
                config.hidden_size,
                config.heads,
                config.dropout,
            )
            self.attention_norm = nn.LayerNorm(config.hidden_size)
            self.ffn = feed_forward(config.hidden_size, config.ffn_size)
            self.norm = nn.LayerNorm(config.hidden_size)
        elif config.architecture == "lstm":
            if config.hidden_size % 2:
                raise ValueError("the BiLSTM encoder needs an even hidden size")
            self.lstm = nn.LSTM(
                config.embedding_dim, config.hidden_size // 2, batch_first=True, bidirectional=True
            )
        else:
            raise ValueError(
                f"architecture must be 'attention' or 'lstm', got {config.architecture!r}"
            )

    @property
    def dim(self) -> int:
        return self.config.hidden_size * (2 if self.config.pooling == "mean-max" else 1)

    def hidden_states(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        embedded = self.embedding(ids)
        if self.config.architecture == "lstm":
            lengths = mask.sum(dim=1).clamp(min=1).cpu()
            packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
            states, _ = self.lstm(packed)
            states, _ = pad_packed_sequence(states, batch_first=True, total_length=ids.shape[1])
            return self.drop(states)
        inputs = embedded + positional_encoding(ids.shape[1], embedded.shape[2], ids.device)
        attended = self.attention(inputs, inputs, key_mask=mask)
        attended = self.attention_norm(self.drop(attended))  # eq. 8, no residual
        return self.norm(attended + self.drop(self.ffn(attended)))  # eqs. 9-11

    def views(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``(batch, views, d_h)``: the vectors the decoder attends over (eqs. 12-14)."""
        return pooled_views(self.hidden_states(ids, mask), mask, self.config.pooling)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.views(ids, mask).flatten(1)


class MeanMaxDecoder(nn.Module):
    """Reconstructs the sentence from the pooled views (AAE: eqs. 15-22; RAE: section 4.4)."""

    def __init__(self, config: MeanMaxAaeConfig) -> None:
        super().__init__()
        d_e, d_h = config.embedding_dim, config.hidden_size
        self.architecture = config.architecture
        self.drop = nn.Dropout(config.dropout)
        if config.architecture == "attention":
            self.self_attention = MultiHeadAttention(d_e, d_e, d_h, config.heads, config.dropout)
            self.self_attention_norm = nn.LayerNorm(d_h)
            self.ffn = feed_forward(d_h, config.ffn_size)
            self.ffn_norm = nn.LayerNorm(d_h)
        else:
            self.lstm = nn.LSTM(d_e, d_h, batch_first=True)
        self.view_attention = MultiHeadAttention(d_h, d_h, d_h, config.heads, config.dropout)
        self.view_norm = nn.LayerNorm(d_h)
        self.vocabulary_projection = nn.Linear(d_h, config.vocab_size)

    def forward(
        self, views: torch.Tensor, inputs: torch.Tensor, embedding: nn.Embedding
    ) -> torch.Tensor:
        """Logits ``(batch, time, |V|)`` for the next word at every position of ``inputs``."""
        embedded = embedding(inputs)
        if self.architecture == "lstm":
            states, _ = self.lstm(embedded)
            hidden = self.drop(states)
        else:
            embedded = embedded + positional_encoding(
                inputs.shape[1], embedded.shape[2], inputs.device
            )
            attended = self.self_attention(embedded, embedded, causal=True)
            hidden = self.self_attention_norm(self.drop(attended))  # eqs. 15-16, no residual
        hidden = self.view_norm(hidden + self.drop(self.view_attention(hidden, views)))  # eq. 17-18
        if self.architecture == "attention":
            hidden = self.ffn_norm(hidden + self.drop(self.ffn(hidden)))  # eqs. 19-20
        return self.vocabulary_projection(hidden)  # eq. 21
