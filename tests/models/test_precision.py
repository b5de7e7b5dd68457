import pytest
import torch

from ctxsent.models import precision


@pytest.fixture
def detection(monkeypatch):
    """``cpu_has_native_bf16`` re-read under a patched environment, then cached again as before."""
    precision.cpu_has_native_bf16.cache_clear()
    yield monkeypatch
    precision.cpu_has_native_bf16.cache_clear()


def test_cpu_bf16_override_decides_what_auto_means(detection):
    cpu = torch.device("cpu")
    detection.setenv("CTXSENT_CPU_BF16", "1")
    assert precision.resolve_precision("auto", cpu) == "bf16"
    precision.cpu_has_native_bf16.cache_clear()
    detection.setenv("CTXSENT_CPU_BF16", "0")
    assert precision.resolve_precision("auto", cpu) == "fp32"
    assert precision.resolve_precision("bf16", cpu) == "bf16"  # a named precision is kept


def test_cpu_bf16_override_refuses_other_values(detection):
    detection.setenv("CTXSENT_CPU_BF16", "yes")
    with pytest.raises(ValueError, match="CTXSENT_CPU_BF16"):
        precision.cpu_has_native_bf16()
