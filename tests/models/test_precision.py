import pytest
import torch

from ctxsent.models import precision


def test_cpu_bf16_override_decides_what_auto_means(monkeypatch):
    cpu = torch.device("cpu")
    monkeypatch.setenv("CTXSENT_CPU_BF16", "1")
    assert precision.resolve_precision("auto", cpu) == "bf16"
    monkeypatch.setenv("CTXSENT_CPU_BF16", "0")
    assert precision.resolve_precision("auto", cpu) == "fp32"
    assert precision.resolve_precision("bf16", cpu) == "bf16"  # a named precision is kept


def test_cpu_bf16_override_refuses_other_values(monkeypatch):
    monkeypatch.setenv("CTXSENT_CPU_BF16", "yes")
    with pytest.raises(ValueError, match="CTXSENT_CPU_BF16"):
        precision.resolve_precision("auto", torch.device("cpu"))
