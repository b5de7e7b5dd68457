import json

import pytest
import torch
import typer
from ssp_corpus import documents, write_corpus
from typer.testing import CliRunner

import ctxsent
from ctxsent.cli import pretrain, pretrain_data
from ctxsent.errors import InputError
from ctxsent.objectives.ssp import SspConfig
from ctxsent.objectives.ssp_data import build_ssp_dataset, load_ssp_dataset
from ctxsent.presets import apply_overrides, get_preset
from ctxsent.training.ssp_pretrain import SspPretrainConfig, pretrain_ssp


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "c", documents(40, seed=1))


@pytest.fixture(scope="module")
def ssp_data(corpus, tiny_bert, tmp_path_factory):
    out = tmp_path_factory.mktemp("ssp") / "dpc"
    build_ssp_dataset(corpus, out, SspConfig(block_size=8, max_length=64), str(tiny_bert))
    return out


def test_dataset_is_the_same_for_any_number_of_processes(corpus, tiny_bert, tmp_path):
    config = SspConfig(objective="all", block_size=7, seed=3)
    one = build_ssp_dataset(corpus, tmp_path / "one", config, str(tiny_bert), num_proc=1)
    two = build_ssp_dataset(corpus, tmp_path / "two", config, str(tiny_bert), num_proc=2)
    first, _ = load_ssp_dataset(tmp_path / "one")
    second, _ = load_ssp_dataset(tmp_path / "two")
    assert first.to_dict() == second.to_dict()
    assert one["examples"] == two["examples"] == len(first) > 100
    assert one["positives"] * 5 >= one["examples"] > one["positives"] * 4
    assert set(one["by_objective"]) == {"sdc", "dpc", "dslc"}
    assert (tmp_path / "one" / "tokenizer" / "tokenizer.json").is_file()


def test_bad_inputs_are_refused_before_work_starts(corpus, tiny_bert, tmp_path):
    with pytest.raises(InputError, match="not a corpus folder"):
        build_ssp_dataset(tmp_path, tmp_path / "out", SspConfig(), str(tiny_bert))
    (tmp_path / "exists").mkdir()
    (tmp_path / "exists" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="pass --overwrite"):
        build_ssp_dataset(corpus, tmp_path / "exists", SspConfig(), str(tiny_bert))
    with pytest.raises(InputError, match="not an SSP dataset"):
        load_ssp_dataset(corpus)


def test_cli_builds_data_and_reports_bad_objective(corpus, tiny_bert, tmp_path):
    app = typer.Typer()
    app.command("data")(pretrain_data.ssp)
    app.command("train")(pretrain.ssp)
    runner = CliRunner()
    args = ["data", "--corpus", str(corpus), "--tokenizer", str(tiny_bert), "--block-size", "10"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "d"), "--objective", "dslc"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{") :])
    assert summary["by_objective"] == {"dslc": summary["examples"]}
    bad = runner.invoke(app, [*args, "--out", str(tmp_path / "e"), "--objective", "nsp"])
    assert bad.exit_code == 2 and "'nsp' is not one of" in bad.stderr
    assert not (tmp_path / "e").exists()
    wrong = runner.invoke(
        app, ["train", "--data", str(tmp_path / "d"), "--out", str(tmp_path / "r")]
    )
    assert "holds 'dslc' examples" in str(wrong.exception)  # default preset is ssp-dpc-cpu


def test_presets_cover_each_objective_at_both_scales():
    for objective in ("sdc", "dpc", "dslc", "all"):
        assert get_preset(f"ssp-{objective}", "ssp").config.batch_size == 4096
        cpu = get_preset(f"ssp-{objective}-cpu", "ssp").config
        assert apply_overrides(cpu, ["max_steps=7"]).max_steps == 7
    with pytest.raises(InputError, match="unknown preset"):
        get_preset("ssp-nsp", "ssp")


def _tiny_ranker(tiny_bert):
    from ctxsent.models.cross_encoder import CrossEncoderRanker

    torch.manual_seed(0)
    return CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=True, max_length=64)


def _config(steps, **kwargs):
    return SspPretrainConfig(
        objective="dpc",
        batch_size=8,
        max_steps=steps,
        warmup_steps=2,
        checkpoint_every=2,
        learning_rate=1e-3,
        max_length=64,
        accelerator="cpu",
        precision="fp32",
        **kwargs,
    )


def test_pretrained_model_fine_tunes_without_conversion(ssp_data, tiny_bert, tmp_path):
    """Resuming after a kill: tests/reliability/test_kill_resume_pretraining.py."""
    from ctxsent.models.registry import load_model_folder as load

    whole = pretrain_ssp(ssp_data, tmp_path / "whole", _config(6), _tiny_ranker(tiny_bert))
    final = whole["metrics"]["train"]
    assert whole["progress"]["steps"] == 6 and final["ssp"] > 0 and final["mlm"] > 0
    a = load(tmp_path / "whole" / "model").model.state_dict()
    # what 'ctxsent finetune as2 --init OUT/model --contextual' does
    ranker = load(tmp_path / "whole" / "model").with_context(True)
    start = _tiny_ranker(tiny_bert).model.state_dict()
    assert ranker.contextual and ranker.model.config.type_vocab_size == 3
    assert set(ranker.model.state_dict()) == set(a)
    assert all(torch.equal(ranker.model.state_dict()[k], a[k]) for k in a)
    assert not torch.equal(
        a["bert.embeddings.token_type_embeddings.weight"],
        start["bert.embeddings.token_type_embeddings.weight"],
    )


def test_the_ssp_head_can_learn_faster_than_the_backbone(tiny_bert, tmp_path):
    from ctxsent.training.ssp_pretrain import optimizer_settings, ssp_objective

    ranker = _tiny_ranker(tiny_bert)
    config = _config(6, head_lr_scale=20.0)
    module = ssp_objective(ranker, config)
    optimizer = optimizer_settings(ranker, config).build(module.named_parameters(), 6)
    optimizer = optimizer["optimizer"]
    head = {id(p) for p in ranker.model.classifier.parameters()}
    rates = {
        id(p): group["initial_lr"] for group in optimizer.param_groups for p in group["params"]
    }
    assert {rates[i] for i in head} == {1e-3 * 20}
    assert {rate for i, rate in rates.items() if i not in head} == {1e-3}
    assert len(rates) == len({id(p) for p in module.parameters()})  # tied weights once


def test_ssp_weight_zero_is_the_mlm_only_control(ssp_data, tiny_bert, tmp_path):
    config = _config(2, ssp_weight=0.0, heldout_examples=0)
    result = pretrain_ssp(ssp_data, tmp_path / "run", config, ranker=_tiny_ranker(tiny_bert))
    final = result["metrics"]["train"]
    assert final["ssp"] > 0 and final["loss"] == pytest.approx(final["mlm"])
    with pytest.raises(InputError, match="must be >= 0"):
        pretrain_ssp(ssp_data, tmp_path / "bad", _config(2, ssp_weight=-1.0))
    assert not (tmp_path / "bad").exists()


def test_mean_readout_pretrains_a_one_exit_cascade_that_fine_tunes_as_one(
    ssp_data, tiny_bert, tmp_path
):
    from ctxsent.models.cascade import CascadeRanker
    from ctxsent.models.registry import load_model_folder as load

    config = _config(4, readout="mean", backbone=str(tiny_bert), heldout_examples=40)
    result = pretrain_ssp(ssp_data, tmp_path / "run", config)
    final = result["metrics"]["train"]
    assert result["progress"]["steps"] == 4 and final["ssp"] > 0 and final["mlm"] > 0
    assert result["metrics"]["heldout"]["examples"] == 40
    ranker = load(tmp_path / "run" / "model")
    assert isinstance(ranker, CascadeRanker) and ranker.config.exits == [2]  # tiny BERT: 2 layers
    assert ranker.contextual and ranker.model.config.type_vocab_size == 3
    with pytest.raises(InputError, match="cls or mean"):
        pretrain_ssp(ssp_data, tmp_path / "bad", _config(4, readout="max", backbone=str(tiny_bert)))


def test_heldout_evaluation_keeps_the_best_model_and_bad_specs_fail_first(
    ssp_data, tiny_bert, tmp_path
):
    from sklearn.metrics import roc_auc_score

    from ctxsent.evaluation.ssp_heldout import unseen_indices
    from ctxsent.objectives.ssp_data import example_lengths, ssp_batch

    config = _config(4, eval="heldout", eval_every=2, heldout_examples=16)
    result = pretrain_ssp(ssp_data, tmp_path / "run", config, ranker=_tiny_ranker(tiny_bert))
    best = json.loads((tmp_path / "run" / "run.json").read_text())["best"]
    assert best["step"] in (2, 4) and best["dev"]["auc"] >= result["metrics"]["train"]["dev_auc"]
    assert result["best"] == best
    saved = ctxsent.load(tmp_path / "run" / "model")
    assert saved.kind == "cross-encoder"
    # the saved model's AUC on the examples no step drew, by scikit-learn: the best's
    dataset, _ = load_ssp_dataset(ssp_data)
    heldout = unseen_indices(example_lengths(dataset), 8, config.seed, 4, 16)
    batch = ssp_batch(dataset, heldout, saved.tokenizer.pad_token_id)
    with torch.no_grad():
        logits = saved.eval()(batch["features"]).float().numpy()
    expected = roc_auc_score(batch["labels"].numpy(), logits)
    assert best["dev"]["auc"] == pytest.approx(expected, abs=1e-4)
    for spec, message in (("squad:x.json", "does not evaluate"), ("nope", "unknown evaluator")):
        with pytest.raises(InputError, match=message):
            pretrain_ssp(ssp_data, tmp_path / "bad", _config(2, eval=spec))
        assert not (tmp_path / "bad").exists()


def test_pretrain_ssp_command_is_one_library_call(ssp_data, tiny_bert, tmp_path):
    from dataclasses import replace

    from safetensors.torch import load_file

    app = typer.Typer()
    app.command("ssp")(pretrain.ssp)
    app.command("other")(pretrain.encoder)
    options = ["--max-steps", "2", "--batch-size", "8", "--save-every", "2", "--accelerator",
               "cpu", "--precision", "fp32", "--set", "max_length=64", "--set",
               "heldout_examples=8"]  # fmt: skip
    result = CliRunner().invoke(
        app, ["ssp", "--data", str(ssp_data), "--out", str(tmp_path / "cli"), "--backbone",
              str(tiny_bert), *options],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    config = replace(
        get_preset("ssp-dpc-cpu").config, backbone=str(tiny_bert), max_steps=2, batch_size=8,
        checkpoint_every=2, accelerator="cpu", precision="fp32", max_length=64,
        heldout_examples=8,
    )  # fmt: skip
    record = pretrain_ssp(ssp_data, tmp_path / "python", config)
    printed = json.loads(result.stdout)
    for run in (printed, record):
        del run["progress"]["seconds_this_run"]
    assert {k: v for k, v in printed.items() if k != "model"} == record
    weights = [
        load_file(tmp_path / run / "model" / "model.safetensors") for run in ("cli", "python")
    ]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[1])
