"""kill -9 a training run midway, resume it, and get what an uninterrupted run gets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from training_run import run

import ctxsent
from ctxsent.saving import UnfinishedRunWarning, is_model_folder

CHILD = Path(__file__).with_name("training_run.py")


def kill_after_first_checkpoint(tiny_bert: Path, out: Path, arch: str) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(tiny_bert), str(out), "0.1", arch],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    checkpoint = out / "checkpoints" / "last.ckpt"
    deadline = time.monotonic() + 300  # only a stuck child takes this long
    while not checkpoint.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # a little further into the run: steps, maybe a checkpoint half-written
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert checkpoint.exists()


@pytest.fixture
def one_thread():
    """The child trains on one thread; so do the resumed and the uninterrupted run here, so
    that neither compares sums taken in another order (torch's thread count is per process
    and other tests change it)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("arch", ["cross-encoder", "bi-encoder"])
def test_nothing_half_written_looks_complete_and_resume_matches(
    tiny_bert, tmp_path, monkeypatch, one_thread, arch
):
    interrupted = tmp_path / "interrupted"
    kill_after_first_checkpoint(tiny_bert, interrupted, arch)

    # Whatever the kill left: a model folder is complete (and says its run did not finish),
    # a checkpoint is loadable.
    assert json.loads((interrupted / "run.json").read_text())["status"] == "running"
    for path in interrupted.rglob("*"):
        if path.is_dir() and is_model_folder(path):
            assert path == interrupted / "model"
            with pytest.warns(UnfinishedRunWarning):
                ctxsent.load(path)
    for checkpoint in (interrupted / "checkpoints").glob("*.ckpt"):
        assert "global_step" in torch.load(checkpoint, weights_only=False, map_location="cpu")

    from ctxsent.training.as2_finetune import As2FineTuneModule

    steps: list[int] = []
    monkeypatch.setattr(
        As2FineTuneModule, "on_train_batch_end", lambda self, *_: steps.append(self.global_step)
    )
    resumed = run(tiny_bert, interrupted, arch=arch)
    monkeypatch.undo()
    assert steps, "the resumed run trained no step: no mid-run checkpoint was written"
    assert steps[0] > 1 and steps[-1] == 24 and len(steps) == 25 - steps[0]  # went on, not over
    uninterrupted = run(tiny_bert, tmp_path / "uninterrupted", arch=arch)
    assert json.loads((interrupted / "run.json").read_text())["status"] == "finished"
    assert not list(interrupted.glob(".*.tmp"))  # staging left by the kill is gone
    assert resumed["step"] == uninterrupted["step"]
    assert resumed["dev"] == pytest.approx(uninterrupted["dev"], abs=1e-6)
    weights = [
        load_file(tmp_path / run_dir / "model" / "model.safetensors")
        for run_dir in ("interrupted", "uninterrupted")
    ]
    for name, tensor in weights[1].items():
        assert torch.allclose(weights[0][name], tensor, atol=1e-6), name
    final = [
        torch.load(tmp_path / d / "checkpoints" / "last.ckpt", weights_only=False)
        for d in ("interrupted", "uninterrupted")
    ]
    assert final[0]["global_step"] == final[1]["global_step"]
    for name, tensor in final[1]["state_dict"].items():
        assert torch.allclose(final[0]["state_dict"][name], tensor, atol=1e-6), name
