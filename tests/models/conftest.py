"""Fixtures for model tests: a tiny 6-layer backbone, and a cascade on it."""

import pytest
import torch

from ctxsent.models.cascade import CascadeRanker
from synthetic import make_tiny_bert


@pytest.fixture(scope="session")
def tiny_bert6(tmp_path_factory):
    """A saved 6-layer tiny random BERT (its weights depend on nothing but its seed)."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny6"), layers=6)


@pytest.fixture
def cascade(tiny_bert6):
    """A tiny 6-layer cascade (exits 2..6), contextual, max length 64."""
    torch.manual_seed(0)
    return CascadeRanker.from_backbone(str(tiny_bert6), contextual=True, max_length=64)
