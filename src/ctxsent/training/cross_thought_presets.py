"""Cross-Thought pre-training and fine-tuning settings (:class:`CrossThoughtPretrainConfig`,
:class:`CrossThoughtFineTuneConfig`) and the presets of Wang et al., 2020, section 4.2,
registered in :mod:`ctxsent.presets` (families ``cross-thought`` and
``cross-thought-finetune``): each preset is a run's config. Kept apart from
:mod:`ctxsent.training.cross_thought_train` (torch, the model), so that listing presets
loads neither.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ctxsent.errors import check_range
from ctxsent.models.backbones import DEFAULT_BACKBONE
from ctxsent.presets import Preset, register
from ctxsent.training.settings import PretrainSettings, RunSettings, setting


@dataclass
class CrossThoughtPretrainConfig(PretrainSettings):
    """A pre-training run (paper values from section 4.2 unless noted): the model
    (``num_special`` special tokens, cross-sequence Transformers or not, ``backbone``'s
    weights when ``from_backbone``), the samples (``sequences_per_sample`` sequences of
    ``sequence_length`` tokens), the optimisation, and the budget (``max_steps``, or
    ``max_minutes`` across resumes, whichever comes first)."""

    num_special: int = 1
    cross_sequence: bool = True
    sequence_length: int = 64
    sequences_per_sample: int = 500
    batch_size: int = 128
    learning_rate: float = 5e-4
    warmup_steps: int = 10_000
    max_steps: int = setting(125_000, "override the preset's steps", min=1)
    from_backbone: bool = False
    mask_probability: float = 0.15
    dropout: float = 0.1
    backbone: str = setting(
        DEFAULT_BACKBONE, "tokenizer and architecture (BERT-style); the data's tokenizer"
    )
    max_minutes: float | None = setting(
        None, "stop after this many minutes (total, across resumes)",
        flags=("--max-minutes", "--budget"), positive=True,
    )  # fmt: skip
    checkpoint_every: int = 200
    seed: int = setting(0, "random seed", min=0)
    limits: ClassVar[tuple[str, ...]] = ("max_minutes", "max_steps")

    def __post_init__(self) -> None:
        check_range(self, "num_special sequence_length sequences_per_sample batch_size", 1)
        check_range(self, "checkpoint_every", 1)
        check_range(self, "warmup_steps", 0)
        check_range(self, "learning_rate", 0, above=True)
        check_range(self, "mask_probability", 0, 1, above=True, below=True)
        check_range(self, "dropout", 0, 1, below=True)
        super().__post_init__()

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.sequences_per_sample * self.sequence_length

    def model_config(self, backbone: str | None = None):
        """The :class:`~ctxsent.models.cross_thought.CrossThoughtConfig` of this run (of
        ``backbone`` when given, else the run's)."""
        from ctxsent.models.cross_thought import CrossThoughtConfig

        return CrossThoughtConfig(
            backbone=backbone or self.backbone,
            pretrained=self.from_backbone,
            num_special=self.num_special,
            cross_sequence=self.cross_sequence,
            dropout=self.dropout,
        )


@dataclass
class CrossThoughtFineTuneConfig(RunSettings):
    """Fine-tuning settings (section 4.2 values where the paper gives them). The steps draw
    their batches from the engine's generator of the step, so a rerun resumes exactly; every
    process draws the same batch, so more devices do not make a step larger."""

    learning_rate: float = setting(
        5e-5, "default: 5e-5 (AS2) / 2e-5 (pairs)", flags=("--lr",), positive=True
    )
    max_steps: int = setting(500, "optimiser steps", min=1)
    warmup_ratio: float = 0.1
    batch_size: int = setting(
        8, "questions per step (AS2) or pairs per step (pairs); default: 8 questions / 32 pairs",
        min=1,
    )  # fmt: skip
    negatives: int = setting(15, "AS2: sampled negatives per question", min=1)
    eval_every: int = setting(100, "steps between dev evaluations", min=1)
    seed: int = setting(42, "random seed", min=0)
    limits: ClassVar[tuple[str, ...]] = ("max_steps",)

    def __post_init__(self) -> None:
        check_range(self, "warmup_ratio", 0, 1)
        super().__post_init__()


def _paper(n: int, cross: bool, length: int) -> CrossThoughtPretrainConfig:
    # 500 x 64 tokens per sample, batch 128 (4M tokens), 125k steps, 10k warm-up, lr 5e-4.
    # The 512-token variants keep the tokens per sample: 63 sequences of 512 (~32k tokens).
    per_sample = 500 if length == 64 else 63
    return CrossThoughtPretrainConfig(n, cross, length, per_sample)


def _cpu(paper: CrossThoughtPretrainConfig) -> CrossThoughtPretrainConfig:
    """The one rule of the ``-cpu`` variants: minutes on 2 CPU cores, starting from MiniLM,
    4 samples of ~1k tokens per step; the special tokens, the cross-sequence layers and the
    sequence length (what distinguishes the presets) are kept."""
    per_sample = 16 if paper.sequence_length == 64 else 2
    return replace(
        paper,
        sequences_per_sample=per_sample,
        batch_size=4,
        learning_rate=1e-4,
        warmup_steps=20,
        max_steps=2_000,
        from_backbone=True,
    )


def _register() -> None:
    for name, n, cross, length in [
        ("cross-thought-1-64", 1, True, 64),
        ("cross-thought-3-64", 3, True, 64),
        ("cross-thought-5-64", 5, True, 64),
        ("cross-thought-1-512", 1, True, 512),
        ("mlm-1-64", 1, False, 64),
        ("mlm-1-512", 1, False, 512),
    ]:
        model = f"Cross-Thought, {n} special token(s)" if cross else "MLM baseline"
        paper = _paper(n, cross, length)
        what = f"{model}, {length}-token sequences"
        register(Preset(name, "cross-thought", f"{what}; paper scale (section 4.2)", paper))
        register(Preset(f"{name}-cpu", "cross-thought", f"{what}; minutes on CPU", _cpu(paper)))
    for name, config, what in [
        ("cross-thought-as2", CrossThoughtFineTuneConfig(),
         "answer selection (Eq. 10): 8 questions a step, 15 sampled negatives each, lr 5e-5"),
        ("cross-thought-pairs", CrossThoughtFineTuneConfig(learning_rate=2e-5, batch_size=32),
         "pair classification (Eq. 11; SICK-E, MRPC): 32 pairs a step, lr 2e-5"),
    ]:  # fmt: skip
        register(Preset(name, "cross-thought-finetune", what, config))


_register()
