"""The Cross-Thought typer commands on a local app."""

from __future__ import annotations

import gzip
import json

import pytest
import torch
import typer
from cross_thought_fixtures import synthetic_documents
from typer.testing import CliRunner

from ctxsent.cli import evaluate, finetune, pretrain, pretrain_data
from synthetic import write_corpus

app = typer.Typer()
app.command("data")(pretrain_data.cross_thought)
app.command("pretrain")(pretrain.cross_thought)
app.command("finetune")(finetune.cross_thought)
app.command("retrieval")(evaluate.retrieval)
runner = CliRunner()


def test_unknown_preset_and_task_fail_before_any_work(tmp_path):
    result = runner.invoke(
        app,
        [
            "pretrain",
            "--preset",
            "cross-thought-7-64",
            "--data",
            str(tmp_path),
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code != 0 and "unknown preset" in str(result.exception)
    assert not (tmp_path / "out").exists()
    result = runner.invoke(
        app,
        ["data", "--preset", "mlm-9-64", "--corpus", str(tmp_path), "--out", str(tmp_path / "d")],
    )
    assert "unknown preset" in str(result.exception) and not (tmp_path / "d").exists()
    result = runner.invoke(
        app, ["finetune", "--task", "qqp", "--init", str(tmp_path), "--out", str(tmp_path / "f")]
    )
    assert result.exit_code == 2 and "'qqp' is not one of" in result.stderr


def test_pretrain_data_then_pretrain_end_to_end(tiny_bert, tmp_path):
    corpus = write_corpus(tmp_path / "corpus", synthetic_documents(count=3, paragraphs=8))
    common = ["--preset", "mlm-1-64-cpu", "--backbone", str(tiny_bert)]
    built = runner.invoke(
        app, ["data", *common, "--corpus", str(corpus), "--out", str(tmp_path / "d"),
              "--num-proc", "2"],
    )  # fmt: skip
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout)["sequences"] > 0
    trained = runner.invoke(
        app, ["pretrain", *common, "--data", str(tmp_path / "d"), "--out", str(tmp_path / "run"),
              "--max-steps", "1", "--accelerator", "cpu", "--precision", "fp32"],
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    assert (tmp_path / "run" / "model").is_dir()
    # the command is one library call: the same run from Python
    from dataclasses import replace

    from safetensors.torch import load_file

    from ctxsent.presets import get_preset
    from ctxsent.training.cross_thought_train import pretrain_cross_thought

    config = replace(
        get_preset("mlm-1-64-cpu").config, backbone=str(tiny_bert), max_steps=1,
        accelerator="cpu", precision="fp32",
    )  # fmt: skip
    record = pretrain_cross_thought(tmp_path / "d", tmp_path / "python", config)
    printed = json.loads(trained.stdout)
    for run in (printed, record):
        del run["progress"]["seconds_this_run"], run["data"]["folder"]
    assert {k: v for k, v in printed.items() if k != "model"} == record
    weights = [
        load_file(tmp_path / run / "model" / "model.safetensors") for run in ("run", "python")
    ]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[1])


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
    from ctxsent.training.cross_thought_train import model_to_finetune

    model = model_to_finetune("backbone", str(tiny_bert))
    assert model.config.num_special == 1 and not model.config.cross_sequence
    words = AutoModel.from_pretrained(tiny_bert).embeddings.word_embeddings.weight
    cls = words[model.tokenizer.cls_token_id]
    assert torch.equal(model.special[0], cls)  # the special token starts as [CLS]
    with pytest.raises(ModelFolderError, match="missing"):
        model_to_finetune(str(tmp_path / "missing"), str(tiny_bert))


def test_finetune_command_is_one_library_call(tiny_bert, tmp_path):
    from ctxsent.tasks.as2_jsonl import write_as2_jsonl
    from ctxsent.training.cross_thought_train import (
        CrossThoughtFineTuneConfig,
        finetune_cross_thought,
    )
    from synthetic import synthetic_as2

    data = tmp_path / "data"
    for split, seed in (("train", 1), ("dev", 2), ("test", 3)):
        write_as2_jsonl(synthetic_as2(4, seed=seed), data / f"{split}.jsonl")
    spec = f"squad-as2:{data}"
    options = ["--max-steps", "2", "--eval-every", "1", "--accelerator", "cpu", "--precision",
               "fp32", "--negatives", "2", "--backbone", str(tiny_bert)]  # fmt: skip
    result = runner.invoke(
        app, ["finetune", "--task", "as2", "--init", "backbone", "--data", spec, "--out",
              str(tmp_path / "cli"), *options],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    config = CrossThoughtFineTuneConfig(
        max_steps=2, eval_every=1, accelerator="cpu", precision="fp32", negatives=2
    )
    record = finetune_cross_thought(
        "as2", "backbone", tmp_path / "python", spec, config, str(tiny_bert)
    )
    printed = json.loads(result.stdout)
    for run in (printed, record):
        del run["progress"]["seconds_this_run"]
    assert {k: v for k, v in printed.items() if k != "model"} == record
    assert record["metrics"]["test"]["questions"] == 4
