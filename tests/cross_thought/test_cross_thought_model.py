"""The Cross-Thought encoder: Eq. 1-7, positions, encode(), saving and loading."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from cross_thought_fixtures import tiny_model

import ctxsent
from ctxsent.errors import InputError, ModelFolderError
from ctxsent.models.cross_thought import (
    CrossThoughtConfig,
    CrossThoughtModel,
    CrossThoughtRanker,
    candidate_log_weights,
    selection_log_probs,
)
from ctxsent.saving import config_from

TEXTS = ["the lighthouse keeper lit the lamp", "a ship", "stones and sea water at night"]


def test_encode_concatenates_the_special_tokens_and_ignores_batching(model):
    batched = model.encode(TEXTS, batch_size=2)
    single = np.concatenate([model.encode([t]) for t in TEXTS])
    assert batched.shape == (3, 2 * 32)
    np.testing.assert_allclose(batched, single, atol=1e-5)
    special = model.encode_special(TEXTS)
    np.testing.assert_allclose(batched[:, 32:], special[:, 1].numpy(), atol=1e-6)


def test_chunked_embed_matches_one_batch_in_input_order_with_gradients(model):
    model.eval()  # no dropout: the chunked and the padded batch must agree
    texts = TEXTS + ["a", "the keeper of the light on the rocks at the end of the pier"]
    whole = model.embed(texts)
    chunked = model.embed(texts, batch_size=2)
    torch.testing.assert_close(chunked, whole, atol=1e-5, rtol=1e-4)
    chunked.sum().backward()
    assert model.special.grad is not None and model.special.grad.abs().sum() > 0


def test_special_positions_are_fixed_and_word_positions_shift(model):
    ids = model.tokenize(["the lighthouse keeper"])
    base = model.encode_tokens(ids["input_ids"], ids["attention_mask"])
    shifted = model.encode_tokens(ids["input_ids"], ids["attention_mask"], torch.tensor([7]))
    assert not torch.allclose(base, shifted)  # the words moved, so every state changes
    table = model.bert.embeddings.position_embeddings
    assert table.num_embeddings == model.config.num_special + model.config.word_positions
    too_long = torch.ones(1, model.config.word_positions + 1, dtype=torch.long)
    with pytest.raises(InputError, match="word positions"):
        model.encode_tokens(too_long, too_long)


def test_cross_sequence_alpha_is_eq7_and_masks_padded_sequences(model):
    embeddings = torch.randn(2, 4, 2, 32)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    fused, alpha = model.cross_sequence(embeddings, mask)
    assert fused.shape == (2, 4, 2, 32) and alpha.shape == (2, 2, 2, 4, 4)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, 2, 2, 4))
    assert alpha[1, :, :, :, 2:].abs().max() < 1e-6
    logits = model.attention_logits(embeddings[0], embeddings[0])  # (4, N*heads, 4)
    expected = alpha[0].reshape(4, 4, 4).permute(1, 0, 2)  # (query, N*heads, key)
    torch.testing.assert_close(logits.softmax(-1), expected)


def test_candidate_weights_follow_eq10_on_a_hand_computed_example():
    # head 0: exp(logits) self 6, candidates 3, 1 -> alpha[0] = [6, 3, 1] / 10
    # head 1: exp(logits) self 1, candidates 1, 2 -> alpha[0] = [1, 1, 2] / 4
    # candidates' mean weight: (0.3 + 0.25) / 2 = 0.275 and (0.1 + 0.5) / 2 = 0.3
    logits = torch.tensor([[math.log(3), 0.0], [0.0, math.log(2)]], dtype=torch.float64)
    own = torch.tensor([math.log(6), 0.0], dtype=torch.float64)
    weights = candidate_log_weights(logits, own).exp()
    torch.testing.assert_close(weights, torch.tensor([0.275, 0.3], dtype=torch.float64))
    # leaving the question out of the softmax flips the top candidate: (3/4 + 1/3) / 2 first
    without = candidate_log_weights(logits).exp()
    torch.testing.assert_close(without, torch.tensor([13 / 24, 11 / 24], dtype=torch.float64))


def test_selection_weights_are_row_0_of_the_cross_sequence_attention(model):
    question, candidates = torch.randn(1, 2, 32), torch.randn(5, 2, 32)
    log_probs = selection_log_probs(model, question, candidates)
    # Eq. 3-7 run over F = [question; candidates]: alpha (1, N, heads, 6, 6)
    _, alpha = model.cross_sequence(torch.cat([question, candidates])[None])
    expected = alpha[0, :, :, 0, 1:].mean(dim=(0, 1))  # alpha[0][m], mean over heads
    torch.testing.assert_close(log_probs[0].exp(), expected)
    assert log_probs.exp().sum() < 1  # the question keeps some weight on itself


def test_mlm_baseline_has_no_cross_sequence_layers():
    mlm = tiny_model(num_special=1, cross_sequence=False)
    assert len(mlm.cross) == 0
    with pytest.raises(InputError, match="without cross-sequence"):
        mlm.attention_logits(torch.randn(1, 1, 32), torch.randn(2, 1, 32))
    log_probs = selection_log_probs(mlm, torch.randn(1, 1, 32), torch.randn(3, 1, 32))
    assert torch.isclose(log_probs.exp().sum(), torch.tensor(1.0))


def test_save_and_load_round_trip(model, tmp_path):
    folder = model.save_pretrained(tmp_path / "ct")
    manifest = json.loads((folder / "ctxsent.json").read_text())
    assert manifest["kind"] == "cross-thought" and manifest["config"]["num_special"] == 2
    loaded = ctxsent.load(folder)
    assert isinstance(loaded, CrossThoughtModel)
    np.testing.assert_allclose(loaded.encode(TEXTS), model.encode(TEXTS), atol=1e-6)
    ranker_folder = CrossThoughtRanker(model).save_pretrained(tmp_path / "ranker")
    assert isinstance(ctxsent.load(ranker_folder), CrossThoughtRanker)


def test_broken_folders_are_refused(model, tmp_path):
    folder = model.save_pretrained(tmp_path / "ct")
    (folder / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ModelFolderError, match="cannot load"):
        CrossThoughtModel.from_pretrained(folder)
    with pytest.raises(InputError, match="field 'num_special': must be >= 1"):
        CrossThoughtConfig(num_special=0)
    with pytest.raises(ModelFolderError, match="unknown config fields"):
        config_from(CrossThoughtConfig, {"config": {"num_special": 1, "colour": "red"}}, folder)


def test_init_from_a_bert_folder_copies_weights_and_positions(tiny_bert):
    from transformers import BertModel

    source = BertModel.from_pretrained(tiny_bert)
    model = CrossThoughtModel.build(CrossThoughtConfig(backbone=str(tiny_bert), num_special=3))
    words = model.bert.embeddings.word_embeddings.weight
    torch.testing.assert_close(words, source.embeddings.word_embeddings.weight)
    old = source.embeddings.position_embeddings.weight  # 256 rows
    new = model.bert.embeddings.position_embeddings.weight
    torch.testing.assert_close(new[:3], old[0].expand(3, -1))  # specials: [CLS] position
    torch.testing.assert_close(new[3 : 3 + 255], old[1:256])  # word p: backbone p + 1
    cls = words[model.tokenizer.cls_token_id]
    torch.testing.assert_close(model.special.data[0], cls)  # N = 1 starts as the backbone
    perturbation = model.special.data[1:] - cls
    assert 0.005 < perturbation.std() < 0.05  # each further token: [CLS] + its own N(0, 0.02)


def test_special_tokens_from_a_bert_folder_give_distinct_sentence_embeddings(tiny_bert):
    config = CrossThoughtConfig(backbone=str(tiny_bert), num_special=3, dropout=0.0)
    model = CrossThoughtModel.build(config, seed=1)
    states = model.encode_special(["the keeper lit the lamp.", "a storm came."])  # (2, 3, d)
    for first, second in [(0, 1), (0, 2), (1, 2)]:
        gap = (states[:, first] - states[:, second]).abs().amax(dim=-1)
        assert (gap > 1e-2).all(), (first, second, gap)
    again = CrossThoughtModel.build(config, seed=1)
    torch.testing.assert_close(again.special, model.special, rtol=0, atol=0)  # seeded


def test_ranker_caches_candidates_and_scores_per_question(model):
    from ctxsent.tasks.as2_records import As2Record

    ranker = CrossThoughtRanker(model)
    records = [
        As2Record("q1", "where is the lamp?", c, int(i == 0))
        for i, c in enumerate(["the lamp is on top", "a ship", "the sea"])
    ] + [As2Record("q2", "who lit it?", "a ship", 1), As2Record("q2", "who lit it?", "x", 0)]
    scores = ranker.predict(records)
    assert set(ranker.cache) == {"the lamp is on top", "a ship", "the sea", "x"}
    embedded = model.encode_special([records[0].question] + [r.candidate for r in records[:3]])
    alone = selection_log_probs(model, embedded[:1], embedded[1:])[0].exp()
    np.testing.assert_allclose(scores[:3], alone.detach().numpy(), atol=1e-6)
    ranked = ranker.rank("where is the lamp?", ["the lamp is on top", "a ship", "the sea"])
    # the question is encoded alone here and beside "who lit it?" above: equal up to padding
    expected = sorted(scores[:3], reverse=True)
    assert [r.score for r in ranked] == pytest.approx(expected, abs=1e-6)


def test_ranker_scores_two_questions_of_the_same_text_apart(model):
    from ctxsent.tasks.as2_records import As2Record

    ranker = CrossThoughtRanker(model)
    text = "where is the lamp?"
    first = [As2Record("a", text, "the lamp is on top", 1), As2Record("a", text, "a ship", 0)]
    second = [As2Record("b", text, "the sea", 1), As2Record("b", text, "x", 0)]
    together = ranker.predict(first + second)
    apart = np.concatenate([ranker.predict(first), ranker.predict(second)])
    np.testing.assert_allclose(together, apart, atol=1e-6)
