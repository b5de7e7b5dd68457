"""Settings of encoder pre-training and the named presets of both papers.

One flat :class:`EncoderPretrainConfig` covers RNN-CNN and Mean-Max AAE, so every preset and
every ablation is a handful of overrides (:data:`PRESETS`) and the CLI's
``--set key=value`` reaches any setting. This module imports nothing heavy, so the CLI
starts fast.

Paper settings: RNN-CNN appendix B (batch 512, inputs and targets of 30 words, Adam
5e-4, 20k words, GloVe-initialised 300-d embeddings); Mean-Max AAE section 4.2 (Adam
2e-4, gradients clipped at norm 5, dropout 0.5, batch 64, 20k words, frozen 300-d GloVe).
Both papers train on BookCorpus (74M sentences): RNN-CNN small 20 h, large 34 h on one
GPU (Table 4). The paper presets therefore need 300-d vectors (``--word-vectors
glove.840B.300d.txt``).

Each paper preset is its family's base settings (RNN-CNN small, or the Mean-Max AAE) plus
the overrides that distinguish it. Its ``-cpu`` variant follows one rule: the family's
base settings, then the family's CPU settings, then the preset's own distinguishing
overrides, where a width among them (:data:`_WIDTHS`) is scaled by the factor the CPU
settings scale that width of the base (RNN-CNN large: GRU 1200 x 128/300 = 512). The CPU
settings: 50-d GloVe 6B, narrower layers (RNN-CNN: GRU 2x128, decoder 128-256-50; AAE:
d_h=128, d_f=256, 4 heads, dropout 0.1 since such narrow models underfit with 0.5),
batches of 64, a 10k-word vocabulary (the softmax dominates a CPU step), the first 200k
corpus sentences, and a 10-minute budget instead of one epoch (``--max-minutes``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ctxsent.errors import InputError, check_choice, check_range
from ctxsent.training.settings import ACCELERATORS, PRECISIONS

GLOVE_PACKAGE = "glove-6b-50d"


@dataclass
class EncoderPretrainConfig:
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

    def __post_init__(self) -> None:
        check_range(self, "vocab_size embedding_dim max_length max_sentences batch_size", 1)
        check_range(self, "epochs max_steps checkpoint_every hidden_size ffn_size heads", 1)
        check_range(self, "target_length", 1)
        check_range(self, "learning_rate max_grad_norm max_minutes", 0, above=True)
        check_range(self, "expand_vocabulary seed", 0)
        check_range(self, "dropout", 0, 1, below=True)
        check_choice(self, "precision", PRECISIONS)
        check_choice(self, "accelerator", ACCELERATORS)


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
_FAMILIES: dict[str, tuple[dict, dict]] = {  # family -> (base settings, CPU settings)
    "rnn-cnn": (_RNN_CNN, _RNN_CNN_CPU),
    "mean-max-aae": (_AAE, _AAE_CPU),
}
_WIDTHS = ("hidden_size", "ffn_size", "decoder_dims")
_DISTINGUISHING: dict[str, tuple[str, dict]] = {  # preset -> (family, its own overrides)
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


def _cpu_settings(family: str, own: dict) -> dict:
    """The one rule of the ``-cpu`` variants (module docstring)."""
    base, cpu = _FAMILIES[family]
    scaled = {k: _scaled_width(k, v, base, cpu) if k in _WIDTHS else v for k, v in own.items()}
    return {**base, **cpu, **scaled}


PRESETS: dict[str, dict] = {
    **{name: {**_FAMILIES[family][0], **own} for name, (family, own) in _DISTINGUISHING.items()},
    **{f"{name}-cpu": _cpu_settings(*spec) for name, spec in _DISTINGUISHING.items()},
}


def preset_config(name: str, overrides: dict | None = None) -> EncoderPretrainConfig:
    """The config of preset ``name`` with ``overrides`` (field name -> value) applied."""
    if name not in PRESETS:
        raise InputError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})", field="preset")
    settings = {**PRESETS[name], **(overrides or {})}
    known = {f.name for f in fields(EncoderPretrainConfig)}
    for key in settings:
        if key not in known:
            raise InputError(f"unknown setting (known: {', '.join(sorted(known))})", field=key)
    return replace(EncoderPretrainConfig(), **settings)


def parse_overrides(assignments: list[str]) -> dict:
    """``--set`` values: ``["hidden_size=64", "decoder_dims=32,64"]`` -> typed values for
    :class:`EncoderPretrainConfig` (``none`` for no value)."""
    defaults = {f.name: f.default for f in fields(EncoderPretrainConfig)}
    floats = {"learning_rate", "max_grad_norm", "max_minutes", "dropout"}
    parsed: dict = {}
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in defaults:
            raise InputError(
                f"expected KEY=VALUE with KEY one of {', '.join(defaults)}, got {assignment!r}",
                field="set",
            )
        try:
            if raw.lower() == "none":
                value = None
            elif isinstance(defaults[key], tuple):
                value = tuple(int(part) for part in raw.split(","))
            elif key in floats:
                value = float(raw)
            elif isinstance(defaults[key], int) or key in {"max_sentences", "max_steps"}:
                value = int(raw)
            else:
                value = raw
        except ValueError:
            raise InputError(f"bad value {raw!r}", field=key) from None
        parsed[key] = value
    return parsed
