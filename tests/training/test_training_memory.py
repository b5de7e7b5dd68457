"""Training memory: a bi-encoder step checkpoints its long chunks without changing its
result, and the free heap goes back to the operating system after each step."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from ctxsent.models import bi_encoder
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.tasks.as2_records import As2Record
from ctxsent.training.as2_finetune import _malloc_trim, release_free_heap

#: 30 distinct texts: a chunk of the 16 longest (over 40 tokens) and one of short ones.
RECORDS = [
    As2Record(f"q{i}", f"who lit lamp {i}?", text, label)
    for i in range(10)
    for text, label in ((f"keeper {i} lit it.", 1), (f"ships pass island {i} " * (i + 8), 0))
]


def _step(ranker: BiEncoderRanker, features: dict) -> tuple[dict, torch.Tensor, int]:
    """Gradients, RNG state after the step, and tensors the autograd graph kept."""
    torch.manual_seed(7)  # the same dropout masks for both runs
    ranker.zero_grad(set_to_none=True)
    kept = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: kept.append(t) or t, lambda t: t):
        scores = ranker(features)
    (scores * torch.linspace(-1, 1, len(scores))).sum().backward()
    grads = {name: p.grad.clone() for name, p in ranker.named_parameters() if p.grad is not None}
    return grads, torch.get_rng_state(), len(kept)


def test_checkpointed_long_chunks_keep_fewer_tensors_and_give_identical_gradients(
    tiny_bert, monkeypatch
):
    ranker = BiEncoderRanker.from_backbone(str(tiny_bert), max_length=64).train()
    features = ranker.features(RECORDS)
    short, long = sorted(chunk["input_ids"].shape[1] for chunk in features["chunks"])
    monkeypatch.setattr(bi_encoder, "CHECKPOINT_LENGTH", long)
    plain = _step(ranker, features)
    monkeypatch.setattr(bi_encoder, "CHECKPOINT_LENGTH", short)  # the long chunk only
    checkpointed = _step(ranker, features)
    assert checkpointed[2] < 0.75 * plain[2]  # the long chunk's layers kept only their inputs
    assert plain[0].keys() == checkpointed[0].keys() and len(plain[0]) > 10
    assert all(torch.equal(plain[0][name], checkpointed[0][name]) for name in plain[0])
    assert torch.equal(plain[1], checkpointed[1])  # dropout goes on from the same RNG state
    with torch.no_grad():  # evaluation keeps nothing to recompute: no checkpointing
        assert _layers_checkpointing(ranker) == {False}
        ranker(features)
    assert _layers_checkpointing(ranker) == {False}  # switched off after each chunk


def _layers_checkpointing(ranker: BiEncoderRanker) -> set[bool]:
    modules = ranker.encoder.transformer.modules()
    return {m.gradient_checkpointing for m in modules if hasattr(m, "gradient_checkpointing")}


def _resident_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024


@pytest.mark.skipif(_malloc_trim() is None, reason="glibc only")
def test_release_free_heap_returns_freed_heap_memory():
    blocks = [bytearray(64 * 1024) for _ in range(3200)]  # 200 MB below the mmap threshold
    pin = bytearray(64 * 1024)  # allocated last: the heap's top stays in use
    del blocks[:]  # freed, yet resident in the heap
    before = _resident_mb()
    release_free_heap()
    assert before - _resident_mb() > 150
    del pin
