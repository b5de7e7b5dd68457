"""``ctxsent pipeline build``: the folder it writes is a model that ``eval as2`` scores."""

from __future__ import annotations

import json

import numpy as np
import torch
from typer.testing import CliRunner

import ctxsent
from ctxsent.cli import app
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.pipeline import PipelineRanker
from ctxsent.resolver import build_pipeline
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from synthetic import make_records, spread_attention


def manifest(folder):
    return json.loads((folder / "ctxsent.json").read_text())


def test_pipeline_build_writes_a_folder_that_eval_as2_scores(tiny_bert, tmp_path):
    torch.manual_seed(0)
    reranker = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=64)
    spread_attention(reranker.model.bert)
    reranker.save_pretrained(tmp_path / "ce")
    runner = CliRunner()
    built = runner.invoke(
        app,
        ["pipeline", "build", "--retriever", "bm25", "--reranker", str(tmp_path / "ce"),
         "--top-k", "3", "--out", str(tmp_path / "p")],
    )  # fmt: skip
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout)["model"] == str(tmp_path / "p")
    build_pipeline("bm25", str(tmp_path / "ce"), 3, tmp_path / "python")  # the command's call
    assert manifest(tmp_path / "p") == manifest(tmp_path / "python")
    pipeline = ctxsent.load(tmp_path / "p")
    assert isinstance(pipeline, PipelineRanker) and pipeline.config.top_k == 3

    records = make_records(questions=3, candidates=6)
    write_as2_jsonl(records, tmp_path / "dev.jsonl")
    scored = runner.invoke(
        app,
        ["eval", "as2", "--model", str(tmp_path / "p"), "--data", f"jsonl:{tmp_path / 'dev.jsonl'}",
         "--all"],
    )  # fmt: skip
    assert scored.exit_code == 0, scored.output
    report = json.loads(scored.stdout)
    expected = as2_metrics(
        [r.question_id for r in records], [r.label for r in records], pipeline.predict(records)
    )
    assert np.isclose(report["map"], expected["map"])

    refused = runner.invoke(
        app,
        ["pipeline", "build", "--retriever", "bm25", "--reranker", str(tmp_path / "ce"),
         "--top-k", "0", "--out", str(tmp_path / "q")],
    )  # fmt: skip
    assert refused.exit_code == 2 and not (tmp_path / "q").exists()
