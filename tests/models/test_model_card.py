"""Model cards are Hub cards: YAML metadata (base model, library, task, data sets, dev and
test metrics in the model-index), a readable recipe, and only the exports that apply;
exported folders carry one; ``ctxsent push`` without a reachable Hub is one line."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from huggingface_hub import ModelCard
from typer.testing import CliRunner

from ctxsent.cli import app
from ctxsent.errors import InputError
from ctxsent.export import export_cross_encoder, export_onnx, export_sentence_transformer
from ctxsent.model_card import export_formats, update_model_card, write_model_card
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.saving import write_model_card as write_folder_card
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from synthetic import synthetic_as2

EXPORTERS = {
    "sentence-transformers": export_sentence_transformer,
    "cross-encoder": export_cross_encoder,
    "onnx": export_onnx,
}


def card(folder) -> ModelCard:
    return ModelCard.load(folder / "README.md")


def test_a_trained_models_card_has_the_hubs_metadata_and_its_test_metrics(tiny_bert, tmp_path):
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32)
    folder = ranker.save_pretrained(tmp_path / "model")
    report = {"step": 3, "dev": {"map": 0.5, "mrr": 0.75, "questions": 4}, "data": {"train": "8 q"}}
    write_folder_card(folder, {**report, "train": {"loss": "pointwise", "lr": 0.001}})
    train = ["/private/train.csv", "squad-as2:/data/squad"]  # --data repeated: several sets
    sources = {"train": train, "dev": "wikiqa:/data/wikiqa", "test": "hf:org/qa@t"}
    update_model_card(folder, {"map": 0.25, "pairs": 9}, sources)
    written = card(folder)
    assert (written.data.library_name, written.data.pipeline_tag) == ("ctxsent", "text-ranking")
    assert written.data.datasets == ["microsoft/wiki_qa", "org/qa", "rajpurkar/squad"]
    results = {
        (r.dataset_split, r.metric_type): (r.dataset_type, r.metric_value)
        for r in written.data.eval_results
    }
    assert results == {
        ("dev", "map"): ("microsoft/wiki_qa", 0.5),
        ("dev", "mrr"): ("microsoft/wiki_qa", 0.75),
        ("test", "map"): ("org/qa", 0.25),
    }
    text = written.text
    assert "| dev (microsoft/wiki_qa) | 0.5000 | 0.7500 |" in text
    assert "| test (org/qa) | 0.2500 |  |" in text and "/private" not in text
    assert '| `loss` | `"pointwise"` |' in text and "- train data: 8 q" in text
    assert "- best dev step: 3" in text and text.count("## Use") == 1
    assert written.data.base_model is None  # a local backbone names no Hub model


@pytest.mark.parametrize(
    ("config", "formats"),
    [({"contextual": True}, ["onnx"]), ({"contextual": False}, ["cross-encoder", "onnx"])],
)
def test_a_card_names_the_builtin_base_model_and_only_the_exports_that_apply(
    tmp_path, config, formats
):
    write_model_card(tmp_path, "cross-encoder", {"backbone": "all-MiniLM-L6-v2", **config})
    written = card(tmp_path)
    assert written.data.base_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert written.data.license == "apache-2.0" and not written.data.eval_results
    listed = [fmt for fmt in EXPORTERS if f"`--to {fmt}`" in written.text]
    assert listed == formats == export_formats("cross-encoder", config)


@pytest.mark.parametrize("contextual", [False, True])
def test_the_listed_exports_are_those_export_does_not_refuse(tiny_bert, tmp_path, contextual):
    models = {
        "cascade": CascadeRanker.from_backbone(str(tiny_bert), contextual, 32),
        "cross-encoder": CrossEncoderRanker.from_backbone(str(tiny_bert), contextual, 32),
    }
    for kind, model in models.items():
        listed = export_formats(kind, {"contextual": contextual})
        for fmt, exporter in EXPORTERS.items():
            out = tmp_path / f"{kind}-{fmt}"
            if fmt in listed:
                exporter(model, out)
                exported = card(out)
                assert exported.data.pipeline_tag == "text-ranking"
                assert exported.data.library_name == (
                    "ctxsent" if fmt == "onnx" else "sentence-transformers"
                )
            else:
                with pytest.raises(InputError):
                    exporter(model, out)


def test_push_without_a_reachable_hub_is_one_line(tiny_bert, tmp_path):
    folder = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32).save_pretrained(
        tmp_path / "model"
    )
    for target, expected in [
        (tmp_path, "not a model folder with a card"),
        (folder, "me/model: cannot push to the Hugging Face Hub: "),
    ]:
        result = CliRunner().invoke(app, ["push", str(target), "--repo-id", "me/model"])
        assert result.exit_code == 2 and expected in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_a_pretraining_reports_nested_results_are_lists_not_json(tmp_path):
    report = {"steps": 10, "best": {"step": 5, "auc": 0.8}, "data": "/runs/corpus", "config": {}}
    write_model_card(tmp_path, "rnn-cnn-encoder", {"words": 9}, "An encoder.", report)
    written = card(tmp_path)
    assert written.data.pipeline_tag == "feature-extraction" and written.data.base_model is None
    assert "- data: corpus\n- steps: `10`\n- best:\n  - step: `5`\n  - auc: `0.8`\n" in written.text
    assert "`ctxsent eval senteval --model PATH`" in written.text and "--to" not in written.text


def test_finetune_with_a_test_file_puts_the_test_metrics_on_the_card(tmp_path, tiny_bert):
    files = {}
    for split, questions in (("train", 4), ("dev", 2), ("test", 2)):
        records = [
            replace(r, question_id=split + r.question_id) for r in synthetic_as2(questions, 1)
        ]
        files[split] = tmp_path / f"{split}.jsonl"
        write_as2_jsonl(records, files[split])
    args = [f"--{split}={path}" for split, path in files.items()]
    result = CliRunner().invoke(
        app,
        ["finetune", "as2", *args, "--out", str(tmp_path / "run"), "--init", str(tiny_bert),
         "--max-steps", "1", "--batch-size", "8", "--max-length", "32"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    test = json.loads(result.stdout)["metrics"]["test"]
    written = card(tmp_path / "run" / "model")
    scored = {(r.dataset_split, r.dataset_name, r.metric_type): r.metric_value
              for r in written.data.eval_results}  # fmt: skip
    assert scored[("test", "test.jsonl", "map")] == round(test["map"], 4)
    assert ("dev", "dev.jsonl", "map") in scored


def test_metrics_given_apart_from_a_report_reach_the_model_index(tmp_path):
    metrics = {"dev": {"map": 0.5}, "test": {"map": 0.25, "questions": 3}}
    write_model_card(tmp_path, "cascade", {"contextual": False}, metrics=metrics)
    written = card(tmp_path)
    results = {(r.dataset_split, r.metric_type): r.metric_value for r in written.data.eval_results}
    assert results == {("dev", "map"): 0.5, ("test", "map"): 0.25}
    assert "--to" not in written.text  # a cascade exports to nothing
