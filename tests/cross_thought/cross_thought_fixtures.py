"""Tiny random Cross-Thought models and a synthetic corpus for the Cross-Thought tests."""

from __future__ import annotations

import torch

from ctxsent.corpus.document import Document
from ctxsent.models.cross_thought import CrossThoughtConfig, CrossThoughtModel

TINY_BERT = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64)


def tiny_model(num_special: int = 2, cross_sequence: bool = True, **config) -> CrossThoughtModel:
    """A 2-layer, width-32 random Cross-Thought with MiniLM's tokenizer, dropout off."""
    torch.manual_seed(0)
    settings = dict(pretrained=False, num_special=num_special, cross_sequence=cross_sequence)
    model = CrossThoughtModel.build(CrossThoughtConfig(**settings, **config), TINY_BERT)
    return model.eval()


def synthetic_documents(count: int = 4, paragraphs: int = 6) -> list[Document]:
    """Documents about numbered towns; each paragraph repeats its town's name."""
    return [
        Document(
            str(d),
            f"Town {d}",
            [
                [f"Town {d} has a harbour number {p}.", f"The lighthouse of town {d} is old."]
                for p in range(paragraphs)
            ],
        )
        for d in range(count)
    ]
