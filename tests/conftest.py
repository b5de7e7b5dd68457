"""Shared fixtures: offline mode, the shared data folder, tiny random backbones."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _auto_precision_is_fp32(monkeypatch):
    """``precision="auto"`` resolves to fp32 on every CPU, so a test does not depend on
    whether its machine has AVX512-BF16: tiny random models at test learning rates are
    unstable in bf16 (CI failed once on a bf16 machine: dev MAP 0.25-0.72 over three seeds
    where fp32 gets 1.0). Tests that want bf16 ask for it by name."""
    from ctxsent.models import precision

    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: False)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (or ``$CTXSENT_SHARED_DATA``); skips the test when it is absent."""
    path = Path(os.environ.get("CTXSENT_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path}")
    return path


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A saved 2-layer, width-32 random BERT with MiniLM's tokenizer."""
    from synthetic import make_tiny_bert

    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))
