"""Fixtures for the Cross-Thought tests."""

import pytest
from cross_thought_fixtures import tiny_model

from ctxsent.models.cross_thought import CrossThoughtModel


@pytest.fixture
def model() -> CrossThoughtModel:
    return tiny_model()
