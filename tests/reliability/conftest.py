"""Fixtures of the reliability tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def one_thread():
    """Train on one thread, as a forked child of :mod:`forked_runs` does, so that neither
    run compares sums taken in another order (torch's thread count is per process and
    other tests change it); the count is restored after the test."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
