"""Fixtures for the Cross-Thought tests."""

import pytest
from cross_thought_fixtures import tiny_model

from ctxsent.models.cross_thought import CrossThoughtModel


@pytest.fixture
def model() -> CrossThoughtModel:
    return tiny_model()


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models gain nothing from a second thread, and a busy machine's spin-waits make
    two threads several times slower. Module-scoped, so that the module's shared runs and
    its tests compute on the same thread count; restored after the module."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
