"""Fixtures for model tests: a tiny 6-layer cascade."""

import pytest
import torch

from ctxsent.models.cascade import CascadeRanker


@pytest.fixture
def cascade(tiny_bert, tmp_path_factory):
    """A 6-layer tiny cascade (exits 2..6) built from the 2-layer tiny BERT's tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = tmp_path_factory.mktemp("tiny6")
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=6,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(folder)
    return CascadeRanker.from_backbone(str(folder), contextual=True, max_length=64)
