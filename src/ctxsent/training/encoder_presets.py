"""Settings of encoder pre-training and the named presets of both papers.

One flat :class:`EncoderPretrainConfig` covers RNN-CNN and Mean-Max AAE, so every preset and
every ablation is a handful of overrides, registered as the ``encoder`` family of
:mod:`ctxsent.presets`, and ``--set key=value`` (:func:`~ctxsent.presets.apply_overrides`)
reaches any setting. This module imports nothing heavy, so the CLI starts fast.

Paper settings: RNN-CNN appendix B (batch 512, inputs and targets of 30 words, Adam
5e-4, 20k words, GloVe-initialised 300-d embeddings); Mean-Max AAE section 4.2 (Adam
2e-4, gradients clipped at norm 5, dropout 0.5, batch 64, 20k words, frozen 300-d GloVe).
Both papers train on BookCorpus (74M sentences): RNN-CNN small 20 h, large 34 h on one
GPU (Table 4). The paper presets therefore need 300-d vectors (``--word-vectors
glove.840B.300d.txt``).

Each paper preset is its model's base settings (RNN-CNN small, or the Mean-Max AAE) plus
the overrides that distinguish it. Its ``-cpu`` variant follows one rule: the model's
base settings, then the model's CPU settings, then the preset's own distinguishing
overrides, where a width among them (:data:`_WIDTHS`) is scaled by the factor the CPU
settings scale that width of the base (RNN-CNN large: GRU 1200 x 128/300 = 512). The CPU
settings: 50-d GloVe 6B, narrower layers (RNN-CNN: GRU 2x128, decoder 128-256-50; AAE:
d_h=128, d_f=256, 4 heads, dropout 0.1 since such narrow models underfit with 0.5),
batches of 64, a 10k-word vocabulary (the softmax dominates a CPU step), the first 200k
corpus sentences, and a 10-minute budget instead of one epoch (``--max-minutes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from ctxsent.errors import check_range
from ctxsent.presets import Preset, register
from ctxsent.training.settings import PretrainSettings, setting

GLOVE_PACKAGE = "glove-6b-50d"


@dataclass
class EncoderPretrainConfig(PretrainSettings):
    """Every setting of a pre-training run; ``model`` picks the paper."""

    model: str = "rnn-cnn"  # "rnn-cnn" or "mean-max-aae"
    # shared: vocabulary, word vectors, optimisation
    vocab_size: int = 20_000
    word_vectors: str = setting(
        GLOVE_PACKAGE, "GloVe/word2vec file or folder, 'glove-6b-50d', or 'none' (random init)."
    )
    embedding_dim: int = 300
    expand_vocabulary: int = 100_000
    max_length: int = 30
    max_sentences: int | None = None
    batch_size: int = 512
    learning_rate: float = 5e-4
    max_grad_norm: float | None = None
    epochs: int = 1
    max_steps: int | None = setting(None, "Optimiser steps of the whole run.", min=1)
    max_minutes: float | None = setting(None, "Wall-clock budget of the whole run.", positive=True)
    checkpoint_every: int = 500
    seed: int = 0
    precision: str = field(default="fp32", kw_only=True)  # AAE / RNN-CNN runs compare in fp32
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
    limits: ClassVar[tuple[str, ...]] = ("max_steps", "max_minutes")

    def __post_init__(self) -> None:
        check_range(self, "vocab_size embedding_dim max_length max_sentences batch_size", 1)
        check_range(self, "epochs checkpoint_every hidden_size ffn_size heads target_length", 1)
        check_range(self, "learning_rate max_grad_norm", 0, above=True)
        check_range(self, "expand_vocabulary seed", 0)
        check_range(self, "dropout", 0, 1, below=True)
        super().__post_init__()


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
_RNN_CNN: dict = {}  # EncoderPretrainConfig's defaults are RNN-CNN small
_MODELS: dict[str, tuple[dict, dict]] = {  # model -> (base settings, CPU settings)
    "rnn-cnn": (_RNN_CNN, _RNN_CNN_CPU),
    "mean-max-aae": (_AAE, _AAE_CPU),
}
_WIDTHS = ("hidden_size", "ffn_size", "decoder_dims")
_DISTINGUISHING: dict[str, tuple[str, dict]] = {  # preset -> (model, its own overrides)
    "rnn-cnn-small": ("rnn-cnn", {}),
    "rnn-cnn-large": ("rnn-cnn", {"hidden_size": 1200}),
    "rnn-cnn-maxonly": ("rnn-cnn", {"pooling": "max"}),
    "rnn-cnn-cnn-encoder": ("rnn-cnn", {"encoder": "cnn", "pooling": "max"}),
    "rnn-cnn-next-sentence": ("rnn-cnn", {"target": "sentence"}),
    "rnn-cnn-target10": ("rnn-cnn", {"target_length": 10}),
    "rnn-cnn-target50": ("rnn-cnn", {"target_length": 50}),
    "rnn-cnn-rnn-all": ("rnn-cnn", {"decoder": "rnn-all"}),
    **{
        f"rnn-cnn-ar-{kind}-{short}": ("rnn-cnn", {"decoder": f"{kind}-ar", "input_mode": mode})
        for kind in ("rnn", "cnn")
        for short, mode in (
            ("tf", "teacher-forcing"),
            ("as", "always-sampling"),
            ("us", "uniform-sampling"),
        )
    },
    "mean-max-aae": ("mean-max-aae", {}),
    "mean-aae": ("mean-max-aae", {"pooling": "mean"}),
    "max-aae": ("mean-max-aae", {"pooling": "max"}),
    "mean-max-rae": ("mean-max-aae", {"architecture": "lstm"}),
    "mean-rae": ("mean-max-aae", {"architecture": "lstm", "pooling": "mean"}),
    "max-rae": ("mean-max-aae", {"architecture": "lstm", "pooling": "max"}),
}


def _scaled_width(key: str, paper_value: int | tuple, base: dict, cpu: dict) -> int | tuple:
    """``paper_value`` of width ``key`` times the factor ``cpu`` scales the base's width."""
    default = getattr(EncoderPretrainConfig(), key)
    base_value, cpu_value = base.get(key, default), cpu.get(key, default)
    if isinstance(paper_value, tuple):
        return tuple(
            round(v * c / b) for v, b, c in zip(paper_value, base_value, cpu_value, strict=True)
        )
    return round(paper_value * cpu_value / base_value)


def _cpu_settings(model: str, own: dict) -> dict:
    """The one rule of the ``-cpu`` variants (module docstring)."""
    base, cpu = _MODELS[model]
    scaled = {k: _scaled_width(k, v, base, cpu) if k in _WIDTHS else v for k, v in own.items()}
    return {**base, **cpu, **scaled}


_PAPERS = {"rnn-cnn": "RNN-CNN (appendix B)", "mean-max-aae": "Mean-Max AAE (section 4.2)"}


def _register() -> None:
    """Register each preset and its ``-cpu`` variant; the description names its overrides."""
    for name, (model, own) in _DISTINGUISHING.items():
        what = ", ".join([_PAPERS[model], *(f"{k}={v}" for k, v in own.items())])
        paper = replace(EncoderPretrainConfig(), **{**_MODELS[model][0], **own})
        cpu = replace(EncoderPretrainConfig(), **_cpu_settings(model, own))
        register(Preset(name, "encoder", f"{what}; paper scale, BookCorpus", paper))
        register(Preset(f"{name}-cpu", "encoder", f"{what}; CPU, 10 minutes", cpu))


_register()
