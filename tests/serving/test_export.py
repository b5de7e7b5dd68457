"""Exports load in sentence-transformers and onnxruntime and give the same scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ctxsent.errors import InputError
from ctxsent.export import (
    export_cross_encoder,
    export_onnx,
    export_sentence_transformer,
)
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.onnx_runtime import OnnxBiEncoder, OnnxRanker
from ctxsent.tasks.as2_records import As2Record
from synthetic import spread_attention

TEXTS = ["the lamp is lit at dusk.", "ships pass the rocky island at night", "keeper", "é ü"]
RECORDS = [
    As2Record("q1", "who lit the lamp?", "the keeper lit the lamp at dusk.", 1, "it was dark.", ""),
    As2Record("q1", "who lit the lamp?", "ships pass the island.", 0, "", "the sea was calm."),
    As2Record("q2", "where is it?", "on a rock", 1, "far north", "near the coast"),
]


@pytest.fixture(scope="module")
def pairwise(tiny_bert) -> CrossEncoderRanker:
    torch.manual_seed(1)
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=64)
    spread_attention(ranker.model.bert)  # rankings that are not ties
    ranker.precision = "fp32"
    return ranker.eval()


def test_sentence_transformers_encoder_parity(tiny_encoder, tmp_path):
    from sentence_transformers import SentenceTransformer

    folder = export_sentence_transformer(tiny_encoder, tmp_path / "st")
    peer = SentenceTransformer(str(folder), device="cpu")
    assert peer.max_seq_length == tiny_encoder.max_length
    ours = tiny_encoder.encode(TEXTS)
    theirs = peer.encode(TEXTS, convert_to_numpy=True)
    assert np.allclose(ours, theirs, atol=1e-5)
    assert np.allclose(np.linalg.norm(theirs, axis=1), 1.0, atol=1e-5)


def test_a_saved_bi_encoder_ranker_exports_exactly(tiny_bert, tmp_path):
    """The command's path: a fine-tuned ``bi-encoder`` folder, its own max_length (texts
    longer are truncated alike), cosine rankings preserved, in sentence-transformers and
    ONNX; CrossEncoder export refuses it."""
    from sentence_transformers import SentenceTransformer

    from ctxsent.export import export_model
    from ctxsent.models.bi_encoder import BiEncoderRanker

    torch.manual_seed(2)
    ranker = BiEncoderRanker.from_backbone(str(tiny_bert), max_length=12)
    spread_attention(ranker.encoder.transformer)  # not the backbone's weights any more
    folder = ranker.save_pretrained(tmp_path / "model")
    export_model(str(folder), tmp_path / "st", "sentence-transformers")
    peer = SentenceTransformer(str(tmp_path / "st"), device="cpu")
    assert peer.max_seq_length == 12
    texts = [*TEXTS, "the harbour board built the lighthouse in 1850 " * 4, "[CLS] x [SEP]"]
    assert np.allclose(ranker.encode(texts), peer.encode(texts), atol=1e-5)
    q, c = peer.encode([r.question for r in RECORDS]), peer.encode([r.candidate for r in RECORDS])
    assert np.allclose(ranker.predict(RECORDS), (q * c).sum(axis=1), atol=1e-5)
    with pytest.raises(InputError, match="takes a cross-encoder ranker"):
        export_model(str(folder), tmp_path / "ce", "cross-encoder")
    export_model(str(folder), tmp_path / "onnx", "onnx")
    onnx_ranker = OnnxBiEncoder.from_folder(tmp_path / "onnx")
    assert np.allclose(onnx_ranker.encode(texts), ranker.encode(texts), atol=1e-5)


def test_cross_encoder_parity_and_refusals(pairwise, tiny_ranker, tmp_path):
    from sentence_transformers import CrossEncoder

    folder = export_cross_encoder(pairwise, tmp_path / "ce")
    peer = CrossEncoder(str(folder), device="cpu")
    theirs = peer.predict([(r.question, r.candidate) for r in RECORDS], convert_to_numpy=True)
    assert np.allclose(pairwise.predict(RECORDS), theirs, atol=1e-5)
    assert not hasattr(pairwise.model.config, "sentence_transformers")  # the ranker is untouched
    with pytest.raises(InputError, match="contextual"):
        export_cross_encoder(tiny_ranker, tmp_path / "contextual")
    assert not (tmp_path / "contextual").exists()


@pytest.mark.parametrize("contextual", [False, True])
def test_onnx_parity_for_any_batch_and_length(pairwise, tiny_ranker, tmp_path, contextual):
    ranker = tiny_ranker if contextual else pairwise
    folder = export_onnx(ranker, tmp_path / "onnx")
    onnx_ranker = OnnxRanker.from_folder(folder)
    assert onnx_ranker.contextual == contextual
    long = As2Record("q3", "why? " * 40, "because " * 80, 0, "x " * 30, "")  # truncated
    records = RECORDS * 5 + [long]
    for batch_size in (1, 7, 64):
        ours = ranker.predict(records, batch_size=batch_size)
        assert np.allclose(onnx_ranker.predict(records, batch_size), ours, atol=1e-4)
    ranked = onnx_ranker.rank("who lit the lamp?", ["ships pass.", "the keeper lit it."])
    assert [r.index for r in ranked] == [
        r.index for r in ranker.rank("who lit the lamp?", ["ships pass.", "the keeper lit it."])
    ]
