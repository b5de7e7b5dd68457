"""Every export path is exact or refused: parity of each exported model with ours.

Unit tests use tiny random models; the integration tests use the real MiniLM on WikiQA
sentences (cosine > 0.9999 per text, as well as close values).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ctxsent.errors import InputError
from ctxsent.export import (
    export_cross_encoder,
    export_model,
    export_onnx,
    export_sentence_transformer,
)
from ctxsent.models.cross_thought import CrossThoughtRanker
from ctxsent.onnx_runtime import OnnxRanker, load_onnx

#: Ordinary text, a literal "[CLS]", accents, and texts longer than the tiny max_length (24).
TEXTS = [
    "the lamp is lit at dusk.",
    "ships pass the rocky island at night",
    "[CLS] keeper [SEP]",
    "é ü",
    "the harbour board built the lighthouse in 1850 " * 6,
]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def assert_same_embeddings(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.shape == theirs.shape
    assert cosines(ours, theirs).min() > 0.9999
    assert np.allclose(ours, theirs, atol=1e-4)


def sentence_transformer(folder):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu")


def test_cross_thought_exports_exactly_to_sentence_transformers(tiny_cross_thought, tmp_path):
    words_before = tiny_cross_thought.bert.get_input_embeddings().weight.clone()
    folder = export_sentence_transformer(tiny_cross_thought, tmp_path / "st")
    peer = sentence_transformer(folder)
    assert peer.max_seq_length == tiny_cross_thought.config.max_length + 1
    assert_same_embeddings(tiny_cross_thought.encode(TEXTS), peer.encode(TEXTS))
    # the model itself is untouched: the special row lives in the export's copy only
    assert torch.equal(tiny_cross_thought.bert.get_input_embeddings().weight, words_before)


def test_export_model_reads_a_cross_thought_ranker_folder(tiny_cross_thought, tmp_path):
    """The `ctxsent export MODEL --to sentence-transformers` path of a fine-tuned selector:
    it used to load the folder as a mean-pooled HF encoder (cosine 0.46-0.60)."""
    ranker = CrossThoughtRanker(tiny_cross_thought)
    model = ranker.save_pretrained(tmp_path / "ranker")
    export_model(str(model), tmp_path / "st", "sentence-transformers")
    assert_same_embeddings(
        ranker.encode(TEXTS), sentence_transformer(tmp_path / "st").encode(TEXTS)
    )


def test_what_cannot_be_exported_exactly_is_refused_before_writing(
    tiny_bert, tiny_cascade, tmp_path
):
    from ctxsent.models.cross_thought import CrossThoughtConfig, CrossThoughtModel

    config = CrossThoughtConfig(backbone=str(tiny_bert), pretrained=False, num_special=2)
    two_specials = CrossThoughtModel.build(config)
    refusals = [
        (export_sentence_transformer, two_specials, "2 special tokens"),
        (export_sentence_transformer, tiny_cascade, "no exact sentence-transformers"),
        (export_onnx, tiny_cascade, "early exits"),
        (export_onnx, CrossThoughtRanker(two_specials), "takes a cross-encoder"),
        (export_cross_encoder, tiny_cascade, "takes a cross-encoder"),
    ]
    for index, (export, model, message) in enumerate(refusals):
        with pytest.raises(InputError, match=message):
            export(model, tmp_path / str(index))
    assert list(tmp_path.iterdir()) == []


def test_export_model_refuses_a_ranker_folder_as_sentence_transformers(tiny_ranker, tmp_path):
    folder = tiny_ranker.save_pretrained(tmp_path / "ranker")
    with pytest.raises(InputError, match="CrossEncoderRanker has no exact"):
        export_model(str(folder), tmp_path / "st", "sentence-transformers")
    assert not (tmp_path / "st").exists()


# ---- the real MiniLM on WikiQA -------------------------------------------------------------


@pytest.fixture(scope="module")
def wikiqa_pairs(shared_data):
    from ctxsent.tasks.as2_load import load_as2

    records = load_as2(f"wikiqa:{shared_data / 'wikiqa'}", "dev")
    return records[:: len(records) // 40][:40]


@pytest.mark.integration
def test_minilm_sentence_transformers_exports_are_exact(wikiqa_pairs, tmp_path):
    from ctxsent.models.bi_encoder import BiEncoder
    from ctxsent.models.cross_thought import CrossThoughtConfig, CrossThoughtModel

    texts = [r.candidate for r in wikiqa_pairs] + [r.question for r in wikiqa_pairs]
    encoders = {
        "bi-encoder": BiEncoder.from_pretrained(),
        "cross-thought": CrossThoughtModel.build(CrossThoughtConfig(num_special=1)).eval(),
    }
    for name, encoder in encoders.items():
        folder = export_sentence_transformer(encoder, tmp_path / name)
        assert_same_embeddings(encoder.encode(texts), sentence_transformer(folder).encode(texts))


@pytest.mark.integration
def test_minilm_fine_tuned_bi_encoder_exports_exactly(wikiqa_pairs, tmp_path):
    """A saved MiniLM ``bi-encoder`` (weights changed as fine-tuning would) through the
    command: the export's embeddings are ours, not the backbone's."""
    from ctxsent.models.bi_encoder import BiEncoderRanker

    ranker = BiEncoderRanker.from_backbone()
    backbone = ranker.encode([r.candidate for r in wikiqa_pairs])
    with torch.no_grad():
        layer = ranker.encoder.transformer.encoder.layer[-1].output.dense
        layer.weight.mul_(1.5)
    folder = ranker.save_pretrained(tmp_path / "model")
    export_model(str(folder), tmp_path / "st", "sentence-transformers")
    texts = [r.candidate for r in wikiqa_pairs] + [r.question for r in wikiqa_pairs]
    ours = ranker.encode(texts)
    assert cosines(ours[: len(backbone)], backbone).min() < 0.999  # the change shows
    assert_same_embeddings(ours, sentence_transformer(tmp_path / "st").encode(texts))


@pytest.mark.integration
def test_minilm_cross_encoder_and_onnx_exports_are_exact(wikiqa_pairs, tmp_path):
    from sentence_transformers import CrossEncoder

    from ctxsent.models.cross_encoder import CrossEncoderRanker

    torch.manual_seed(0)
    for contextual in (False, True):
        ranker = CrossEncoderRanker.from_backbone(contextual=contextual).eval()
        ranker.precision = "fp32"
        ours = ranker.predict(wikiqa_pairs)
        if contextual:  # three segments; pair models: test_export.py (tiny)
            onnx = OnnxRanker.from_folder(export_onnx(ranker, tmp_path / "onnx"))
            assert np.allclose(onnx.predict(wikiqa_pairs), ours, atol=1e-4)
        else:
            peer = CrossEncoder(str(export_cross_encoder(ranker, tmp_path / "ce")), device="cpu")
            pairs = [(r.question, r.candidate) for r in wikiqa_pairs]
            assert np.allclose(peer.predict(pairs, convert_to_numpy=True), ours, atol=1e-4)


@pytest.mark.integration
def test_minilm_bi_encoder_onnx_export_is_exact_and_int8_close(wikiqa_pairs, tmp_path):
    """The zero-shot MiniLM bi-encoder on WikiQA pairs: the fp32 graph gives its cosines
    (2.4e-7 apart when written); int8 weights move them by 0.032 at most and keep their
    order (Spearman 0.996 with fp32)."""
    from scipy.stats import spearmanr

    from ctxsent.models.bi_encoder import BiEncoderRanker

    ranker = BiEncoderRanker.from_backbone().eval()
    ours = ranker.predict(wikiqa_pairs)
    fp32 = load_onnx(export_onnx(ranker, tmp_path / "fp32"))
    texts = [r.candidate for r in wikiqa_pairs] + [r.question for r in wikiqa_pairs]
    assert_same_embeddings(ranker.encode(texts), fp32.encode(texts))
    assert np.abs(fp32.predict(wikiqa_pairs) - ours).max() < 1e-5
    int8 = load_onnx(export_onnx(ranker, tmp_path / "int8", quantize="int8"))
    int8_scores = int8.predict(wikiqa_pairs)
    assert np.abs(int8_scores - ours).max() < 0.06
    assert spearmanr(int8_scores, ours).statistic > 0.98
