"""A quiet command line: a default fine-tune writes its progress as a few lines on a
non-terminal stderr, and no third-party tips, info lines or harmless warnings; ``-v``
shows them."""

from __future__ import annotations

import json
import logging
import re
import warnings
from dataclasses import replace
from types import SimpleNamespace

# imported at collection, Lightning's log handler writes to the real stderr, not a CliRunner's
import lightning.pytorch  # noqa: F401
import pytest
from typer.testing import CliRunner

from ctxsent.cli import app
from ctxsent.models.inference import progress_bar
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from synthetic import synthetic_as2

#: What a quiet fine-tune must not print (issue 41's list).
NOISE = ("Tip", "GPU available", "TPU available", "log_every_n_steps", "deprecated", "AMP")
PROGRESS = re.compile(r"\| *\d+/\d+ \[\d\d:\d\d")  # tqdm's "| 4/8 [00:05<..."


class Everything(logging.Handler):
    """Lightning's log records, wherever its own handler writes them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.parametrize("verbose", [False, True])
def test_a_default_fine_tune_prints_under_ten_lines_besides_progress(tmp_path, tiny_bert, verbose):
    train, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    write_as2_jsonl(synthetic_as2(8, seed=1), train)
    write_as2_jsonl(
        [replace(r, question_id="dev" + r.question_id) for r in synthetic_as2(2, 2)], dev
    )
    args = [
        "finetune", "as2", "--train", str(train), "--dev", str(dev),
        "--out", str(tmp_path / "run"), "--init", str(tiny_bert), "--max-steps", "2",
        "--eval-every", "1", "--batch-size", "8", "--max-length", "32",
    ]  # fmt: skip
    handler = Everything()
    loggers = [logging.getLogger(name) for name in ("lightning.pytorch", "lightning.fabric")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as warned:
            result = CliRunner().invoke(app, ["-v"] * verbose + args)
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"]  # stdout: the report alone
    lines = result.stderr.splitlines()
    progress = [line for line in lines if PROGRESS.search(line)]
    printed = [line for line in lines if line not in progress]
    printed += handler.lines + [str(w.message) for w in warned]
    shown = {line.split(":")[0] for line in progress}
    if verbose:  # third-party bars as they draw them (loading, saving), no evaluation bars
        assert "Epoch 0" in shown and not any(name.startswith("Valid") for name in shown)
    else:  # lines on a non-terminal, not redraws; only the training bar
        assert "\r" not in result.stderr and shown == {"Epoch 0"}
    noisy = [line for line in printed if any(noise in line for noise in NOISE)]
    if verbose:
        assert any("Tip" in line for line in noisy) and any("log_every" in line for line in noisy)
    else:
        assert len(printed) < 10 and not noisy, printed


def test_a_progress_bar_on_a_log_writes_a_line_at_start_every_interval_and_end(capsys, monkeypatch):
    import ctxsent.models.inference as inference

    now = [0.0]
    monkeypatch.setattr(inference, "time", SimpleNamespace(monotonic=lambda: now[0]))
    with progress_bar(total=4, desc="scoring", mininterval=0) as bar:
        for now[0] in (10, 31, 40):  # seconds: a line at 31 only
            bar.update()
        now[0] = 45
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in lines] == ["scoring"] * 3
    assert [line.split("|")[2].split()[0] for line in lines] == ["0/4", "2/4", "3/4"]


def test_an_onnx_export_hides_the_tracers_warnings_unless_verbose(tmp_path, tiny_bert):
    from ctxsent.models.cross_encoder import CrossEncoderRanker

    model = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32)
    model.save_pretrained(tmp_path / "model")
    for verbose in (False, True):
        args = ["export", str(tmp_path / "model"), "--out", str(tmp_path / "onnx"), "--overwrite"]
        with warnings.catch_warnings(record=True) as warned:
            result = CliRunner().invoke(app, ["-v"] * verbose + args)
        assert result.exit_code == 0, result.output
        traced = [w for w in warned if "trace" in str(w.message)]
        assert bool(traced) == verbose and result.stderr == ""
