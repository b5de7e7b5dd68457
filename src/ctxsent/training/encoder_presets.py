"""Settings of encoder pre-training and the named presets of both papers.

One flat :class:`PretrainConfig` covers RNN-CNN and Mean-Max AAE, so every preset and
every ablation is a handful of overrides (:data:`PRESETS`) and the CLI's
``--set key=value`` reaches any setting. This module imports nothing heavy, so the CLI
starts fast.

Paper settings: RNN-CNN appendix B (batch 512, inputs and targets of 30 words, Adam
5e-4, 20k words, GloVe-initialised 300-d embeddings); Mean-Max AAE section 4.2 (Adam
2e-4, gradients clipped at norm 5, dropout 0.5, batch 64, 20k words, frozen 300-d GloVe).
Both papers train on BookCorpus (74M sentences): RNN-CNN small 20 h, large 34 h on one
GPU (Table 4). The paper presets therefore need 300-d vectors (``--word-vectors
glove.840B.300d.txt``).

Each paper preset has a ``-cpu`` variant for this machine: 50-d GloVe 6B, narrower
layers (RNN-CNN: GRU 2x128, decoder 128-256-50; AAE: d_h=128, d_f=256, 4 heads,
dropout 0.1 since such narrow models underfit with 0.5), batches of 64, a 10k-word
vocabulary (the softmax dominates a CPU step), the first
200k corpus sentences, and a 10-minute budget instead of one epoch (``--max-minutes``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ctxsent.errors import InputError

GLOVE_PACKAGE = "glove-6b-50d"


@dataclass
class PretrainConfig:
    """Every setting of a pre-training run; ``model`` picks the paper."""

    model: str = "rnn-cnn"  # "rnn-cnn" or "mean-max-aae"
    # shared: vocabulary, word vectors, optimisation
    vocab_size: int = 20_000
    word_vectors: str = GLOVE_PACKAGE  # the kumo package, a GloVe/word2vec file, or "none"
    embedding_dim: int = 300
    expand_vocabulary: int = 100_000
    max_length: int = 30
    max_sentences: int | None = None
    batch_size: int = 512
    learning_rate: float = 5e-4
    max_grad_norm: float | None = None
    epochs: int = 1
    max_steps: int | None = None
    max_minutes: float | None = None
    checkpoint_every: int = 500
    seed: int = 0
    precision: str = "fp32"
    accelerator: str = "auto"
    # encoders
    encoder: str = "gru"  # RNN-CNN: "gru" or "cnn"
    architecture: str = "attention"  # Mean-Max AAE: "attention" (AAE) or "lstm" (RAE)
    hidden_size: int = 300
    ffn_size: int = 4096
    heads: int = 8
    dropout: float = 0.5
    pooling: str = "mean-max"
    # RNN-CNN decoder and targets
    decoder: str = "cnn"
    decoder_dims: tuple[int, int] = (600, 1200)
    input_mode: str = "teacher-forcing"
    target: str = "window"
    target_length: int = 30


_RNN_CNN_CPU = {
    "embedding_dim": 50,
    "hidden_size": 128,
    "decoder_dims": (128, 256),
    "batch_size": 64,
    "vocab_size": 10_000,
    "max_sentences": 200_000,
    "max_minutes": 10.0,
    "epochs": 1000,
    "checkpoint_every": 200,
}
_AAE = {
    "model": "mean-max-aae",
    "hidden_size": 2048,
    "ffn_size": 4096,
    "heads": 8,
    "dropout": 0.5,
    "learning_rate": 2e-4,
    "max_grad_norm": 5.0,
    "batch_size": 64,
}
_AAE_CPU = {
    "embedding_dim": 50,
    "hidden_size": 128,
    "ffn_size": 256,
    "heads": 4,
    "dropout": 0.1,
    "batch_size": 64,
    "vocab_size": 10_000,
    "max_sentences": 200_000,
    "max_minutes": 10.0,
    "epochs": 1000,
    "checkpoint_every": 200,
}
_PAPER_PRESETS: dict[str, dict] = {
    "rnn-cnn-small": {},
    "rnn-cnn-large": {"hidden_size": 1200},
    "rnn-cnn-maxonly": {"pooling": "max"},
    "rnn-cnn-cnn-encoder": {"encoder": "cnn", "pooling": "max"},
    "rnn-cnn-next-sentence": {"target": "sentence"},
    "rnn-cnn-target10": {"target_length": 10},
    "rnn-cnn-target50": {"target_length": 50},
    "rnn-cnn-rnn-all": {"decoder": "rnn-all"},
    **{
        f"rnn-cnn-ar-{kind}-{short}": {"decoder": f"{kind}-ar", "input_mode": mode}
        for kind in ("rnn", "cnn")
        for short, mode in (
            ("tf", "teacher-forcing"),
            ("as", "always-sampling"),
            ("us", "uniform-sampling"),
        )
    },
    "mean-max-aae": _AAE,
    "mean-aae": {**_AAE, "pooling": "mean"},
    "max-aae": {**_AAE, "pooling": "max"},
    "mean-max-rae": {**_AAE, "architecture": "lstm"},
    "mean-rae": {**_AAE, "architecture": "lstm", "pooling": "mean"},
    "max-rae": {**_AAE, "architecture": "lstm", "pooling": "max"},
}
PRESETS: dict[str, dict] = {
    **_PAPER_PRESETS,
    **{
        f"{name}-cpu": {
            **overrides,
            **(_AAE_CPU if overrides.get("model") == "mean-max-aae" else _RNN_CNN_CPU),
        }
        for name, overrides in _PAPER_PRESETS.items()
    },
}


def preset_config(name: str, overrides: dict | None = None) -> PretrainConfig:
    """The config of preset ``name`` with ``overrides`` (field name -> value) applied."""
    if name not in PRESETS:
        raise InputError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})", field="preset")
    settings = {**PRESETS[name], **(overrides or {})}
    known = {f.name for f in fields(PretrainConfig)}
    for key in settings:
        if key not in known:
            raise InputError(f"unknown setting (known: {', '.join(sorted(known))})", field=key)
    return replace(PretrainConfig(), **settings)
