"""The command line fails early and in one line (issue 26 items 11-14): outputs are checked
before anything loads, option values against their ranges, OS errors name their path, and
foreign model folders, unreachable models and misplaced inputs say what was expected."""

from __future__ import annotations

import builtins
import errno
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from test_model_folders import write_trap
from typer.testing import CliRunner

import ctxsent
import ctxsent.io
from ctxsent.cli import app
from ctxsent.errors import InputError, ModelFolderError
from ctxsent.io import check_writable
from ctxsent.saving import MANIFEST
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from synthetic import synthetic_as2

runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(arg) for arg in args])


def error_line(result) -> str:
    """The one ``error: ...`` line of a command that failed with exit code 2."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def usage_error(result) -> str:
    """A usage error's text without the box drawn around it (exit code 2)."""
    assert result.exit_code == 2, result.output
    return " ".join(re.sub("[│╭╮╰╯─]", " ", result.stderr).split())


# ---- 11: outputs are checked before anything loads; OS errors end in one line ---------------

#: Every command with an output, with inputs that do not exist: had it loaded anything
#: before checking OUT, its error would name the missing input instead.
OUTPUT_COMMANDS = {
    "finetune-as2": ["finetune", "as2", "--data", "jsonl:{missing}", "--out", "{out}"],
    "finetune-cross-thought": [
        "finetune", "cross-thought", "--task", "as2", "--init", "{missing}",
        "--data", "jsonl:{missing}", "--out", "{out}",
    ],
    "pretrain-cross-thought": [
        "pretrain", "cross-thought", "--preset", "mlm-1-64-cpu", "--data", "{missing}",
        "--out", "{out}",
    ],
    "pretrain-data-cross-thought": [
        "pretrain-data", "cross-thought", "--preset", "mlm-1-64-cpu", "--corpus", "{missing}",
        "--out", "{out}",
    ],
    "pretrain-encoder": ["pretrain", "encoder", "rnn-cnn-small-cpu", "--data", "{missing}",
                         "--out", "{out}"],
    "pretrain-data-encoder": ["pretrain-data", "encoder", "--preset", "rnn-cnn-small-cpu",
                              "--corpus", "{missing}", "--out", "{out}"],
    "pretrain-ssp": ["pretrain", "ssp", "--data", "{missing}", "--out", "{out}"],
    "pretrain-data-ssp": ["pretrain-data", "ssp", "--corpus", "{missing}", "--out", "{out}"],
    "corpus-build": ["corpus", "build", "{missing}", "--out", "{out}"],
    "data-squad-as2": ["data", "squad-as2", "--squad", "{missing}", "--out", "{out}"],
    "export": ["export", "{missing}", "--out", "{out}"],
    "cascade-sequential": [
        "cascade", "sequential", "--stage", "{missing}", "--stage", "{missing}", "--out", "{out}",
    ],
    "eval-senteval": [
        "eval", "senteval", "--model", "{missing}", "--data", "{missing}", "--output", "{out}",
    ],
    "cascade-tune": [
        "cascade", "tune", "--model", "{missing}", "--data", "jsonl:{missing}", "--budget", "0.5",
        "--plot", "{out}",
    ],
}  # fmt: skip
FILE_OUTPUTS = {"eval-senteval", "cascade-tune"}


def command(name: str, tmp_path: Path, out: Path) -> list[str]:
    return [a.format(missing=tmp_path / "missing", out=out) for a in OUTPUT_COMMANDS[name]]


@pytest.mark.parametrize("name", OUTPUT_COMMANDS)
def test_an_output_in_a_folder_one_may_not_write_is_refused_first(name, tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)  # root may write anyway: os.access answers as for another user
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != locked and real_access(p, mode))
    try:
        line = error_line(invoke(*command(name, tmp_path, locked / "out")))
    finally:
        locked.chmod(0o700)
    assert line == f"error: {locked}: cannot write in this folder (permission denied)"


@pytest.mark.parametrize("name", sorted(set(OUTPUT_COMMANDS) - FILE_OUTPUTS))
@pytest.mark.parametrize("below", [False, True], ids=["file", "below-a-file"])
def test_a_file_where_an_output_folder_goes_is_refused_first(name, below, tmp_path):
    file = tmp_path / "notes.txt"
    file.write_text("mine")
    line = error_line(invoke(*command(name, tmp_path, file / "run" if below else file)))
    assert line.startswith(f"error: {file}: ") and "is a file" in line
    assert file.read_text() == "mine"


@pytest.mark.parametrize("name", sorted(FILE_OUTPUTS))
def test_a_folder_where_an_output_file_goes_is_refused_first(name, tmp_path):
    folder = tmp_path / "report"
    folder.mkdir()
    line = error_line(invoke(*command(name, tmp_path, folder)))
    assert line == f"error: {folder}: is a folder; expected a file"


def test_the_current_folder_and_the_root_can_be_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check_writable(".", folder=True)  # it has no parents: its own folder is the nearest
    check_writable("run", folder=True)
    with pytest.raises(InputError, match="is a folder; expected a file"):
        check_writable("/", folder=False)


class _FullDisk:
    """A file opened for writing on a disk that fills up after ``room`` characters."""

    def __init__(self, handle, room: int) -> None:
        self.handle, self.room = handle, room

    def write(self, text: str) -> int:
        if len(text) > self.room:
            self.handle.write(text[: self.room])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(text)
        return self.handle.write(text)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()

    def __getattr__(self, name: str):
        return getattr(self.handle, name)


def test_a_full_disk_ends_in_one_line_naming_the_output_and_leaves_nothing(tmp_path, monkeypatch):
    context = "The keeper lit the lamp. Ships passed the rock."
    qas = [
        {"id": "1", "question": "Who lit it?", "answers": [{"text": "keeper", "answer_start": 4}]}
    ]
    articles = [
        {"title": f"T{i}", "paragraphs": [{"context": context, "qas": qas}]} for i in range(9)
    ]
    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps({"data": articles, "version": "1.1"}))

    def open_on_a_full_disk(file, mode="r", *args, **kwargs):
        handle = builtins.open(file, mode, *args, **kwargs)  # noqa: SIM115 (returned)
        return _FullDisk(handle, room=100) if "w" in mode else handle

    monkeypatch.setattr(ctxsent.io, "open", open_on_a_full_disk, raising=False)
    out = tmp_path / "as2"
    line = error_line(invoke("data", "squad-as2", "--squad", squad, "--out", out))
    assert line == f"error: {out / 'train.jsonl'}: No space left on device"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["squad.json"]


def test_an_output_whose_temporary_folder_cannot_be_made_is_named_not_the_temporary(
    tmp_path, monkeypatch
):
    import tempfile

    def refused(prefix, suffix, dir):  # as in /proc: the folder exists, nothing may be made
        raise OSError(errno.ENOENT, "No such file or directory", f"{dir}/{prefix}x1{suffix}")

    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    out = tmp_path / "x"
    with pytest.raises(OSError) as failed, ctxsent.io.atomic_path(out, "export"):
        pass
    assert failed.value.filename == str(out) and ".tmp" not in str(failed.value)


# ---- 12: option values are checked against their ranges when a command starts ---------------

FINETUNE = ["finetune", "as2", "--data", "jsonl:{missing}", "--out", "{tmp}/run"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([*FINETUNE, "--batch-size", "0"], "greater than or equal to 1"),
        ([*FINETUNE, "--batch-size", "-8"], "greater than or equal to 1"),
        ([*FINETUNE, "--eval-every", "0"], "greater than or equal to 1"),
        ([*FINETUNE, "--precision", "fp8"], "'fp8' is not one of 'auto', 'fp32', 'bf16', 'fp16'"),
        ([*FINETUNE, "--max-length", "2"], "greater than or equal to 8"),
        ([*FINETUNE, "--lr", "-1"], "must be > 0, got -1.0"),
        ([*FINETUNE, "--accelerator", "tpu"], "'tpu' is not one of 'auto', 'cpu', 'gpu', 'cuda'"),
        ([*FINETUNE, "--devices", "0"], "expected auto, a count >= 1, -1 (all) or ids like 0,1"),
        ([*FINETUNE, "--loss", "hinge"], "'hinge' is not one of 'pointwise', 'listwise'"),
        (["rank", "--question", "q?", "--document", "{tmp}/d.txt", "--top-k", "-1"], "equal to 1"),
        (
            ["finetune", "cross-thought", "--task", "as2", "--init", "backbone", "--out",
             "{tmp}/ct", "--eval-every", "0"],
            "greater than or equal to 1",
        ),
        (["eval", "senteval", "--model", "random", "--setting", "paper"], "'paper' is not one"),
        (["export", "{missing}", "--out", "{tmp}/x", "--to", "tflite"], "'tflite' is not one"),
    ],
)  # fmt: skip
def test_bad_option_values_are_refused_with_the_valid_range(args, expected, tmp_path):
    args = [a.format(missing=tmp_path / "missing", tmp=tmp_path) for a in args]
    option = next(a for a in reversed(args) if a.startswith("--"))
    text = usage_error(invoke(*args))
    assert f"Invalid value for '{option}'" in text and expected in text


#: Numeric options for which 0 means something (a seed, no filter, no warm-up, no SSP loss).
ZERO_IS_MEANINGFUL = {
    "--seed", "--min-sentence-chars", "--min-paragraph-chars", "--min-document-chars",
    "--warmup-steps", "--warmup-ratio", "--ssp-weight",
}  # fmt: skip


def numeric_options() -> list[tuple[tuple[str, ...], str]]:
    """``(command path, option)`` of every int or float option of every command but serve."""

    def walk(command, path):
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                if name != "serve":  # its own options are checked where it lives
                    yield from walk(sub, (*path, name))
            return
        for param in command.params:
            if param.param_type_name == "option" and param.type_descriptor.annotation in (
                int,
                float,
            ):
                yield path, param.opts[0]

    return list(walk(typer.main.get_command(app), ()))


@pytest.mark.parametrize(
    ("path", "option"), numeric_options(), ids=lambda x: x if isinstance(x, str) else " ".join(x)
)
def test_every_size_count_step_and_rate_refuses_meaningless_values(path, option):
    for value in ("-1",) if option in ZERO_IS_MEANINGFUL else ("0", "-1"):
        text = usage_error(invoke(*path, option, value))
        assert f"Invalid value for '{option}'" in text, (value, text)


def float_options() -> list[tuple[tuple[str, ...], str]]:
    """``(command path, option)`` of every float option of every command, serve's too."""

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, (*path, name))
        for param in command.params:
            if param.param_type_name == "option" and param.type_descriptor.annotation is float:
                yield path, param.opts[0]

    return list(walk(typer.main.get_command(app), ()))


@pytest.mark.parametrize(
    ("path", "option"), float_options(), ids=lambda x: x if isinstance(x, str) else " ".join(x)
)
def test_every_float_option_refuses_nan_and_infinity(path, option):
    for value in ("nan", "inf", "-inf"):
        text = usage_error(invoke(*path, option, value))
        assert f"Invalid value for '{option}'" in text, (value, text)


def test_the_float_options_include_the_services_timeouts():
    options = {option for _, option in float_options()}
    assert {"--timeout-s", "--read-timeout-s", "--max-wait-ms", "--lr"} <= options


CONFIG_CASES = [
    (
        "as2_finetune.As2TrainConfig",
        {"learning_rate": float("nan")},
        "learning_rate",
        "must be a finite number, got nan",
    ),
    ("as2_finetune.As2TrainConfig", {"max_grad_norm": float("inf")}, "max_grad_norm", "finite"),
    ("encoder_presets.EncoderPretrainConfig", {"max_minutes": float("inf")}, "max_minutes", "fin"),
    ("as2_finetune.As2TrainConfig", {"batch_size": 0}, "batch_size", "must be >= 1, got 0"),
    ("as2_finetune.As2TrainConfig", {"eval_every": 0}, "eval_every", "must be >= 1, got 0"),
    (
        "as2_finetune.As2TrainConfig",
        {"learning_rate": -1.0},
        "learning_rate",
        "must be > 0, got -1.0",
    ),
    ("as2_finetune.As2TrainConfig", {"warmup_ratio": 1.5}, "warmup_ratio", "must be >= 0 and <= 1"),
    (
        "as2_finetune.As2TrainConfig",
        {"precision": "fp8"},
        "precision",
        "one of auto, fp32, bf16, fp16",
    ),
    (
        "as2_finetune.As2TrainConfig",
        {"accelerator": "tpu"},
        "accelerator",
        "one of auto, cpu, gpu, cuda",
    ),
    ("as2_finetune.As2RankerSpec", {"max_length": 2}, "max_length", "must be >= 8, got 2"),
    (
        "cross_thought_train.CrossThoughtFineTuneConfig",
        {"eval_every": 0},
        "eval_every",
        "must be >= 1, got 0",
    ),
    (
        "cross_thought_train.CrossThoughtFineTuneConfig",
        {"negatives": 0},
        "negatives",
        "must be >= 1, got 0",
    ),
    (
        "cross_thought_presets.CrossThoughtPretrainConfig",
        {"max_steps": 0},
        "max_steps",
        "must be >= 1",
    ),
    (
        "cross_thought_presets.CrossThoughtPretrainConfig",
        {"precision": "fp8"},
        "precision",
        "one of auto",
    ),
    (
        "encoder_presets.EncoderPretrainConfig",
        {"batch_size": 0},
        "batch_size",
        "must be >= 1",
    ),
    (
        "encoder_presets.EncoderPretrainConfig",
        {"dropout": 1.0},
        "dropout",
        "< 1",
    ),
    (
        "ssp_pretrain.SspPretrainConfig",
        {"checkpoint_every": 0},
        "checkpoint_every",
        "must be >= 1, got 0",
    ),
    ("ssp_pretrain.SspPretrainConfig", {"accelerator": "tpu"}, "accelerator", "one of auto"),
]


@pytest.mark.parametrize(("factory", "settings", "field", "expected"), CONFIG_CASES)
def test_configs_refuse_bad_settings_naming_the_field_and_range(factory, settings, field, expected):
    import importlib

    module, name = factory.split(".")
    build = getattr(importlib.import_module(f"ctxsent.training.{module}"), name)
    with pytest.raises(InputError) as caught:
        build(**settings)
    assert f"field '{field}': " in str(caught.value) and expected in str(caught.value)


def _out_of_range(meta) -> list[float]:
    """A value just past each bound a setting declares."""
    values = [0] if meta.get("positive") else [meta["min"] - 1] if "min" in meta else []
    return values + ([meta["max"] + 1] if "max" in meta else [])


@pytest.mark.parametrize(
    "factory",
    [
        "as2_presets.As2TrainConfig",
        "as2_presets.As2RankerSpec",
        "cross_thought_presets.CrossThoughtPretrainConfig",
        "cross_thought_presets.CrossThoughtFineTuneConfig",
        "ssp_presets.SspPretrainConfig",
        "encoder_presets.EncoderPretrainConfig",
    ],
)
def test_every_range_a_setting_declares_is_enforced_by_its_config(factory):
    import dataclasses
    import importlib

    module, name = factory.split(".")
    build = getattr(importlib.import_module(f"ctxsent.training.{module}"), name)
    checked = 0
    for declared in dataclasses.fields(build):
        for value in _out_of_range(declared.metadata):
            with pytest.raises(InputError, match=f"field '{declared.name}': must be"):
                build(**{declared.name: value})
            checked += 1
    assert checked >= 2


# ---- 13: no tracebacks for wrong config types, deep JSON, unreachable models, pickles -------


@pytest.fixture
def ranker_folder(tiny_bert, tmp_path) -> Path:
    from ctxsent.models.cross_encoder import CrossEncoderRanker

    folder = tmp_path / "ranker"
    return CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32).save_pretrained(folder)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("max_length", "huge", "field 'max_length': expected int, got 'huge'"),
        ("max_length", True, "field 'max_length': expected int, got True"),
        ("contextual", "yes", "field 'contextual': expected bool, got 'yes'"),
        ("backbone", 7, "field 'backbone': expected str, got 7"),
    ],
)
def test_a_manifest_value_of_the_wrong_type_names_the_key_and_type(
    ranker_folder, key, value, expected
):
    path = ranker_folder / MANIFEST
    manifest = json.loads(path.read_text())
    manifest["config"][key] = value
    path.write_text(json.dumps(manifest))
    with pytest.raises(ModelFolderError, match=re.escape(expected)):
        ctxsent.load(ranker_folder)
    (ranker_folder.parent / "d.txt").write_text("The keeper lit the lamp.")
    line = error_line(
        invoke("rank", "--question", "who?", "--document", ranker_folder.parent / "d.txt",
               "--model", ranker_folder)
    )  # fmt: skip
    assert line.endswith(expected)


def test_a_json_line_nested_too_deeply_is_one_line_naming_file_and_line(tmp_path):
    data = tmp_path / "deep.jsonl"
    write_as2_jsonl(synthetic_as2(1, seed=0), data)
    with data.open("a") as handle:
        handle.write('{"question": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    line = error_line(invoke("eval", "as2", "--model", "bm25", "--data", f"jsonl:{data}"))
    assert line == f"error: {data}:5: JSON nested too deeply"


@pytest.mark.parametrize(
    "args",
    [
        ["rank", "--question", "who?", "--document", "{doc}", "--model", "bi-encoder:nobody/x"],
        ["finetune", "as2", "--data", "jsonl:{missing}", "--out", "{tmp}/run", "--init",
         "nobody/x"],
        ["export", "bi-encoder:nobody/x", "--out", "{tmp}/st", "--to", "sentence-transformers"],
    ],
    ids=["rank", "finetune", "export"],
)  # fmt: skip
def test_a_hub_id_the_offline_hub_does_not_have_says_what_to_pass(args, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    doc = tmp_path / "d.txt"
    doc.write_text("The keeper lit the lamp.")
    args = [a.format(doc=doc, tmp=tmp_path, missing=tmp_path / "missing") for a in args]
    line = error_line(invoke(*args))
    assert "'nobody/x' is not a local folder" in line and "offline" in line
    assert "a local model folder or all-MiniLM-L6-v2" in line


def test_a_backbone_folder_with_only_pickled_weights_is_refused_unread(tiny_bert, tmp_path):
    folder = Path(shutil.copytree(tiny_bert, tmp_path / "pickled"))
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "unpickled"
    write_trap(folder / "pytorch_model.bin", marker)
    doc = tmp_path / "d.txt"
    doc.write_text("The keeper lit the lamp.")
    line = error_line(
        invoke("rank", "--question", "who?", "--document", doc, "--model", f"bi-encoder:{folder}")
    )
    assert line.startswith(f"error: {folder}: ")
    assert "pickled weights" in line and "convert them to safetensors" in line
    assert not marker.exists()


# ---- 14: what was expected, not only what was found ------------------------------------------


def test_a_folder_named_like_a_data_file_says_it_is_a_folder(tmp_path):
    folder = tmp_path / "train.jsonl"
    write_as2_jsonl(synthetic_as2(2, seed=0), folder / "test.jsonl")
    finetune = ["finetune", "as2", "--out", tmp_path / "run"]
    line = error_line(invoke(*finetune, "--data", f"squad-as2:{folder}"))
    assert line == (
        f"error: {folder}: a folder named like a file: no squad-as2 file for split 'train' "
        "(expected train.jsonl); splits here: test"
    )
    line = error_line(invoke("eval", "as2", "--model", "bm25", "--data", folder))
    assert line == f"error: {folder}: is a folder; expected a file"


def test_rank_says_a_document_folder_is_not_a_file(tmp_path):
    line = error_line(invoke("rank", "--question", "who?", "--document", tmp_path))
    assert line == f"error: {tmp_path}: is a folder; expected a file"


def test_corpus_build_counts_documents_without_paragraph_breaks(tmp_path):
    sentence = "The keeper climbed the tower stairs every evening at dusk."
    (tmp_path / "wrapped.txt").write_text("\n".join([sentence] * 12) + "\n")
    (tmp_path / "parted.txt").write_text("\n\n".join([sentence * 2] * 6) + "\n")
    with pytest.warns(UserWarning, match="1 document.s. had no blank line between paragraphs"):
        result = invoke(
            "corpus", "build", tmp_path / "wrapped.txt", tmp_path / "parted.txt",
            "--out", tmp_path / "corpus", "--keep-evaluation-overlaps",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["read"]["documents"] == 2
    assert summary["read"]["documents_without_paragraph_breaks"] == 1


def test_loading_prints_no_progress_bars_when_stderr_is_not_a_terminal(tiny_bert, tmp_path):
    doc = tmp_path / "d.txt"
    doc.write_text("The keeper lit the lamp. Ships passed the rock.")
    env = {k: v for k, v in os.environ.items() if "PROGRESS_BARS" not in k}
    done = subprocess.run(
        [sys.executable, "-m", "ctxsent.cli", "rank", "--question", "who lit it?",
         "--document", str(doc), "--model", f"bi-encoder:{tiny_bert}"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Loading weights" not in done.stderr and "it/s" not in done.stderr
