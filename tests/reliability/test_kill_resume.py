"""kill -9 a training run midway, resume it, and get what an uninterrupted run gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from forked_runs import kill_after_first_checkpoint
from safetensors.torch import load_file
from training_run import run

import ctxsent
from ctxsent.saving import UnfinishedRunWarning, is_model_folder

ARCHS = ["cross-encoder", "bi-encoder"]


@pytest.fixture(scope="module")
def killed(tiny_bert, tmp_path_factory) -> Path:
    """``ROOT/ARCH``: each architecture's run, killed (-9) a little after its first
    checkpoint; the children run side by side."""
    root = tmp_path_factory.mktemp("killed")
    runs = {arch: (run, (tiny_bert, root / arch, 0.1, arch)) for arch in ARCHS}
    kill_after_first_checkpoint(runs, root)
    return root


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

    from ctxsent.training.engine import ObjectiveModule

    steps: list[int] = []
    monkeypatch.setattr(
        ObjectiveModule, "on_train_batch_end", lambda self, *_: steps.append(self.global_step)
    )
    resumed = run(tiny_bert, interrupted, arch=arch)
    monkeypatch.undo()
    assert steps, "the resumed run trained no step: no mid-run checkpoint was written"
    assert steps[0] > 1 and steps[-1] == 24 and len(steps) == 25 - steps[0]  # went on, not over
    uninterrupted = run(tiny_bert, tmp_path / "uninterrupted", arch=arch)
    assert json.loads((interrupted / "run.json").read_text())["status"] == "finished"
    assert not list(interrupted.glob(".*.tmp"))  # staging left by the kill is gone
    assert resumed["best"]["step"] == uninterrupted["best"]["step"]
    assert resumed["best"]["dev"] == pytest.approx(uninterrupted["best"]["dev"], abs=1e-6)
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
