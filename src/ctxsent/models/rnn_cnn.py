"""RNN-CNN (Tang et al., 2018): a BiGRU encoder and decoders for its ablations.

Encoder (sections 2.1-2.2): word embeddings ``E`` -> bidirectional GRU -> ``z = [mean; max]``
of the hidden states (eq. 1). Ablations: ``pooling="max"`` (MaxOnly, Table 1) and
``encoder="cnn"`` (appendix A.3: four convolutions, each with ReLU and a global max over
time, concatenated; Conneau et al. 2017's hierarchical ConvNet).

Decoders tie the output softmax to ``E`` (section 3.3, eq. 2) and return logits
``(batch, N, |V|)`` for an ``N``-word target:

* ``cnn``, predict-all-words CNN (2.3): ``z`` expanded to ``N`` positions by ``N`` parallel
  linear maps (one ``Linear`` to ``N*d1``), then convolutions ``d1 -> d2 -> d_e``
  (``600-1200-300`` in the paper);
* ``rnn-all`` (3.1): the same expansion, then a BiGRU of ``d_e/2`` units per direction;
* ``rnn-ar`` / ``cnn-ar``: autoregressive GRU (``d1`` units) / causal CNN fed ``<s>`` then,
  per ``input_mode`` (Finding I), the true previous word (teacher forcing), a word sampled
  from the previous prediction (always sampling) or a uniformly drawn word.

Choices left open: ReLU between decoder layers; kernel size 3 (``same`` padding, causal for
the autoregressive CNN); the autoregressive GRU starts from ``tanh(W z)`` and the causal
CNN adds ``W z`` to every input embedding; sampled words carry no gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ctxsent.models.pooling import Pooling, pool
from ctxsent.models.word_level_encoder import WordLevelEncoder
from ctxsent.saving import register_model
from ctxsent.text.vocabulary import BOS_ID, PAD_ID, SPECIALS, Vocabulary

DecoderKind = Literal["cnn", "rnn-all", "rnn-ar", "cnn-ar"]
InputMode = Literal["teacher-forcing", "always-sampling", "uniform-sampling"]
DECODERS: tuple[str, ...] = ("cnn", "rnn-all", "rnn-ar", "cnn-ar")
INPUT_MODES: tuple[str, ...] = ("teacher-forcing", "always-sampling", "uniform-sampling")


@dataclass
class RnnCnnConfig:
    """Encoder settings; appendix B: small = GRU 2x300, large = 2x1200, inputs cut at 30 words."""

    vocab_size: int
    embedding_dim: int = 300
    encoder: Literal["gru", "cnn"] = "gru"
    hidden_size: int = 300
    cnn_layers: int = 4
    kernel_size: int = 3
    pooling: Pooling = "mean-max"
    max_length: int = 30


@dataclass
class DecoderConfig:
    """Decoder settings; ``dims`` = (d1, d2) of ``d1-d2-d_e`` (the paper: 600-1200-300)."""

    kind: DecoderKind = "cnn"
    dims: tuple[int, int] = (600, 1200)
    target_length: int = 30
    input_mode: InputMode = "teacher-forcing"
    kernel_size: int = 3


@register_model("rnn-cnn-encoder")
class RnnCnnEncoder(WordLevelEncoder):
    """BiGRU (or CNN) encoder with masked mean/max pooling; ``forward`` returns ``z``."""

    config_class = RnnCnnConfig

    def __init__(self, config: RnnCnnConfig, vocabulary: Vocabulary) -> None:
        super().__init__(config, vocabulary)
        self.embedding = nn.Embedding(config.vocab_size, config.embedding_dim, padding_idx=PAD_ID)
        if config.encoder == "gru":
            self.gru = nn.GRU(
                config.embedding_dim, config.hidden_size, batch_first=True, bidirectional=True
            )
        elif config.encoder == "cnn":
            sizes = [config.embedding_dim] + [config.hidden_size] * config.cnn_layers
            self.convs = nn.ModuleList(
                nn.Conv1d(a, b, config.kernel_size, padding=config.kernel_size // 2)
                for a, b in zip(sizes, sizes[1:], strict=False)
            )
        else:
            raise ValueError(f"encoder must be 'gru' or 'cnn', got {config.encoder!r}")

    @property
    def dim(self) -> int:
        views = 2 if self.config.pooling == "mean-max" else 1
        if self.config.encoder == "gru":
            return 2 * self.config.hidden_size * views
        return self.config.cnn_layers * self.config.hidden_size * views

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        embedded = self.embedding(ids)
        if self.config.encoder == "cnn":
            pooled, hidden, keep = [], embedded.transpose(1, 2), mask.unsqueeze(1)
            for conv in self.convs:
                hidden = F.relu(conv(hidden)) * keep  # padding stays zero, as at the edges
                pooled.append(pool(hidden.transpose(1, 2), mask, self.config.pooling))
            return torch.cat(pooled, dim=1)
        lengths = mask.sum(dim=1).clamp(min=1).cpu()
        packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
        states, _ = self.gru(packed)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=ids.shape[1])
        return pool(states, mask, self.config.pooling)


class PredictAllWordsCnnDecoder(nn.Module):
    """Section 2.3: ``z`` -> N positions (parallel linear maps) -> conv -> conv -> ``U``."""

    def __init__(self, config: DecoderConfig, z_dim: int, embedding_dim: int) -> None:
        super().__init__()
        d1, d2 = config.dims
        self.length = config.target_length
        self.expand = nn.Linear(z_dim, config.target_length * d1)
        padding = config.kernel_size // 2
        self.conv1 = nn.Conv1d(d1, d2, config.kernel_size, padding=padding)
        self.conv2 = nn.Conv1d(d2, embedding_dim, config.kernel_size, padding=padding)

    def forward(self, z: torch.Tensor, targets: torch.Tensor, embedding: nn.Embedding):
        expanded = F.relu(self.expand(z)).view(len(z), self.length, -1).transpose(1, 2)
        features = self.conv2(F.relu(self.conv1(expanded))).transpose(1, 2)
        return features @ embedding.weight.T


class PredictAllWordsRnnDecoder(nn.Module):
    """Section 3.1: the CNN decoder's expansion followed by a bidirectional GRU."""

    def __init__(self, config: DecoderConfig, z_dim: int, embedding_dim: int) -> None:
        super().__init__()
        if embedding_dim % 2:
            raise ValueError("the predict-all-words RNN decoder needs an even embedding size")
        self.length = config.target_length
        self.expand = nn.Linear(z_dim, config.target_length * config.dims[0])
        self.gru = nn.GRU(config.dims[0], embedding_dim // 2, batch_first=True, bidirectional=True)

    def forward(self, z: torch.Tensor, targets: torch.Tensor, embedding: nn.Embedding):
        expanded = F.relu(self.expand(z)).view(len(z), self.length, -1)
        features, _ = self.gru(expanded)
        return features @ embedding.weight.T


class AutoregressiveDecoder(nn.Module):
    """Shared input schedule of the autoregressive decoders (Finding I, section 3.1).

    Teacher forcing and uniform sampling know every input in advance and run the whole
    sequence at once; always sampling runs step by step, feeding back a sampled word.
    """

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        self.input_mode = config.input_mode
        if config.input_mode not in INPUT_MODES:
            raise ValueError(f"input_mode must be one of {', '.join(INPUT_MODES)}")

    def forward(self, z: torch.Tensor, targets: torch.Tensor, embedding: nn.Embedding):
        if self.input_mode == "always-sampling":
            return self.sampled_logits(z, targets.shape[1], embedding)
        inputs = targets.new_full(targets.shape, BOS_ID)
        if self.input_mode == "teacher-forcing":
            inputs[:, 1:] = targets[:, :-1]
        else:
            inputs[:, 1:] = torch.randint(
                len(SPECIALS), embedding.num_embeddings, inputs[:, 1:].shape, device=z.device
            )
        return self.parallel_logits(z, inputs, embedding)

    def parallel_logits(self, z, inputs, embedding) -> torch.Tensor:
        raise NotImplementedError

    def sampled_logits(self, z, length: int, embedding) -> torch.Tensor:
        raise NotImplementedError


def sample_words(logits: torch.Tensor) -> torch.Tensor:
    """One word per row from ``softmax(logits)``, without gradient."""
    return torch.multinomial(F.softmax(logits.detach().float(), dim=-1), 1).squeeze(1)


class AutoregressiveRnnDecoder(AutoregressiveDecoder):
    """A GRU language model conditioned on ``z`` through its initial state."""

    def __init__(self, config: DecoderConfig, z_dim: int, embedding_dim: int) -> None:
        super().__init__(config)
        hidden = config.dims[0]
        self.initial = nn.Linear(z_dim, hidden)
        self.gru = nn.GRU(embedding_dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, embedding_dim)

    def parallel_logits(self, z, inputs, embedding):
        state = torch.tanh(self.initial(z)).unsqueeze(0)
        outputs, _ = self.gru(embedding(inputs), state)
        return self.out(outputs) @ embedding.weight.T

    def sampled_logits(self, z, length, embedding):
        state = torch.tanh(self.initial(z)).unsqueeze(0)
        word = torch.full((len(z),), BOS_ID, dtype=torch.long, device=z.device)
        steps = []
        for _ in range(length):
            output, state = self.gru(embedding(word).unsqueeze(1), state)
            logits = self.out(output.squeeze(1)) @ embedding.weight.T
            steps.append(logits)
            word = sample_words(logits)
        return torch.stack(steps, dim=1)


class AutoregressiveCnnDecoder(AutoregressiveDecoder):
    """Causal convolutions ``d_e -> d1 -> d2`` then a projection to ``d_e``."""

    def __init__(self, config: DecoderConfig, z_dim: int, embedding_dim: int) -> None:
        super().__init__(config)
        d1, d2 = config.dims
        self.kernel = config.kernel_size
        self.condition = nn.Linear(z_dim, embedding_dim)
        self.conv1 = nn.Conv1d(embedding_dim, d1, config.kernel_size)
        self.conv2 = nn.Conv1d(d1, d2, config.kernel_size)
        self.out = nn.Linear(d2, embedding_dim)
        self.receptive_field = 2 * (config.kernel_size - 1) + 1

    def features(self, z: torch.Tensor, inputs: torch.Tensor, embedding: nn.Embedding):
        hidden = (embedding(inputs) + self.condition(z).unsqueeze(1)).transpose(1, 2)
        hidden = F.relu(self.conv1(F.pad(hidden, (self.kernel - 1, 0))))
        hidden = F.relu(self.conv2(F.pad(hidden, (self.kernel - 1, 0))))
        return self.out(hidden.transpose(1, 2))

    def parallel_logits(self, z, inputs, embedding):
        return self.features(z, inputs, embedding) @ embedding.weight.T

    def sampled_logits(self, z, length, embedding):
        inputs = torch.full((len(z), length), BOS_ID, dtype=torch.long, device=z.device)
        steps = []
        for t in range(length):
            window = inputs[:, max(0, t + 1 - self.receptive_field) : t + 1]
            logits = self.features(z, window, embedding)[:, -1] @ embedding.weight.T
            steps.append(logits)
            if t + 1 < length:
                inputs = inputs.clone()
                inputs[:, t + 1] = sample_words(logits)
        return torch.stack(steps, dim=1)


def build_decoder(config: DecoderConfig, z_dim: int, embedding_dim: int) -> nn.Module:
    """The decoder named by ``config.kind``; it maps ``(z, targets, embedding)`` to logits."""
    classes = {
        "cnn": PredictAllWordsCnnDecoder,
        "rnn-all": PredictAllWordsRnnDecoder,
        "rnn-ar": AutoregressiveRnnDecoder,
        "cnn-ar": AutoregressiveCnnDecoder,
    }
    if config.kind not in classes:
        raise ValueError(f"decoder must be one of {', '.join(DECODERS)}, got {config.kind!r}")
    return classes[config.kind](config, z_dim, embedding_dim)
