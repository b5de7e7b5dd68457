"""ctxsent never deletes what it did not write: output folders are replaced only when they
hold a ctxsent output of the same kind, or with ``--overwrite`` / ``overwrite=True``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ctxsent
from ctxsent.cli.cascade import sequential as cascade_sequential
from ctxsent.errors import InputError
from ctxsent.export import export_model
from ctxsent.io import OUTPUT_MARKER, atomic_path, atomic_write
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.tasks.squad_as2 import build_squad_as2
from ctxsent.training.as2_finetune import As2RankerSpec, finetune_as2


@pytest.fixture(scope="module")
def saved(tiny_bert, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("saved") / "model"
    return CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32).save_pretrained(folder)


@pytest.fixture
def thesis(tmp_path) -> Path:
    """A user's folder ``v`` holding ``thesis.txt``."""
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "thesis.txt").write_text("x\n")
    return tmp_path / "v" / "thesis.txt"


def refused(call, *args, **kwargs) -> str:
    with pytest.raises(InputError, match="pass --overwrite") as caught:
        call(*args, **kwargs)
    return str(caught.value)


def test_export_cli_refuses_a_users_folder_before_loading_the_model(thesis, tmp_path):
    absent = tmp_path / "no-model"  # loading it first would fail with another message
    done = subprocess.run(
        [sys.executable, "-m", "ctxsent.cli", "export", str(absent), "--to", "cross-encoder"]
        + ["--out", str(thesis.parent)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert str(thesis.parent) in done.stderr and "--overwrite" in done.stderr
    assert thesis.read_text() == "x\n"


def test_export_overwrite_replaces_then_re_export_needs_no_flag(saved, thesis):
    out = thesis.parent
    refused(export_model, str(saved), out, "cross-encoder")
    export_model(str(saved), out, "cross-encoder", overwrite=True)
    assert not thesis.exists() and (out / "config.json").is_file()
    export_model(str(saved), out, "cross-encoder")  # its own kind of output
    refused(export_model, str(saved), out, "onnx")  # another kind
    assert not [p for p in os.listdir(out.parent) if p != "v"]  # no temporary leftovers


def test_save_pretrained_keeps_a_strangers_file(saved, thesis):
    ranker = ctxsent.load(saved)
    assert str(thesis.parent) in refused(ranker.save_pretrained, thesis.parent)
    assert thesis.read_text() == "x\n" and os.listdir(thesis.parent) == ["thesis.txt"]
    ranker.save_pretrained(thesis.parent, overwrite=True)
    assert not thesis.exists()
    assert isinstance(ctxsent.load(thesis.parent), CrossEncoderRanker)


def test_a_model_replaces_its_own_folder_not_another_kind(saved, tiny_bert, tmp_path):
    ranker = ctxsent.load(saved)
    folder = ranker.save_pretrained(tmp_path / "model")
    ranker.save_pretrained(folder)
    (folder / OUTPUT_MARKER).unlink()  # a folder saved before markers: its manifest's kind
    ranker.save_pretrained(folder)
    cascade = CascadeRanker.from_backbone(str(tiny_bert), max_length=32)
    refused(cascade.save_pretrained, folder)
    assert isinstance(ctxsent.load(folder), CrossEncoderRanker)


def test_commands_check_their_output_before_any_work(thesis, tiny_bert, tmp_path):
    absent = tmp_path / "absent"
    refused(cascade_sequential, [absent, absent], thesis.parent)
    refused(build_squad_as2, absent, thesis.parent)
    (thesis.parent / "model").mkdir()
    (thesis.parent / "model" / "notes.txt").write_text("mine\n")
    refused(finetune_as2, As2RankerSpec(str(tiny_bert)), [], [], thesis.parent)
    assert sorted(os.listdir(thesis.parent)) == ["model", "thesis.txt"]


def test_file_outputs_never_replace_a_non_empty_folder(thesis, tmp_path):
    with pytest.raises(InputError, match="pass --overwrite"), atomic_write(thesis.parent):
        pass
    with pytest.raises(InputError, match="is a file"), atomic_path(thesis, "corpus"):
        pass
    (tmp_path / "empty").mkdir()
    with atomic_path(tmp_path / "empty", "corpus") as staged:
        staged.mkdir()
    assert os.listdir(tmp_path / "empty") == [OUTPUT_MARKER]
    assert thesis.read_text() == "x\n"


def test_staging_a_killed_write_left_is_removed_by_the_next_write_of_that_output(tmp_path):
    (tmp_path / ".report.json.k2j1.tmp" / "report.json").mkdir(parents=True)
    (tmp_path / ".other.json.k2j1.tmp").mkdir()
    with atomic_write(tmp_path / "report.json") as handle:
        handle.write("{}")
    assert sorted(os.listdir(tmp_path)) == [".other.json.k2j1.tmp", "report.json"]


def _commands(absent: Path, out: Path) -> dict[str, list[str]]:
    """Every command that writes an ``--out`` folder, with inputs that do not exist: the
    output is checked before them."""
    a, o = str(absent), str(out)
    return {
        "corpus build": ["corpus", "build", a, "--out", o],
        "data squad-as2": ["data", "squad-as2", "--squad", a, "--out", o],
        "pretrain-data cross-thought": ["pretrain-data", "cross-thought", "--corpus", a,
                                        "--out", o, "--preset", "cross-thought-1-64"],
        "pretrain-data encoder": ["pretrain-data", "encoder", "--corpus", a, "--out", o,
                                  "--preset", "rnn-cnn-small-cpu"],
        "pretrain-data ssp": ["pretrain-data", "ssp", "--corpus", a, "--out", o],
        "pretrain cross-thought": ["pretrain", "cross-thought", "--preset",
                                   "cross-thought-1-64", "--data", a, "--out", o],
        "pretrain encoder": ["pretrain", "encoder", "rnn-cnn-small-cpu", "--data", a, "--out", o],
        "pretrain ssp": ["pretrain", "ssp", "--data", a, "--out", o],
        "finetune as2": ["finetune", "as2", "--data", f"wikiqa:{a}", "--out", o],
        "finetune cross-thought": ["finetune", "cross-thought", "--task", "as2", "--init", a,
                                   "--out", o],
        "cascade sequential": ["cascade", "sequential", "--stage", a, "--stage", a, "--out", o],
        "pipeline build": ["pipeline", "build", "--retriever", "bm25", "--reranker", a,
                           "--top-k", "5", "--out", o],
        "export": ["export", a, "--to", "cross-encoder", "--out", o],
    }  # fmt: skip


@pytest.mark.parametrize("command", list(_commands(Path("a"), Path("o"))))
def test_every_commands_out_refuses_a_folder_of_other_files_in_one_line(
    command, tmp_path, monkeypatch, capsys
):
    from ctxsent.cli import main

    out = tmp_path / "mine"
    (out / "model").mkdir(parents=True)
    for name in ("thesis.txt", ".draft.tmp", ".model.x1.tmp", "model/notes.txt", "run.lock"):
        (out / name).write_text("mine\n")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    monkeypatch.setattr(sys, "argv", ["ctxsent", *_commands(tmp_path / "absent", out)[command]])
    with pytest.raises(SystemExit) as exited:
        main()
    error = capsys.readouterr().err.strip()
    assert exited.value.code == 2 and error.count("\n") == 0, error
    assert f"{out}: folder is not empty" in error and "--overwrite" in error
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
