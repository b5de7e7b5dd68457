"""ONNX exports of bi-encoders and cross-encoders, int8 quantisation, and the torch-free
runtime (:mod:`ctxsent.onnx_runtime`): same tokens as the HF tokenizer, same scores as
the torch model, in a process where torch and transformers cannot be imported."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict

import numpy as np
import onnx
import pytest
import torch
import typer
from typer.testing import CliRunner

import ctxsent
from ctxsent.cli.export import export as export_command
from ctxsent.errors import InputError
from ctxsent.export import export_onnx
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.segments import encode_segments
from ctxsent.onnx_runtime import (
    ONNX_CONFIG,
    FastTokenizer,
    OnnxBiEncoder,
    OnnxRanker,
    load_onnx,
)
from ctxsent.tasks.as2_records import As2Record
from synthetic import spread_attention

#: Ordinary text, literal special tokens, accents, CJK, a blank, texts past max_length (12).
TEXTS = [
    "the lamp is lit at dusk.",
    "ships pass the rocky island at night",
    "[CLS] keeper [SEP]",
    "é ü Straße",
    "灯塔 keeper",
    "",
    "the harbour board built the lighthouse in 1850 " * 4,
    "who lit the lamp?",
    "on a rock",
]
RECORDS = [
    As2Record("q1", "who lit the lamp?", "the keeper lit the lamp at dusk.", 1, "it was dark.", ""),
    As2Record("q1", "who lit the lamp?", "ships pass the island.", 0, "", "the sea was calm."),
    As2Record("q2", "where is it?", "on a rock", 1, "far north", "near the coast"),
    As2Record("q2", "where is it?", "the harbour board built it in 1850 " * 10, 0, "x " * 40, ""),
]


@pytest.fixture(scope="module")
def bi_encoder(tiny_bert) -> BiEncoderRanker:
    torch.manual_seed(2)
    ranker = BiEncoderRanker.from_backbone(str(tiny_bert), max_length=12)
    spread_attention(ranker.encoder.transformer)  # embeddings that tell texts apart
    return ranker.eval()


@pytest.fixture(scope="module")
def exported(bi_encoder, tiny_ranker, tmp_path_factory) -> dict:
    """Folders of the tiny bi-encoder and contextual cross-encoder, fp32 and int8."""
    root = tmp_path_factory.mktemp("onnx")
    models = {"bi-encoder": bi_encoder, "cross-encoder": tiny_ranker}
    folders = {
        (kind, quantize): export_onnx(model, root / f"{kind}-{quantize}", quantize=quantize)
        for kind, model in models.items()
        for quantize in ("none", "int8")
    }
    assert not any(model.training for model in models.values())  # left as they were
    return folders


def test_the_runtime_tokenizer_gives_the_hf_tokenizers_ids(tiny_ranker, exported):
    """Bi-encoder batches (truncation, padding, special tokens) and cross-encoder segments."""
    ours = FastTokenizer(exported["bi-encoder", "none"])
    hf = tiny_ranker.tokenizer
    for max_length in (12, 64):
        theirs = hf(TEXTS, padding=True, truncation=True, max_length=max_length)
        batch = ours.padded(TEXTS, max_length)
        assert batch["input_ids"].tolist() == theirs["input_ids"]
        assert batch["attention_mask"].tolist() == theirs["attention_mask"]
    columns = [TEXTS, TEXTS[::-1], TEXTS[1:] + TEXTS[:1]]
    for segments in (2, 3):
        for max_length in (16, 64):
            assert encode_segments(ours, columns[:segments], max_length) == encode_segments(
                hf, columns[:segments], max_length
            )
    assert (ours.cls_token_id, ours.sep_token_id, ours.pad_token_id) == (
        hf.cls_token_id,
        hf.sep_token_id,
        hf.pad_token_id,
    )


def test_bi_encoder_onnx_ranks_by_the_same_cosine(bi_encoder, exported):
    folder = exported["bi-encoder", "none"]
    onnx_model = ctxsent.load(folder)
    assert isinstance(onnx_model, OnnxBiEncoder) and not onnx_model.contextual
    for batch_size in (1, 4, 64):
        assert np.allclose(
            onnx_model.encode(TEXTS, batch_size), bi_encoder.encode(TEXTS), atol=1e-5
        )
    raw = onnx_model.encode(TEXTS, normalize=False, task_name="STS", prompt_type=None)
    assert np.allclose(raw, bi_encoder.encode(TEXTS, normalize=False), atol=1e-5)
    assert np.allclose(onnx_model.predict(RECORDS), bi_encoder.predict(RECORDS), atol=1e-5)
    question, candidates = "who lit the lamp?", [t for t in TEXTS if t]
    assert [r.index for r in onnx_model.rank(question, candidates)] == [
        r.index for r in bi_encoder.rank(question, candidates)
    ]
    assert onnx_model.encode([]).shape == (0, bi_encoder.encoder.dim)
    config = json.loads((folder / ONNX_CONFIG).read_text())
    assert config == {
        "kind": "bi-encoder",
        "contextual": False,
        "max_length": 12,
        "quantize": "none",
    }


def test_int8_weights_keep_the_rankings_that_fp32_separates(bi_encoder, tiny_ranker, exported):
    """int8 changes scores a little: every cosine stays within 0.05 of fp32's (0.028 when
    written), so any two candidates whose fp32 cosines with a question differ by more than
    0.1 keep their order (many do). The tiny cross-encoder's scores span only 0.009: int8
    moves them by under 0.4 of that (0.24 when written), correlation with fp32 > 0.9 (0.96).
    """
    for kind in ("bi-encoder", "cross-encoder"):
        folder = exported[kind, "int8"]
        assert json.loads((folder / ONNX_CONFIG).read_text())["quantize"] == "int8"
        ops = {node.op_type for node in onnx.load(str(folder / "model.onnx")).graph.node}
        assert "MatMulInteger" in ops
    int8 = load_onnx(exported["bi-encoder", "int8"])
    fp32, quantised = bi_encoder.encode(TEXTS), int8.encode(TEXTS)
    cosines, int8_cosines = fp32 @ fp32.T, quantised @ quantised.T
    assert np.abs(cosines - int8_cosines).max() < 0.05
    np.fill_diagonal(cosines, np.nan)  # a text against itself is no candidate
    gaps = cosines[:, :, None] - cosines[:, None, :]  # question, candidate a, candidate b
    int8_gaps = int8_cosines[:, :, None] - int8_cosines[:, None, :]
    separated = gaps > 0.1
    assert separated.sum() >= 40
    assert (int8_gaps[separated] > 0).all()
    records = [As2Record(q, q, c, 0, "before.", "after.") for q in TEXTS for c in TEXTS]
    scores = tiny_ranker.predict(records)
    int8_scores = load_onnx(exported["cross-encoder", "int8"]).predict(records)
    assert np.abs(scores - int8_scores).max() < 0.4 * np.ptp(scores)
    assert np.corrcoef(scores, int8_scores)[0, 1] > 0.9


def test_scores_without_torch_or_transformers_match_the_torch_models(
    bi_encoder, tiny_ranker, exported
):
    """The exported folders, loaded by ``ctxsent.load`` in a process where ``import torch``
    and ``import transformers`` fail, score as the torch models do here."""
    folders = {kind: str(exported[kind, "none"]) for kind in ("bi-encoder", "cross-encoder")}
    records = [asdict(r) for r in RECORDS]
    script = """
import json, sys
sys.modules["torch"] = sys.modules["transformers"] = None  # any import of them fails
import ctxsent
from ctxsent.tasks.as2_records import As2Record
folders, records = json.loads(sys.argv[1]), [As2Record(**r) for r in json.loads(sys.argv[2])]
scores = {kind: ctxsent.load(folder).predict(records).tolist() for kind, folder in folders.items()}
scores["embeddings"] = ctxsent.load(folders["bi-encoder"]).encode(json.loads(sys.argv[3])).tolist()
print(json.dumps(scores))
"""
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(folders), json.dumps(records), json.dumps(TEXTS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    scores = json.loads(done.stdout)
    assert np.allclose(scores["bi-encoder"], bi_encoder.predict(RECORDS), atol=1e-5)
    assert np.allclose(scores["cross-encoder"], tiny_ranker.predict(RECORDS), atol=1e-5)
    assert np.allclose(scores["embeddings"], bi_encoder.encode(TEXTS), atol=1e-5)


def test_export_command_quantizes_a_zero_shot_bi_encoder(tiny_bert, tmp_path):
    """``ctxsent export bi-encoder:BACKBONE --to onnx --quantize int8``; ``--quantize`` with
    another format is refused before anything is loaded or written."""
    app = typer.Typer()
    app.command()(export_command)
    out = tmp_path / "int8"
    args = [f"bi-encoder:{tiny_bert}", "--to", "onnx", "--quantize", "int8", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads((out / ONNX_CONFIG).read_text())["quantize"] == "int8"
    assert isinstance(ctxsent.load(out), OnnxBiEncoder)
    with pytest.raises(InputError, match="--quantize applies to --to onnx only"):
        export_command(
            f"bi-encoder:{tiny_bert}", out=tmp_path / "st", to="cross-encoder", quantize="int8"
        )
    with pytest.raises(InputError, match="quantize must be none or int8"):
        export_onnx(BiEncoderRanker(str(tiny_bert)), tmp_path / "fp16", quantize="fp16")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["int8"]


def test_a_cross_encoder_folder_loads_as_an_onnx_ranker(tiny_ranker, exported):
    onnx_ranker = ctxsent.load(exported["cross-encoder", "none"])
    assert isinstance(onnx_ranker, OnnxRanker) and onnx_ranker.contextual
    assert np.allclose(onnx_ranker.predict(RECORDS), tiny_ranker.predict(RECORDS), atol=1e-5)
