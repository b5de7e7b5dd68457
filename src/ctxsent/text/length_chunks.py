"""Batching texts by length: one padded batch holds texts of similar length."""

from __future__ import annotations

from collections.abc import Sequence


def length_sorted_chunks(texts: Sequence[str], size: int) -> list[list[int]]:
    """Indices of ``texts`` longest first (by characters), cut into chunks of ``size``.

    Encoders pad each chunk to its longest text, so sorting first wastes little on
    padding, and the first chunk shows the peak memory early.
    """
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [order[start : start + size] for start in range(0, len(order), size)]
