"""kill -9 a training run midway, resume it, and get what an uninterrupted run gets."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from training_run import run

import ctxsent
from ctxsent.saving import UnfinishedRunWarning, is_model_folder

ARCHS = ["cross-encoder", "bi-encoder"]


def train_until_killed(tiny_bert: Path, out: Path, arch: str) -> None:
    """A forked child's run: one thread, as the resumed and the uninterrupted run here, and
    no output. Forked, it starts with this process's imports (an interpreter would spend
    seconds of CPU importing torch and Lightning)."""
    torch.set_num_threads(1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    run(tiny_bert, out, 0.1, arch)


@pytest.fixture(scope="module")
def killed(tiny_bert, tmp_path_factory) -> Path:
    """``ROOT/ARCH``: each architecture's run, killed (-9) a little after its first
    checkpoint; the children run side by side."""
    root = tmp_path_factory.mktemp("killed")
    fork = multiprocessing.get_context("fork")
    children = {
        arch: fork.Process(target=train_until_killed, args=(tiny_bert, root / arch, arch))
        for arch in ARCHS
    }
    for child in children.values():
        child.start()
    checkpointed: dict[str, float] = {}  # when the first checkpoint (or the end) was seen
    deadline = time.monotonic() + 300  # only a stuck child takes this long
    while any(child.exitcode is None for child in children.values()):
        for arch, child in children.items():
            if child.exitcode is not None:
                continue
            done = (root / arch / "checkpoints" / "last.ckpt").exists() or not child.is_alive()
            if done or time.monotonic() > deadline:
                checkpointed.setdefault(arch, time.monotonic())
            # a little further into the run: steps, maybe a checkpoint half-written
            if arch in checkpointed and time.monotonic() > checkpointed[arch] + 0.3:
                if child.is_alive():
                    os.kill(child.pid, signal.SIGKILL)
                child.join()
        time.sleep(0.05)
    for arch, child in children.items():
        assert child.exitcode == -signal.SIGKILL, f"the {arch} run ended before it was killed"
        assert (root / arch / "checkpoints" / "last.ckpt").exists()
    return root


@pytest.fixture
def one_thread():
    """The child trains on one thread; so do the resumed and the uninterrupted run here, so
    that neither compares sums taken in another order (torch's thread count is per process
    and other tests change it)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("arch", ARCHS)
def test_nothing_half_written_looks_complete_and_resume_matches(
    tiny_bert, killed, tmp_path, monkeypatch, one_thread, arch
):
    interrupted = killed / arch  # this test's alone

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
    runs = (interrupted, tmp_path / "uninterrupted")
    weights = [load_file(folder / "model" / "model.safetensors") for folder in runs]
    for name, tensor in weights[1].items():
        assert torch.allclose(weights[0][name], tensor, atol=1e-6), name
    final = [
        torch.load(folder / "checkpoints" / "last.ckpt", weights_only=False) for folder in runs
    ]
    assert final[0]["global_step"] == final[1]["global_step"]
    for name, tensor in final[1]["state_dict"].items():
        assert torch.allclose(final[0]["state_dict"][name], tensor, atol=1e-6), name
