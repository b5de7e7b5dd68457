"""The cross-encoder's [CLS]-only last layer against the model's full forward."""

import pytest
import torch

from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.layerwise import cls_logits, reads_cls_only
from ctxsent.tasks.as2_records import As2Record

RECORDS = [
    As2Record("q1", "who built the tower?", "Doyle built it in 1901.", 1, "", "It is tall."),
    As2Record("q1", "who built the tower?", "It is tall.", 0, "Doyle built it.", ""),
    As2Record("q2", "how tall is it?", "It is 31 metres tall, white with a red band.", 1),
]


@pytest.mark.parametrize("contextual", [False, True])
def test_cls_shortcut_matches_full_forward_on_padded_batches(tiny_bert, contextual):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=contextual)
    model = ranker.model.eval()
    features = ranker.features(RECORDS)
    assert reads_cls_only(model) and not features["attention_mask"].all()  # padding present
    with torch.no_grad():
        full = model(**features).logits[:, 0]
        torch.testing.assert_close(cls_logits(model, features), full, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(ranker(features), full, rtol=1e-5, atol=1e-6)


def test_cls_shortcut_gives_the_full_forwards_gradients(tiny_bert):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert))
    model = ranker.model.train()
    for module in model.modules():  # dropout off, so both passes are deterministic
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    model.config.attention_probs_dropout_prob = 0.0
    features = ranker.features(RECORDS)

    def grads(logits):
        model.zero_grad()
        logits.sum().backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    full = grads(model(**features).logits[:, 0])
    short = grads(cls_logits(model, features))
    assert full.keys() == short.keys()
    for name in full:
        torch.testing.assert_close(short[name], full[name], rtol=1e-4, atol=1e-6, msg=name)


def test_other_heads_take_the_full_forward(tiny_bert):
    from transformers import AutoModel

    assert not reads_cls_only(AutoModel.from_pretrained(str(tiny_bert)))
