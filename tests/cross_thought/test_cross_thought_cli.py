"""The Cross-Thought typer commands on a local app."""

from __future__ import annotations

import gzip
import json

import pytest
import torch
import typer
from typer.testing import CliRunner

from ctxsent.training.cross_thought_cli import finetune_command, pretrain_command, retrieval_command

app = typer.Typer()
app.command("pretrain")(pretrain_command)
app.command("finetune")(finetune_command)
app.command("retrieval")(retrieval_command)
runner = CliRunner()


def test_unknown_preset_and_task_fail_before_any_work(tmp_path):
    result = runner.invoke(
        app,
        [
            "pretrain",
            "--preset",
            "cross-thought-7-64",
            "--corpus",
            str(tmp_path),
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code != 0 and "unknown preset" in str(result.exception)
    assert not (tmp_path / "out").exists()
    result = runner.invoke(
        app, ["finetune", "--task", "qqp", "--init", str(tmp_path), "--out", str(tmp_path / "f")]
    )
    assert result.exit_code == 2 and "'qqp' is not one of" in result.stderr


def test_retrieval_command_prints_recall(tmp_path):
    squad = {
        "data": [
            {
                "title": "A",
                "paragraphs": [
                    {
                        "context": "the keeper lit the lamp",
                        "qas": [{"id": "1", "question": "who lit the lamp"}],
                    },
                    {
                        "context": "ships sail at sea",
                        "qas": [{"id": "2", "question": "where do ships sail"}],
                    },
                ],
            }
        ]
    }
    path = tmp_path / "dev.json.gz"
    path.write_bytes(gzip.compress(json.dumps(squad).encode()))
    result = runner.invoke(app, ["retrieval", "bm25", "--squad", str(path)])
    assert result.exit_code == 0, result.output
    output = json.loads(result.output)
    assert output["bm25"]["all_paragraphs"]["recall@1"] == 100.0


def test_init_backbone_builds_the_mlm_1_architecture_from_the_backbone(tiny_bert, tmp_path):
    from transformers import AutoModel

    from ctxsent.errors import ModelFolderError
    from ctxsent.training.cross_thought_cli import model_to_finetune

    model = model_to_finetune("backbone", str(tiny_bert))
    assert model.config.num_special == 1 and not model.config.cross_sequence
    words = AutoModel.from_pretrained(tiny_bert).embeddings.word_embeddings.weight
    cls = words[model.tokenizer.cls_token_id]
    assert torch.equal(model.special[0], cls)  # the special token starts as [CLS]
    with pytest.raises(ModelFolderError, match="missing"):
        model_to_finetune(str(tmp_path / "missing"), str(tiny_bert))
