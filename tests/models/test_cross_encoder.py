import json

import numpy as np
import pytest
import torch

import ctxsent
from ctxsent.errors import InputError, ModelFolderError
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.tasks.as2_records import As2Record

RECORDS = [
    As2Record("q1", "who built the tower?", "Doyle built it.", 1, "", "It is tall."),
    As2Record("q1", "who built the tower?", "It is tall.", 0, "Doyle built it.", ""),
    As2Record("q2", "how tall is it?", "It is 31 metres tall, white with a red band.", 1),
]


def test_contextual_ranker_grows_segment_table_keeping_pretrained_rows(tiny_bert):
    pairwise = CrossEncoderRanker.from_backbone(str(tiny_bert))
    contextual = CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=True)
    old = pairwise.model.bert.embeddings.token_type_embeddings.weight
    new = contextual.model.bert.embeddings.token_type_embeddings.weight
    assert new.shape[0] == 3 and contextual.model.config.type_vocab_size == 3
    torch.testing.assert_close(new[:2], old[:2])
    torch.testing.assert_close(new[2], old[1])
    assert contextual.features(RECORDS)["token_type_ids"].max() == 2
    assert pairwise.features(RECORDS)["token_type_ids"].max() == 1


def test_context_changes_contextual_scores_only(tiny_bert):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=True)
    bare = [As2Record(r.question_id, r.question, r.candidate, r.label) for r in RECORDS]
    assert not np.allclose(ranker.predict(RECORDS), ranker.predict(bare))
    ranker.with_context(False)
    np.testing.assert_allclose(ranker.predict(RECORDS), ranker.predict(bare))


def test_predict_is_order_independent_of_batching(tiny_bert):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert))
    one_by_one = ranker.predict(RECORDS, batch_size=1)
    batched = ranker.predict(RECORDS[::-1], batch_size=8)[::-1]
    np.testing.assert_allclose(one_by_one, batched, rtol=1e-4, atol=1e-5)


def test_save_and_load_round_trip(tiny_bert, tmp_path):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=True, max_length=64)
    ranker.save_pretrained(tmp_path / "model")
    assert {p.name for p in (tmp_path / "model").iterdir()} >= {
        "ctxsent.json",
        "model.safetensors",
        "tokenizer.json",
    }
    assert not list(tmp_path.glob(".*tmp"))  # the staging folder is gone
    loaded = ctxsent.load(tmp_path / "model")
    assert isinstance(loaded, CrossEncoderRanker)
    assert loaded.contextual and loaded.config.max_length == 64
    # the untrained head's logits are ~3e-5: a copy's kernels may differ in the last bits
    np.testing.assert_allclose(
        loaded.predict(RECORDS), ranker.predict(RECORDS), rtol=1e-4, atol=1e-8
    )


def test_rank_orders_by_score_and_keeps_context(tiny_bert):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=True)
    candidates = ["a b c", "d e f", "g h i"]
    context = [("", "d e f"), ("a b c", "g h i"), ("d e f", "")]
    ranked = ranker.rank("question?", candidates, context, top_k=2)
    assert len(ranked) == 2 and ranked[0].score >= ranked[1].score
    assert ranked[0].candidate == candidates[ranked[0].index]
    assert (ranked[0].previous, ranked[0].next) == context[ranked[0].index]


def test_rank_document_uses_neighbouring_sentences(tiny_bert):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=True)
    ranked = ranker.rank_document("q?", "First one here. Second one here. Third one here.", None)
    by_index = {r.index: r for r in ranked}
    assert by_index[1].previous == "First one here." and by_index[1].next == "Third one here."
    assert by_index[0].previous == "" and by_index[2].next == ""


@pytest.mark.parametrize(
    ("question", "document", "message"),
    [("  ", "A sentence.", "field 'question'"), ("q?", "   ", "no sentences")],
)
def test_rank_rejects_empty_input(tiny_bert, question, document, message):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert))
    with pytest.raises(InputError, match=message):
        ranker.rank_document(question, document)


def test_load_rejects_folders_that_are_not_ctxsent_models(tiny_bert, tmp_path):
    with pytest.raises(ModelFolderError, match="not a ctxsent model folder"):
        ctxsent.load(tiny_bert)  # a plain HF folder
    with pytest.raises(ModelFolderError, match="not a folder"):
        ctxsent.load(tmp_path / "missing")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "ctxsent.json").write_text("{not json")
    with pytest.raises(ModelFolderError, match="corrupt manifest"):
        ctxsent.load(broken)
    (broken / "ctxsent.json").write_text(json.dumps({"kind": "cross-encoder", "format": 1}))
    with pytest.raises(ModelFolderError, match="no config object"):
        ctxsent.load(broken)
    manifest = {"kind": "cross-encoder", "format": 1, "config": {}}
    (broken / "ctxsent.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFolderError, match="no safetensors"):
        ctxsent.load(broken)
    (broken / "model.safetensors").write_bytes(b"garbage")
    (broken / "ctxsent.json").write_text(json.dumps({**manifest, "kind": "teapot"}))
    with pytest.raises(ModelFolderError, match="unknown model kind 'teapot'"):
        ctxsent.load(broken)


def test_int8_scores_track_fp32_and_follow_weight_updates(tiny_bert):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert))
    fp32 = ranker.predict(RECORDS)
    ranker.precision = "int8"
    int8 = ranker.predict(RECORDS)
    assert not np.array_equal(int8, fp32)
    np.testing.assert_allclose(int8, fp32, atol=0.05)
    with torch.no_grad():
        ranker.model.classifier.bias.add_(1.0)  # a training step would change weights in place
    np.testing.assert_allclose(ranker.predict(RECORDS), int8 + 1.0, atol=1e-5)
