"""A training run's folder: a rerun resumes only with the run's settings, and a run that
did not finish can be told from one that did."""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import pytest
from huggingface_hub import ModelCard
from training_run import CONFIG

import ctxsent
from ctxsent.errors import InputError
from ctxsent.saving import UnfinishedRunWarning, unfinished_run
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from ctxsent.training.as2_finetune import As2RankerSpec, As2TrainConfig, finetune_as2
from ctxsent.training.runs import finish_run, start_run
from synthetic import synthetic_as2

SHORT = {**CONFIG, "max_steps": 2, "eval_every": 2}
TRAIN, DEV = synthetic_as2(8, seed=1), synthetic_as2(4, seed=2)


def train(tiny_bert, out, train=TRAIN, overwrite=False, contextual=False, **changes):
    spec = As2RankerSpec(init=str(tiny_bert), max_length=32, contextual=contextual)
    config = As2TrainConfig(**{**SHORT, **changes})
    return finetune_as2(spec, train, DEV, out, config, overwrite)


def status(out) -> str:
    return json.loads((out / "run.json").read_text())["status"]


def test_a_rerun_with_other_settings_is_refused_naming_them_and_overwrite_starts_again(
    tiny_bert, tmp_path, monkeypatch
):
    out = tmp_path / "run"
    train(tiny_bert, out)
    assert status(out) == "finished"
    checkpoint = (out / "checkpoints" / "last.ckpt").read_bytes()
    refusals = {
        "config.learning_rate: 0.003 -> 0.001": dict(learning_rate=1e-3),
        "config.batch_size: 8 -> 4": dict(batch_size=4),
        "model.contextual: False -> True": dict(contextual=True),  # was a size mismatch
        "data.train: ": dict(train=synthetic_as2(8, seed=3)),
    }
    for expected, changes in refusals.items():
        with pytest.raises(InputError, match="other settings") as refused:
            train(tiny_bert, out, **changes)
        assert expected in str(refused.value) and "--overwrite" in str(refused.value)
        assert str(refused.value).count("->") == 1  # only what differs
    assert (out / "checkpoints" / "last.ckpt").read_bytes() == checkpoint
    assert status(out) == "finished"

    from ctxsent.training.engine import ObjectiveModule

    steps: list[int] = []
    monkeypatch.setattr(
        ObjectiveModule, "on_train_batch_end", lambda self, *_: steps.append(self.global_step)
    )
    train(tiny_bert, out, overwrite=True, learning_rate=1e-3)
    assert steps == [1, 2]  # from the start, not from the old run's checkpoint
    stored = json.loads((out / "run.json").read_text())
    assert stored["status"] == "finished" and stored["settings"]["config"]["learning_rate"] == 1e-3


def test_limits_may_change_and_a_rerun_goes_on_from_the_checkpoint(tiny_bert, tmp_path):
    import torch

    out = tmp_path / "run"
    train(tiny_bert, out)
    train(tiny_bert, out, max_steps=4)
    last = torch.load(out / "checkpoints" / "last.ckpt", weights_only=False, map_location="cpu")
    assert last["global_step"] == 4 and status(out) == "finished"


def test_a_finished_run_keeps_no_checkpoint_unless_asked_and_a_rerun_starts_again(
    tiny_bert, tmp_path
):
    out = tmp_path / "run"
    first = train(tiny_bert, out, keep_checkpoints=False)
    assert sorted(p.name for p in out.iterdir()) == ["logs", "model", "run.json", "run.lock"]
    assert not any(out.rglob("*.ckpt"))
    again = train(tiny_bert, out, keep_checkpoints=False, max_steps=3)  # nothing to go on from
    assert not again["progress"]["resumed"] and again["progress"]["steps_this_run"] == 3
    assert first["best"]["step"] == 2 and not any(out.rglob("*.ckpt"))
    train(tiny_bert, tmp_path / "kept")  # keep_checkpoints: one checkpoint
    assert [p.name for p in (tmp_path / "kept").rglob("*.ckpt")] == ["last.ckpt"]


def test_a_finished_runs_model_card_says_how_it_was_trained(tiny_bert, tmp_path):
    out = tmp_path / "run"
    best = train(tiny_bert, out)["best"]
    card = ModelCard.load(out / "model" / "README.md")
    assert (card.data.library_name, card.data.pipeline_tag) == ("ctxsent", "text-ranking")
    dev = {r.metric_type: r.metric_value for r in card.data.eval_results}
    assert dev["map"] == round(best["dev"]["map"], 4) and {"mrr", "p@1"} <= set(dev)
    assert card.text.startswith("\n# A ctxsent `cross-encoder` model")
    text = card.text
    assert "| `max_length` | `32` |" in text and f"- best dev step: {best['step']}" in text
    assert "- train data: 8 questions, " in text and "| `learning_rate` | `0.003` |" in text
    assert "ties ranked pessimistically" in card.text
    assert f"| dev | {best['dev']['map']:.4f} |" in card.text
    assert 'ctxsent.load("PATH")' in card.text and "`--to onnx`" in card.text


def test_a_folder_no_run_wrote_is_refused_and_nothing_in_it_removed(tmp_path):
    out = tmp_path / "run"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "last.ckpt").write_bytes(b"from another version")
    (out / ".notes.txt.k2j1.tmp").write_text("mine")  # start_run removed every .*.tmp
    before = sorted(p.name for p in out.rglob("*"))
    with pytest.raises(InputError, match="not a ctxsent run output; pass --overwrite"):
        start_run(out, {"lr": 1})
    with pytest.raises(InputError, match="holds checkpoints but no run.json"):
        start_run(out, {"lr": 1}, overwrite=True)
    assert sorted(p.name for p in out.rglob("*")) == before


def test_staging_of_the_runs_own_state_is_removed_and_nothing_else(tmp_path):
    out = tmp_path / "run"
    start_run(out, {"lr": 1})
    (out / ".checkpoints.k2j1.tmp" / "last.ckpt").mkdir(parents=True)
    (out / ".run.json.x9.tmp").write_text("{}")
    (out / ".mine.x9.tmp").write_text("mine")
    start_run(out, {"lr": 1})
    assert sorted(p.name for p in out.iterdir()) == [".mine.x9.tmp", "run.json"]


def test_a_second_run_on_a_folder_in_use_is_refused_in_one_line(tmp_path):
    from ctxsent.training.runs import run_folder

    out = tmp_path / "run"
    with run_folder(out, {"lr": 1}):
        with (
            pytest.raises(InputError, match="in use by another run") as refused,
            run_folder(out, {"lr": 1}),
        ):
            pass
        assert "\n" not in str(refused.value)
        assert status(out) == "running"
    with run_folder(out, {"lr": 1}):  # released
        finish_run(out, {})
    assert status(out) == "finished"


def test_a_full_disk_marks_the_run_failed_in_one_line_and_a_rerun_resumes(
    tiny_bert, tmp_path, monkeypatch
):
    import errno

    from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO

    out = tmp_path / "run"
    save = TorchCheckpointIO.save_checkpoint

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TorchCheckpointIO, "save_checkpoint", full)
    with pytest.raises(OSError, match="No space left on device") as failed:
        train(tiny_bert, out)
    assert failed.value.filename == str(out) and "rerun to resume" in str(failed.value)
    assert status(out) == "failed"
    monkeypatch.setattr(TorchCheckpointIO, "save_checkpoint", save)
    train(tiny_bert, out)
    assert status(out) == "finished"


def test_loading_the_model_of_an_unfinished_run_warns(tiny_bert, tmp_path):
    from ctxsent.models.cross_encoder import CrossEncoderRanker

    out = tmp_path / "run"
    start_run(out, {"lr": 1})
    CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32).save_pretrained(out / "model")
    assert unfinished_run(out / "model") == out / "run.json"
    with pytest.warns(UnfinishedRunWarning, match="has not finished"):
        ctxsent.load(out / "model")
    copy = Path(shutil.copytree(out / "model", tmp_path / "copied"))  # out of the run
    with pytest.warns(UnfinishedRunWarning, match=f"see {out / 'run.json'}"):
        ctxsent.load(copy)
    finish_run(out, {"step": 3})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnfinishedRunWarning)
        ctxsent.load(out / "model")
        ctxsent.load(shutil.copytree(out / "model", tmp_path / "copied-after"))
    assert unfinished_run(out / "model") is None


def test_the_cli_refuses_changed_settings_in_one_line(tiny_bert, tmp_path, monkeypatch, capsys):
    from ctxsent.cli import main

    data = tmp_path / "data"
    write_as2_jsonl(TRAIN, data / "train.jsonl")
    write_as2_jsonl(DEV, data / "dev.jsonl")
    command = [
        "ctxsent", "finetune", "as2", "--data", f"squad-as2:{data}", "--out",
        str(tmp_path / "run"), "--init", str(tiny_bert), "--max-steps", "2", "--eval-every",
        "2", "--batch-size", "8", "--max-length", "32", "--accelerator", "cpu",
    ]  # fmt: skip

    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)  # main() sets it

    def run(*extra: str) -> int:
        monkeypatch.setattr(sys, "argv", [*command, *extra])
        with pytest.raises(SystemExit) as exited:
            main()
        return exited.value.code

    assert run() in (0, None)
    capsys.readouterr()
    assert run("--lr", "1e-3") == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "config.learning_rate: 5e-05 -> 0.001" in error
    assert run("--lr", "1e-3", "--overwrite") in (0, None)


def test_the_cli_warns_in_one_line_when_it_loads_an_unfinished_runs_model(tiny_bert, tmp_path):
    import subprocess

    from ctxsent.models.cross_encoder import CrossEncoderRanker

    out = tmp_path / "run"
    start_run(out, {"lr": 1})
    CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32).save_pretrained(out / "model")
    document = tmp_path / "doc.txt"
    document.write_text("The sky is blue. Grass is green.\n")
    ranked = subprocess.run(
        [sys.executable, "-m", "ctxsent.cli", "rank", "--model", str(out / "model"),
         "--question", "what colour", "--document", str(document)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ranked.returncode == 0, ranked.stderr
    [warning] = [line for line in ranked.stderr.splitlines() if "has not finished" in line]
    assert warning.startswith(f"warning: {out / 'model'} comes from a run")


def test_a_max_length_beyond_the_backbone_stops_finetune_in_one_line_before_the_run(
    tiny_bert, tmp_path, monkeypatch, capsys
):
    from ctxsent.cli import main

    data = tmp_path / "data"
    write_as2_jsonl(TRAIN, data / "train.jsonl")
    write_as2_jsonl(DEV, data / "dev.jsonl")
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)  # main() sets it
    monkeypatch.setattr(sys, "argv", [
        "ctxsent", "finetune", "as2", "--data", f"squad-as2:{data}", "--out",
        str(tmp_path / "run"), "--init", str(tiny_bert), "--max-length", "100000",
    ])  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main()
    error = capsys.readouterr().err.strip()
    assert exited.value.code == 2 and error.count("\n") == 0
    assert "--max-length: must be <= 256" in error
    assert not (tmp_path / "run").exists()


def test_a_truncated_checkpoint_is_refused_in_one_line_on_resume(tiny_bert, tmp_path):
    out = tmp_path / "run"
    train(tiny_bert, out)
    latest = out / "checkpoints" / "last.ckpt"
    latest.write_bytes(latest.read_bytes()[:1000])
    with pytest.raises(InputError, match="is not a complete checkpoint") as refused:
        train(tiny_bert, out, max_steps=4)
    assert str(out / "checkpoints") in str(refused.value) and "--overwrite" in str(refused.value)
