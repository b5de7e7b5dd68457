"""BiEncoder: order, padding and normalisation on a tiny random model; parity with
sentence-transformers on the real all-MiniLM-L6-v2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ctxsent.models.backbones import resolve_backbone
from ctxsent.models.bi_encoder import BiEncoder

TINY = {
    "num_hidden_layers": 2,
    "hidden_size": 32,
    "num_attention_heads": 2,
    "intermediate_size": 64,
}
TEXTS = [
    "A man is playing a guitar.",
    "",
    "Short.",
    "A considerably longer sentence, so that the batch needs padding for the others.",
    "A man is playing a guitar.",
]


@pytest.fixture(scope="module")
def tiny() -> BiEncoder:
    return BiEncoder.random_init(seed=0, **TINY)


def test_encode_restores_input_order_and_ignores_padding(tiny: BiEncoder) -> None:
    batched = tiny.encode(TEXTS, batch_size=4)
    one_by_one = np.concatenate([tiny.encode([text]) for text in TEXTS])
    assert batched.shape == (5, 32) and batched.dtype == np.float32
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    np.testing.assert_allclose(batched[0], batched[4], atol=1e-6)


def test_normalisation_is_optional(tiny: BiEncoder) -> None:
    np.testing.assert_allclose(np.linalg.norm(tiny.encode(TEXTS), axis=1), 1.0, atol=1e-5)
    raw = tiny.encode(TEXTS, normalize=False)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)


def test_encode_restores_the_training_flag(tiny: BiEncoder) -> None:
    tiny.train()
    tiny.encode(["x"])
    assert tiny.training
    tiny.eval()
    assert tiny.encode([]).shape == (0, 32)


def test_random_init_is_seeded() -> None:
    same = BiEncoder.random_init(seed=0, **TINY).encode(TEXTS[:1])
    other = BiEncoder.random_init(seed=1, **TINY).encode(TEXTS[:1])
    np.testing.assert_allclose(BiEncoder.random_init(seed=0, **TINY).encode(TEXTS[:1]), same)
    assert not np.allclose(same, other)


def test_from_pretrained_folder_without_sentence_transformers_config(tiny_bert: Path) -> None:
    encoder = BiEncoder.from_pretrained(str(tiny_bert))
    assert encoder.max_length == 256 and encoder.dim == 32  # min(tokenizer 512, positions 256)
    assert encoder.encode(["hello"]).shape == (1, 32)


@pytest.mark.integration
def test_parity_with_sentence_transformers_on_minilm() -> None:
    from sentence_transformers import SentenceTransformer

    texts = [*TEXTS, "word " * 400]  # the last one is truncated at 256 tokens by both
    ours = BiEncoder.from_pretrained("all-MiniLM-L6-v2").encode(texts, batch_size=3)
    theirs = SentenceTransformer(resolve_backbone("all-MiniLM-L6-v2")).encode(texts)
    cosine = np.sum(ours * theirs, axis=1) / np.linalg.norm(theirs, axis=1)
    assert cosine.min() > 0.999
