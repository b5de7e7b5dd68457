"""Fixtures for the corpus tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def shared_data_dir() -> Path:
    """``$CTXSENT_SHARED_DATA``, else ``<repo>/../shared/data``."""
    return Path(os.environ.get("CTXSENT_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture
def shared_data() -> Path:
    return shared_data_dir()
