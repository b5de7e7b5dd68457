"""Tiny random backbones for unit tests (2 layers, width 32) with the MiniLM tokenizer."""

from __future__ import annotations

from pathlib import Path


def make_tiny_bert(folder: Path, type_vocab_size: int = 2) -> Path:
    """Save a randomly initialised 2-layer BERT (hidden 32) with MiniLM's WordPiece tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from ctxsent.models.backbones import resolve_backbone

    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        type_vocab_size=type_vocab_size,
    )
    BertModel(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(resolve_backbone("minilm")).save_pretrained(folder)
    return folder
