"""Fixtures for the SentEval-style evaluation tests: real data, tiny vectors, fake encoders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="session")
def senteval_data(shared_data: Path) -> Path:
    """The shared data folder (``$CTXSENT_SHARED_DATA`` or ``<repo>/../shared/data``, from
    the root conftest), skipping when its SentEval/STS folders are missing."""
    for folder in ("senteval", "sts12", "stsbenchmark"):
        if not (shared_data / folder).is_dir():
            pytest.skip(f"{shared_data / folder} not found")
    return shared_data


TINY_VECTORS = {
    "good": [1.0, 0.0, 0.0, 0.0],
    "bad": [-1.0, 0.0, 0.0, 0.0],
    "movie": [0.0, 1.0, 0.0, 0.0],
    "does": [0.0, 0.0, 1.0, 0.0],
    "n't": [0.0, 0.0, 0.0, 1.0],
    "u.s.": [0.5, 0.5, 0.5, 0.5],
    ".": [0.0, 0.0, 0.0, -1.0],
}


@pytest.fixture
def tiny_vectors() -> dict[str, list[float]]:
    return TINY_VECTORS


@pytest.fixture
def tiny_vectors_file(tmp_path: Path) -> Path:
    """``TINY_VECTORS`` as a GloVe-format text file."""
    path = tmp_path / "tiny.txt"
    lines = [f"{word} {' '.join(map(str, vector))}" for word, vector in TINY_VECTORS.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class TableEncoder:
    """Looks embeddings up in a dict; counts the texts it was asked to encode."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.encoded: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.encoded.extend(texts)
        return np.stack([self.table[text] for text in texts])


@pytest.fixture
def table_encoder() -> type[TableEncoder]:
    return TableEncoder
