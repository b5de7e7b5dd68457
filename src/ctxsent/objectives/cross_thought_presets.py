"""The Cross-Thought presets (Wang et al., 2020, section 4.2), registered in
:mod:`ctxsent.presets` (family ``cross-thought``).

Kept apart from :mod:`ctxsent.objectives.cross_thought` (data, collator, loss), which
imports torch and the model: listing presets (``ctxsent presets``) loads neither.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ctxsent.errors import check_range
from ctxsent.presets import Preset, register


@dataclass(frozen=True)
class CrossThoughtPreset:
    """The settings of a registered preset (:mod:`ctxsent.presets`, family
    ``cross-thought``); paper values from section 4.2 unless noted."""

    num_special: int
    cross_sequence: bool
    sequence_length: int
    sequences_per_sample: int
    batch_size: int
    learning_rate: float
    warmup_steps: int
    max_steps: int
    from_backbone: bool
    mask_probability: float = 0.15
    dropout: float = 0.1

    def __post_init__(self) -> None:
        check_range(self, "num_special sequence_length sequences_per_sample batch_size", 1)
        check_range(self, "max_steps", 1)
        check_range(self, "warmup_steps", 0)
        check_range(self, "learning_rate", 0, above=True)
        check_range(self, "mask_probability", 0, 1, above=True, below=True)
        check_range(self, "dropout", 0, 1, below=True)

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.sequences_per_sample * self.sequence_length

    def model_config(self, backbone: str):
        """The :class:`~ctxsent.models.cross_thought.CrossThoughtConfig` of this preset."""
        from ctxsent.models.cross_thought import CrossThoughtConfig

        return CrossThoughtConfig(
            backbone=backbone,
            pretrained=self.from_backbone,
            num_special=self.num_special,
            cross_sequence=self.cross_sequence,
            dropout=self.dropout,
        )


def _paper(n: int, cross: bool, length: int) -> CrossThoughtPreset:
    # 500 x 64 tokens per sample, batch 128 (4M tokens), 125k steps, 10k warm-up, lr 5e-4.
    # The 512-token variants keep the tokens per sample: 63 sequences of 512 (~32k tokens).
    per_sample = 500 if length == 64 else 63
    return CrossThoughtPreset(n, cross, length, per_sample, 128, 5e-4, 10_000, 125_000, False)


def _cpu(paper: CrossThoughtPreset) -> CrossThoughtPreset:
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


_register()
