"""Shared fixtures: offline mode, the shared data folder, tiny random backbones."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


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
