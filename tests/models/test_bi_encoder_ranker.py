"""The saved bi-encoder kind: one model that ranks by cosine and encodes sentences."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import ctxsent
from ctxsent.errors import InputError, ModelFolderError
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.protocols import Encoder, Ranker
from ctxsent.tasks.as2_records import As2Record

RECORDS = [
    As2Record("q1", "who lit the lamp?", "the keeper lit the lamp at dusk.", 1, "it was dark."),
    As2Record("q1", "who lit the lamp?", "ships pass the rocky island.", 0),
    As2Record("q2", "where is it?", "on a rock " * 30, 1),  # longer than max_length
    As2Record("q2", "where is it?", "who lit the lamp?", 0),  # a candidate that is a question
]


@pytest.fixture
def ranker(tiny_bert) -> BiEncoderRanker:
    return BiEncoderRanker.from_backbone(str(tiny_bert), max_length=16).eval()


def test_it_is_a_ranker_and_an_encoder_scoring_by_cosine(ranker):
    assert isinstance(ranker, Ranker) and isinstance(ranker, Encoder)
    assert not ranker.contextual and ranker.kind == "bi-encoder"
    texts = [r.question for r in RECORDS] + [r.candidate for r in RECORDS]
    vectors = ranker.encode(texts)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    raw = ranker.encode(texts, normalize=False, task_name="ignored")
    assert np.allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), vectors, atol=1e-6)
    cosines = (vectors[:4] * vectors[4:]).sum(axis=1)
    assert np.allclose(ranker.predict(RECORDS, batch_size=3), cosines, atol=1e-6)
    with torch.inference_mode():  # the training path computes the same scores
        assert np.allclose(ranker(ranker.features(RECORDS)).numpy(), cosines, atol=1e-6)


def test_save_and_load_round_trip(ranker, tmp_path):
    folder = ranker.save_pretrained(tmp_path / "model")
    loaded = ctxsent.load(folder)
    assert type(loaded) is BiEncoderRanker and loaded.config == ranker.config
    assert loaded.encoder.max_length == 16
    assert np.array_equal(loaded.predict(RECORDS), ranker.predict(RECORDS))
    manifest = json.loads((folder / "ctxsent.json").read_text())
    assert manifest["kind"] == "bi-encoder" and manifest["config"]["max_length"] == 16


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"contextual": True}, r"unknown config fields \['contextual'\]"),
        ({"max_length": "long"}, "field 'max_length': expected int"),
        ({"max_length": 1}, "field 'max_length'"),
    ],
)
def test_a_bad_manifest_is_refused(ranker, tmp_path, change, message):
    folder = ranker.save_pretrained(tmp_path / "model")
    manifest = json.loads((folder / "ctxsent.json").read_text())
    manifest["config"].update(change)
    (folder / "ctxsent.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFolderError, match=message):
        ctxsent.load(folder)


def test_contextual_input_is_refused_and_the_unread_pooler_is_frozen(ranker):
    with pytest.raises(InputError, match="embeds each candidate alone"):
        ranker.with_context(True)
    assert ranker.with_context(False) is ranker
    frozen = [name for name, p in ranker.named_parameters() if not p.requires_grad]
    assert frozen and all(".pooler." in name for name in frozen)
    assert ranker.head_parameter_names() == []


def test_max_length_is_one_setting(ranker):
    ranker.max_length = 8
    assert ranker.config.max_length == ranker.encoder.max_length == 8
    assert ranker.features(RECORDS)["chunks"][0]["input_ids"].shape[1] == 8
