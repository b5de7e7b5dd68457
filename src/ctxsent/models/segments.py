"""Tokenisation of one-, two- and three-segment inputs for cross-encoders.

Pairwise AS2 feeds ``[CLS] q [SEP] a [SEP]``; contextual AS2 and SSP pre-training feed
``[CLS] q [SEP] a [SEP] c [SEP]`` with segment ids 0, 1, 2 (SSP paper, appendices C and
D). Fine-tuning and pre-training both call :func:`encode_segments`, so a pre-trained
checkpoint fine-tunes unchanged. Truncation (left open by the papers): the context is cut
first, then the candidate, then the question, each down to a floor (0, 32, 32 tokens)
before the next is touched; anything still too long is cut from the longest piece.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

_FLOORS = (32, 32, 0)  # minimum tokens kept per segment before cutting the previous one


def segment_budgets(lengths: list[int], room: int) -> list[int]:
    """Tokens to keep per segment so that ``sum(kept) <= room`` (see module docstring)."""
    kept = list(lengths)
    for index in reversed(range(len(kept))):
        excess = sum(kept) - room
        if excess <= 0:
            return kept
        floor = min(_FLOORS[index], kept[index])
        kept[index] -= min(excess, kept[index] - floor)
    while sum(kept) > room:
        kept[kept.index(max(kept))] -= 1
    return kept


def encode_segments(
    tokenizer,
    segments: Sequence[Sequence[str]],
    max_length: int = 256,
) -> list[tuple[list[int], list[int]]]:
    """Token ids and segment ids for each example, without padding.

    ``segments`` holds one column per segment (questions, candidates[, contexts]);
    every column has one string per example. Returns ``(input_ids, token_type_ids)``
    per example.
    """
    if not 1 <= len(segments) <= 3:
        raise ValueError(f"1 to 3 segments are supported, got {len(segments)}")
    size = len(segments[0])
    if any(len(column) != size for column in segments):
        raise ValueError("every segment column must have one entry per example")
    if max_length < len(segments) + 1:
        raise ValueError(f"max_length {max_length} leaves no room for {len(segments)} segments")
    if size == 0:
        return []
    pieces = [tokenizer(list(column), add_special_tokens=False)["input_ids"] for column in segments]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    room = max_length - 1 - len(segments)  # [CLS] plus one [SEP] per segment
    encoded = []
    for i in range(size):
        parts = [column[i] for column in pieces]
        kept = segment_budgets([len(part) for part in parts], room)
        ids, types = [cls], [0]
        for segment_id, (part, keep) in enumerate(zip(parts, kept, strict=True)):
            ids += part[:keep] + [sep]
            types += [segment_id] * (keep + 1)
        encoded.append((ids, types))
    return encoded


def pad_arrays(
    encoded: Sequence[tuple[list[int], list[int]]], pad_id: int
) -> dict[str, np.ndarray]:
    """Pad to the longest example in the batch (dynamic padding) and build the attention mask:
    int64 arrays ``input_ids``, ``token_type_ids``, ``attention_mask``. NumPy only, so the
    torch-free ONNX runtime (:mod:`ctxsent.onnx_runtime`) pads as the models do."""
    width = max(len(ids) for ids, _ in encoded)
    input_ids = np.full((len(encoded), width), pad_id, dtype=np.int64)
    token_type_ids = np.zeros((len(encoded), width), dtype=np.int64)
    attention_mask = np.zeros((len(encoded), width), dtype=np.int64)
    for row, (ids, types) in enumerate(encoded):
        input_ids[row, : len(ids)] = ids
        token_type_ids[row, : len(types)] = types
        attention_mask[row, : len(ids)] = 1
    return {
        "input_ids": input_ids,
        "token_type_ids": token_type_ids,
        "attention_mask": attention_mask,
    }


def pad_batch(
    encoded: Sequence[tuple[list[int], list[int]]], pad_id: int
) -> dict[str, torch.Tensor]:
    """:func:`pad_arrays` as long tensors."""
    import torch

    return {name: torch.from_numpy(array) for name, array in pad_arrays(encoded, pad_id).items()}
