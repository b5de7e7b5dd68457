"""Running a BERT-style encoder layer by layer.

Two users: the Cascade Transformer, which scores partial encodings after chosen
layers (:mod:`ctxsent.models.cascade`), and the cross-encoder's [CLS] read-out,
which skips the work of the last layer that its classifier never reads.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def embed(encoder: nn.Module, features: dict[str, torch.Tensor]) -> torch.Tensor:
    """The embedding layer's output (word + position + segment) for a padded batch."""
    return encoder.embeddings(
        input_ids=features["input_ids"], token_type_ids=features.get("token_type_ids")
    )


def run_layers(
    encoder: nn.Module, hidden: torch.Tensor, attention_mask: torch.Tensor, start: int, stop: int
) -> torch.Tensor:
    """Run transformer layers ``start+1 .. stop`` (1-based) of ``encoder`` over ``hidden``."""
    from transformers.masking_utils import create_bidirectional_mask

    mask = create_bidirectional_mask(
        config=encoder.config, inputs_embeds=hidden, attention_mask=attention_mask
    )
    for layer in encoder.encoder.layer[start:stop]:
        hidden = layer(hidden, attention_mask=mask)
        hidden = hidden[0] if isinstance(hidden, tuple) else hidden
    return hidden


def reads_cls_only(model: nn.Module) -> bool:
    """Whether ``model`` is a BERT sequence classifier (pooler over [CLS], then a linear layer).

    Only then is :func:`cls_logits` exact; other heads take the full forward.
    """
    from transformers import BertForSequenceClassification

    return isinstance(model, BertForSequenceClassification) and model.bert.pooler is not None


def cls_logits(model: nn.Module, features: dict[str, torch.Tensor]) -> torch.Tensor:
    """The classifier's first logit, computing only the [CLS] position in the last layer.

    The head reads the last layer's [CLS] state alone, so that layer needs keys and values
    for every token but queries, attention output and feed-forward for [CLS] only: about
    5/6 of the last layer's arithmetic is skipped and the logits are unchanged (up to
    float rounding). Dropout follows ``model.training`` as in the full forward.
    """
    base = model.bert
    mask = features["attention_mask"]
    hidden = run_layers(base, embed(base, features), mask, 0, len(base.encoder.layer) - 1)
    cls = _cls_only_layer(base.encoder.layer[-1], hidden, mask, model.training)
    return model.classifier(model.dropout(base.pooler(cls)))[:, 0]


def _cls_only_layer(
    layer: nn.Module, hidden: torch.Tensor, mask: torch.Tensor, training: bool
) -> torch.Tensor:
    """One BertLayer's output at position 0 only: (batch, 1, width)."""
    attention = layer.attention.self
    batch, length, width = hidden.shape
    heads, size = attention.num_attention_heads, attention.attention_head_size

    def split(x: torch.Tensor) -> torch.Tensor:
        return x.view(batch, x.shape[1], heads, size).transpose(1, 2)

    context = F.scaled_dot_product_attention(
        split(attention.query(hidden[:, :1])),
        split(attention.key(hidden)),
        split(attention.value(hidden)),
        attn_mask=mask[:, None, None, :].bool(),
        dropout_p=attention.dropout.p if training else 0.0,
        scale=attention.scaling,
    )
    context = context.transpose(1, 2).reshape(batch, 1, width)
    attended = layer.attention.output(context, hidden[:, :1])
    return layer.output(layer.intermediate(attended), attended)
