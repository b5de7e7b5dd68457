"""Fixtures for model tests: a tiny 6-layer cascade."""

import pytest
import torch

from ctxsent.models.cascade import CascadeRanker
from synthetic import make_tiny_bert


@pytest.fixture
def cascade(tmp_path_factory):
    """A tiny 6-layer cascade (exits 2..6), contextual, max length 64."""
    torch.manual_seed(0)
    folder = make_tiny_bert(tmp_path_factory.mktemp("tiny6"), layers=6)
    return CascadeRanker.from_backbone(str(folder), contextual=True, max_length=64)
