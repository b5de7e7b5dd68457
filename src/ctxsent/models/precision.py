"""Numeric precision for inference and training: fp32, bf16 or fp16 autocast.

``auto`` picks bf16 on GPUs that support it (fp16 on older ones) and on CPUs
with native bf16 instructions (AVX512-BF16 or AMX); elsewhere fp32, because
emulated bf16 is several times slower than fp32 (measured on a 2-core AMD
EPYC without those instructions: ~4x slower, see BENCHMARKS.md).
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

import torch

PRECISIONS = ("auto", "fp32", "bf16", "fp16")


@functools.cache
def cpu_has_native_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(flag in flags for flag in ("avx512_bf16", "amx_bf16"))


def resolve_precision(precision: str, device: torch.device) -> str:
    """Turn ``auto`` into a concrete precision for ``device``."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision != "auto":
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if cpu_has_native_bf16() else "fp32"


def autocast_context(device: torch.device, precision: str):
    """The autocast context for a concrete precision (no autocast for fp32)."""
    precision = resolve_precision(precision, device)
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def lightning_precision(precision: str, device_type: str) -> str:
    """The Lightning ``Trainer(precision=...)`` string for a precision name."""
    precision = resolve_precision(precision, torch.device(device_type))
    return {"fp32": "32-true", "bf16": "bf16-mixed", "fp16": "16-mixed"}[precision]
