"""ELECTRA model sizes (Clark et al., 2020, Table 6), apart from
:mod:`ctxsent.objectives.electra` (which imports torch) so that presets can name them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ElectraSize:
    """Discriminator shape; the generator is ``generator_fraction`` of its width."""

    hidden: int = 256
    layers: int = 12
    heads: int = 4
    intermediate: int = 1024
    embedding: int = 128
    generator_fraction: float = 0.25


#: ELECTRA-Small and ELECTRA-Base (Clark et al., Table 6)
ELECTRA_SMALL = ElectraSize()
ELECTRA_BASE = ElectraSize(768, 12, 12, 3072, 768, 1 / 3)
