"""Numeric precision for inference and training: fp32, bf16 or fp16 autocast, int8.

``int8`` (inference only) quantises every ``nn.Linear``'s weights to int8 and the
activations per batch (fbgemm, AVX2 suffices); embeddings, layer norms and softmax stay
fp32: a small score change for speed on CPUs without bf16 (BENCHMARKS.md).

``auto`` picks bf16 on GPUs that support it (else fp16) and on CPUs with native bf16
(AVX512-BF16 or AMX); elsewhere fp32, as emulated bf16 is ~4x slower than fp32 (a 2-core
EPYC without those instructions, BENCHMARKS.md). ``CTXSENT_CPU_BF16=0`` (or ``1``)
overrides that choice for this process and the commands it starts.

``auto`` is the default of training (bf16 autocast keeps fp32 master weights) and of the
AS2 rankers' and bi-encoder's inference: on a bf16 CPU it kept every trained model's MAP
within 0.002 of fp32 with no new tie (BENCHMARKS.md, "Inference speed and precision").
Heads run under :func:`keep_fp32` and pooling in fp32 (:mod:`~ctxsent.models.pooling`): a
logit rounded to bf16 ties with its neighbours, and ties rank pessimistically.
:func:`inference` says once per process on stderr what ``auto`` chose. The word-level
encoders and Cross-Thought, never measured in bf16, infer in fp32 unless asked.
``--accelerator`` names devices alike in training and inference (:func:`device_type`,
:func:`on_accelerator`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from pathlib import Path
from typing import Any, Literal, get_args

import torch
from torch import nn

from ctxsent.errors import CtxsentError, InputError
from ctxsent.protocols import InferencePrecision

#: Inference precisions (training takes all but ``int8``).
PrecisionName = Literal["auto", "fp32", "bf16", "fp16", "int8"]
PRECISIONS: tuple[str, ...] = get_args(PrecisionName)


@functools.cache
def cpu_has_native_bf16() -> bool:
    """Whether the CPU has native bf16 instructions (AVX512-BF16 or AMX)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(flag in flags for flag in ("avx512_bf16", "amx_bf16"))


def cpu_wants_bf16() -> bool:
    """What ``auto`` picks on the CPU: ``CTXSENT_CPU_BF16`` if set, else the detection."""
    override = os.environ.get("CTXSENT_CPU_BF16")
    if override is None:
        return cpu_has_native_bf16()
    if override not in ("0", "1"):
        raise ValueError(f"CTXSENT_CPU_BF16 must be 0 or 1, got {override!r}")
    return override == "1"


def resolve_precision(precision: str, device: torch.device) -> str:
    """Turn ``auto`` into a concrete precision for ``device``."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision != "auto":
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if cpu_wants_bf16() else "fp32"


@functools.cache
def announce_auto(device_type: str, resolved: str) -> None:
    """Say once per process on stderr what precision ``auto`` chose on ``device_type``."""
    why = {
        "cuda": "this GPU",
        "cpu": "this CPU has native bf16" if resolved == "bf16" else "this CPU lacks native bf16",
    }[device_type]
    print(f"ctxsent: precision auto -> {resolved} ({why})", file=sys.stderr)


def set_precision(model: Any, precision: str) -> Any:
    """Give ``model`` the inference ``precision`` (``--precision``) and return it; a model
    without a choice (BM25, ONNX, sentence-transformers adapters) takes ``auto`` or ``fp32``
    only."""
    if precision not in PRECISIONS:
        choices = ", ".join(PRECISIONS)
        raise InputError(f"must be one of {choices}, got {precision!r}", field="precision")
    if isinstance(model, InferencePrecision):
        model.precision = precision
    elif precision not in ("auto", "fp32"):
        name = type(model).__name__
        raise InputError(f"a {name} runs in its own precision only", field="precision")
    return model


def effective_precision(model: Any) -> str:
    """The concrete precision ``model`` infers in (``auto`` resolved for its device); fp32
    for a model without a choice."""
    if not isinstance(model, InferencePrecision):
        return "fp32"
    device = getattr(model, "device", torch.device("cpu"))
    return resolve_precision(model.precision, device)


def autocast_context(device: torch.device, precision: str):
    """The autocast context for a concrete precision (no autocast for fp32)."""
    precision = resolve_precision(precision, device)
    if precision in ("fp32", "int8"):  # int8 is applied to the weights, see quantize_int8
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


_autocast_states = threading.local()  # per thread, as torch keeps the autocast state


def _enter_fp32(module: nn.Module, inputs: tuple) -> tuple:
    device = next((x.device.type for x in inputs if isinstance(x, torch.Tensor)), "cpu")
    stack = _autocast_states.__dict__.setdefault("stack", [])
    stack.append((device, torch.is_autocast_enabled(device)))
    torch.set_autocast_enabled(device, False)
    return tuple(x.float() if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs)


def _leave_fp32(module: nn.Module, inputs: tuple, output: Any) -> None:
    device, enabled = _autocast_states.stack.pop()
    torch.set_autocast_enabled(device, enabled)


def keep_fp32(module: nn.Module) -> nn.Module:
    """Make ``module`` (a scoring head) compute in fp32 whatever autocast surrounds it: its
    floating inputs are cast to fp32 and autocast is off inside it. Forward hooks, so its
    parameters, state dict and class are unchanged, and copies (int8) keep the rule."""
    module.register_forward_pre_hook(_enter_fp32)
    module.register_forward_hook(_leave_fp32, always_call=True)
    return module


def device_type(accelerator: str) -> str:
    """``cuda`` when ``accelerator`` (``auto``, ``cpu``, ``gpu``, ``cuda``) means a GPU (``auto``
    with one present), else ``cpu``."""
    if accelerator in ("gpu", "cuda"):
        return "cuda"
    return "cuda" if accelerator == "auto" and torch.cuda.is_available() else "cpu"


def on_accelerator(model: Any, accelerator: str) -> Any:
    """``model`` moved to the GPU (``gpu``, ``cuda``, or ``auto`` with one visible) or the CPU.

    Only torch modules move; BM25, ONNX exports and sentence-transformers adapters stay on
    the device they chose when loaded.
    """
    device = device_type(accelerator)
    if device == "cuda" and not torch.cuda.is_available():
        raise CtxsentError(f"--accelerator {accelerator}: torch sees no CUDA GPU on this machine")
    return model.to(device) if isinstance(model, torch.nn.Module) else model


def lightning_precision(precision: str, device_type: str) -> str:
    """The Lightning ``Trainer(precision=...)`` string for a precision name."""
    precision = resolve_precision(precision, torch.device(device_type))
    if precision == "int8":
        raise ValueError("int8 is for inference only; train in fp32, bf16 or fp16")
    return {"fp32": "32-true", "bf16": "bf16-mixed", "fp16": "16-mixed"}[precision]


def quantize_int8(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``model`` with dynamically quantised int8 ``nn.Linear`` layers (CPU only)."""
    import copy
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao's deprecation notices; 2.13 is pinned
        return torch.ao.quantization.quantize_dynamic(
            copy.deepcopy(model).cpu().eval(), {torch.nn.Linear}, dtype=torch.qint8
        )
