"""Each training command is one library call: the CLI and the Python call give the same run."""

from __future__ import annotations

import json

import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from ctxsent.cli import app
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from synthetic import synthetic_as2, write_corpus


def cli(*args) -> dict:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def same_run(cli_out, python_out, printed: dict) -> None:
    """The two run folders hold the same record and weights; the CLI printed the record."""
    records = [json.loads((out / "run.json").read_text()) for out in (cli_out, python_out)]
    assert printed == {"model": str(cli_out / "model"), **records[0]}
    for record in records:
        del record["progress"]["seconds_this_run"]
    assert records[0] == records[1]
    cli_weights, python_weights = (
        load_file(out / "model" / "model.safetensors") for out in (cli_out, python_out)
    )
    assert all(torch.equal(cli_weights[k], python_weights[k]) for k in python_weights)


def test_finetune_as2_is_run_as2(tmp_path, tiny_bert):
    from ctxsent.training.as2_finetune import As2Data, run_as2

    data = tmp_path / "data"
    write_as2_jsonl(synthetic_as2(8, seed=1), data / "train.jsonl")
    write_as2_jsonl(synthetic_as2(4, seed=2), data / "dev.jsonl")
    options = ["--max-steps", 2, "--eval-every", 2, "--max-length", 32, "--accelerator", "cpu"]
    printed = cli("finetune", "as2", "--data", f"squad-as2:{data}", "--init", tiny_bert,
                  "--preset", "as2-contextual", "--out", tmp_path / "cli", *options)  # fmt: skip
    run_as2(
        tmp_path / "python", As2Data([f"squad-as2:{data}"]), "as2-contextual", str(tiny_bert),
        {"max_length": 32}, {"max_steps": 2, "eval_every": 2, "accelerator": "cpu"},
    )  # fmt: skip
    same_run(tmp_path / "cli", tmp_path / "python", printed)
    assert printed["settings"]["model"]["contextual"]  # the preset's architecture
    assert not (tmp_path / "cli" / "checkpoints").exists()


def test_pretrain_encoder_is_pretrain_encoder(tmp_path):
    from ctxsent.corpus.document import Document
    from ctxsent.objectives.pretrain_data import build_encoder_data
    from ctxsent.presets import apply_overrides, get_preset
    from ctxsent.training.encoder_pretrain import pretrain_encoder

    words = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "park", "sun"]
    documents = [
        Document(
            f"doc{d}", f"Title {d}", [[" ".join(words[d + i :: 2]) + " ." for i in range(3)]] * 2
        )
        for d in range(4)
    ]
    corpus = write_corpus(tmp_path / "corpus", documents)
    built = cli("pretrain-data", "encoder", "--corpus", corpus, "--out", tmp_path / "data",
                "--preset", "mean-max-aae-cpu", "--set", "max_sentences=none")  # fmt: skip
    again = build_encoder_data(corpus, tmp_path / "data2", 10_000, None, preset="mean-max-aae-cpu")
    assert {k: v for k, v in built.items() if k != "build"} == {
        k: v for k, v in again.items() if k != "build"
    }
    tiny = ["embedding_dim=8", "hidden_size=8", "ffn_size=16", "heads=2", "batch_size=4",
            "word_vectors=none", "expand_vocabulary=0", "max_sentences=none", "max_steps=2",
            "accelerator=cpu"]  # fmt: skip
    settings = [option for setting in tiny for option in ("--set", setting)]
    printed = cli("pretrain", "encoder", "mean-max-aae-cpu", "--data", tmp_path / "data",
                  "--out", tmp_path / "cli", *settings)  # fmt: skip
    config = apply_overrides(get_preset("mean-max-aae-cpu").config, tiny)
    pretrain_encoder(tmp_path / "data", tmp_path / "python", config)
    same_run(tmp_path / "cli", tmp_path / "python", printed)


def test_as2_recipes_are_presets_and_the_default_is_one_name(tiny_bert, monkeypatch):
    from ctxsent.presets import get_preset
    from ctxsent.training import as2_finetune
    from ctxsent.training.as2_finetune import as2_recipe

    spec, config = as2_recipe(init=str(tiny_bert))
    assert spec.kind == "bi-encoder" and config == get_preset("as2-bi-encoder").config
    spec, config = as2_recipe(init=str(tiny_bert), model={"arch": "cross-encoder"})
    assert spec.kind == "cross-encoder" and config == get_preset("as2-cross-encoder").config
    implied_by = {"as2-contextual": {"contextual": True}, "as2-cascade": {"exits": (1,)}}
    for implied, model in {**implied_by, "as2-cross-encoder": {"layers": 1}}.items():
        assert as2_recipe(init=str(tiny_bert), model=model)[1] == get_preset(implied).config
    spec, config = as2_recipe(init=str(tiny_bert), model={"arch": "bi-encoder"})
    assert (config.loss, config.learning_rate, config.questions_per_batch) == ("listwise", 5e-5, 8)
    _, sized = as2_recipe(None, str(tiny_bert), {"arch": "bi-encoder"}, {"batch_size": 16})
    assert sized.questions_per_batch is None  # batches sized in pairs, as asked
    monkeypatch.setattr(as2_finetune, "DEFAULT_AS2_PRESET", "as2-cascade")
    assert as2_recipe(init=str(tiny_bert))[0].kind == "cascade"


def test_the_listwise_cross_encoder_preset_reads_out_the_backbones_last_layer(tiny_bert, tmp_path):
    from ctxsent.models.cascade import CascadeRanker
    from ctxsent.training.as2_finetune import as2_recipe
    from synthetic import make_tiny_bert

    deeper = make_tiny_bert(tmp_path / "three-layers", layers=3)
    for backbone, exits in ((tiny_bert, (2,)), (deeper, (3,))):
        spec, config = as2_recipe("as2-cross-encoder-listwise", str(backbone))
        assert (spec.kind, spec.exits, spec.layers) == ("cascade", exits, None)
        assert spec.max_length == 128
        assert (config.loss, config.head_lr_scale, config.patience) == ("listwise", 20.0, 4)
        assert spec.build().trains_all_parameters_each_step  # one exit, on the last layer
    truncated, _ = as2_recipe("as2-cross-encoder-listwise", str(deeper), {"layers": 2})
    assert (truncated.exits, truncated.layers) == ((2,), 2)
    saved = tmp_path / "saved"
    CascadeRanker.from_backbone(str(tiny_bert), exits=[2]).save_pretrained(saved)
    adapt, _ = as2_recipe("as2-cross-encoder-listwise", str(saved))  # TANDA's second step
    assert adapt.kind == "cascade" and adapt.exits == ()
