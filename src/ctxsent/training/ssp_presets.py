"""SSP pre-training settings and presets (appendix C), registered in :mod:`ctxsent.presets`
(family ``ssp``). Kept apart from :mod:`ctxsent.training.ssp_pretrain` (Lightning, torch)
so that listing presets loads neither.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from ctxsent.errors import InputError, check_range
from ctxsent.models.backbones import DEFAULT_BACKBONE
from ctxsent.objectives.electra_sizes import ELECTRA_BASE, ELECTRA_SMALL, ElectraSize
from ctxsent.presets import Preset, register
from ctxsent.training.settings import MIN_INPUT_LENGTH, PretrainSettings, setting


@dataclass
class SspPretrainConfig(PretrainSettings):
    objective: str | None = None  # checked against the data folder when set (presets)
    backbone: str = setting(DEFAULT_BACKBONE, "override the preset's backbone (not for ELECTRA)")
    learning_rate: float = setting(
        5e-5, "override the preset's learning rate", flags=("--lr",), positive=True
    )
    # x20 left the held-out SSP scores of 200 CPU steps unchanged (BENCHMARKS.md)
    head_lr_scale: float = setting(
        1.0, "learning-rate multiplier of the new SSP head", positive=True
    )
    # mean: a one-exit :class:`CascadeRanker`, saved as such
    readout: Literal["cls", "mean"] = setting(
        "cls", "cls (the paper's [CLS] head) | mean (the cascade's mean-pooled FFN: a 3-layer "
        "FFN over the mean of the last layer's token states)",
    )  # fmt: skip
    batch_size: int = setting(32, "override the preset's batch size", min=1)
    max_steps: int = setting(1000, "override the preset's steps", min=1)
    warmup_steps: int = setting(100, "override the preset's warm-up steps", min=0)
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    mlm_probability: float = 0.15
    mlm_weight: float = 1.0
    # 0: continued pre-training on the same inputs without SSP, which separates what SSP
    # adds from what the MLM steps add
    ssp_weight: float = setting(
        1.0, "SSP loss weight (paper: 1, equal to MLM); 0 = the MLM-only control", min=0
    )
    rtd_weight: float = 50.0  # ELECTRA only
    electra: ElectraSize | None = None  # set: ELECTRA from scratch instead of ``backbone``
    max_length: int = 128
    checkpoint_every: int = setting(
        200, "steps between checkpoints", flags=("--checkpoint-every", "--save-every"), min=1
    )
    seed: int = setting(42, "override the preset's seed", min=0)
    heldout_examples: int = 1000  # scored at the end on examples no step drew (ssp_heldout)

    def __post_init__(self) -> None:
        if self.readout not in ("cls", "mean"):
            raise InputError(f"expected cls or mean, got {self.readout!r}", field="readout")
        if self.readout == "mean" and self.electra is not None:
            raise InputError("the ELECTRA presets read SSP from [CLS] only", field="readout")
        if self.electra is not None and self.backbone != DEFAULT_BACKBONE:
            raise InputError(
                "ELECTRA is built from scratch with the data's tokenizer; it takes no backbone",
                field="backbone",
            )
        check_range(self, "mlm_weight rtd_weight weight_decay heldout_examples", 0)
        check_range(self, "max_grad_norm", 0, above=True)
        check_range(self, "max_length", MIN_INPUT_LENGTH)
        check_range(self, "mlm_probability", 0, 1, above=True, below=True)
        super().__post_init__()


#: ``RankerConfig.backbone`` of a discriminator built from scratch
ELECTRA_SCRATCH = "electra-from-scratch"
#: The ``-electra-cpu`` model: ELECTRA-Small's width, 4 layers (vocabulary ~8000).
ELECTRA_CPU = ElectraSize(256, 4, 4, 1024, 128, 0.25)


def _presets() -> dict[str, SspPretrainConfig]:
    """Paper scale (appendix C: 400K steps of 4096, 10K warm-up) and ~1 hour CPU variants.

    ELECTRA: ``-electra`` is ELECTRA-Base on the paper's schedule (appendix C
    reports ~3.5 days on 8 A100s); ``-electra-small`` is ELECTRA-Small on its
    own from-scratch recipe (1M steps of 128, 10K warm-up, 5e-4; 4 days on
    one V100 in Clark et al., Table 6); ``-electra-cpu`` fits about an hour.
    """
    presets = {}
    for objective in ("sdc", "dpc", "dslc", "all"):
        presets[f"ssp-{objective}"] = SspPretrainConfig(
            objective=objective,
            learning_rate=1e-4,
            batch_size=4096,
            max_steps=400_000,
            warmup_steps=10_000,
            checkpoint_every=2_000,
        )
        # measured per step of 16 x 128 tokens on one core of a 2-core EPYC, another job on
        # the other: 3.3 s in fp32 (no bf16 instructions), 0.83-1.7 s in bf16 on CPUs with
        # AVX512-BF16; 1,000 steps is 15-55 minutes (BENCHMARKS.md)
        presets[f"ssp-{objective}-cpu"] = SspPretrainConfig(
            objective=objective,
            learning_rate=5e-5,
            batch_size=16,
            max_steps=1_000,
            warmup_steps=100,
            checkpoint_every=250,
        )
        presets[f"ssp-{objective}-electra"] = replace(
            presets[f"ssp-{objective}"], electra=ELECTRA_BASE, learning_rate=2e-4
        )
        presets[f"ssp-{objective}-electra-small"] = SspPretrainConfig(
            objective=objective,
            electra=ELECTRA_SMALL,
            learning_rate=5e-4,
            batch_size=128,
            max_steps=1_000_000,
            warmup_steps=10_000,
            checkpoint_every=5_000,
        )
        # measured per step of 32 x 128 tokens, one thread, vocabulary 8000: 2.0-2.2 s in fp32,
        # about 1.1 s in bf16 on an AVX512-BF16 EPYC with another job on the box, so 2,000
        # steps is about 35-75 minutes (BENCHMARKS.md, "ELECTRA variant"). At this budget the
        # from-scratch model stays on its unigram plateau: it checks the pipeline, it does not
        # give a useful ranker (BENCHMARKS.md, "ELECTRA variant end to end")
        presets[f"ssp-{objective}-electra-cpu"] = SspPretrainConfig(
            objective=objective,
            electra=ELECTRA_CPU,
            learning_rate=5e-4,
            batch_size=32,
            max_steps=2_000,
            warmup_steps=200,
            checkpoint_every=250,
        )
    return presets


def _register() -> None:
    """Register :func:`_presets` as the ``ssp`` family of :mod:`ctxsent.presets`."""
    for name, config in _presets().items():
        if config.electra is None:
            model = "MLM + SSP on MiniLM"
        else:
            size = f"{config.electra.layers}x{config.electra.hidden}"
            model = f"ELECTRA {size} from scratch, MLM + RTD + SSP"
        steps = f"{config.max_steps:,} steps of {config.batch_size}"
        scale = f"CPU, {steps}" if name.endswith("-cpu") else steps
        register(Preset(name, "ssp", f"{config.objective} objective, {model}; {scale}", config))


_register()
