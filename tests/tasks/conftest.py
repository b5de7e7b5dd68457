"""Fixtures for the AS2 data tests: a small file writer."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[..., Path]:
    """``write_file(name, text, newline=...)``: a UTF-8 file in ``tmp_path``, gzipped for .gz."""

    def write(name: str, text: str, *, newline: str = "\n") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.replace("\n", newline).encode("utf-8")
        path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
        return path

    return write
