"""kill -9 every pre-training run midway, resume it, and get what an uninterrupted run gets.

Each objective (SSP, ELECTRA + SSP, Cross-Thought, RNN-CNN, Mean-Max AAE) trains
:data:`STEPS` steps with a checkpoint every :data:`EVERY`, dropout on (seeded by the step).
A forked child of each, slowed down by a sleep per batch drawn, is killed (-9) a little
after its first checkpoint; each is then resumed in the test's process (on one thread, as
the children train) and compared with an uninterrupted run. The uninterrupted runs train
in forked children too, side by side with the killed ones, which mostly sleep.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from forked_runs import kill_after_first_checkpoint, start
from pretraining_runs import PRETRAIN_KINDS, pretrain, write_pretrain_data
from safetensors.torch import load_file

import ctxsent
from ctxsent.saving import UnfinishedRunWarning, is_model_folder

# imported here, before the fork, rather than by each child
from ctxsent.training import cross_thought_train, encoder_pretrain, ssp_pretrain  # noqa: F401
from ctxsent.training.sampling import StreamBatches

STEPS, EVERY = 12, 3
SLEEP = 0.15  # seconds per batch in a child to be killed: 9 steps after the first checkpoint
SEQUENCES = 2  # per Cross-Thought sample (the preset's 16 would make it the slowest by far)


@pytest.fixture(scope="module")
def pretrain_data(tiny_bert, tmp_path_factory) -> dict[str, str]:
    return write_pretrain_data(tiny_bert, tmp_path_factory.mktemp("pretrain-data"))


def train_slowly(kind: str, tiny_bert: Path, data: str, out: Path) -> None:
    """A child's run: it sleeps before each batch, which changes no number."""
    draw = StreamBatches.__iter__

    def slowly(self):
        for batch in draw(self):
            time.sleep(SLEEP)
            yield batch

    StreamBatches.__iter__ = slowly  # in the forked child only
    pretrain_with_settings(kind, tiny_bert, data, out)


def pretrain_with_settings(kind: str, tiny_bert: Path, data: str, out: Path) -> dict:
    return pretrain(kind, tiny_bert, data, out, STEPS, EVERY, sequences_per_sample=SEQUENCES)


@pytest.fixture(scope="module")
def runs(tiny_bert, pretrain_data, tmp_path_factory) -> Path:
    """``ROOT/killed/KIND``: each objective's run, killed (-9) a little after its first
    checkpoint; ``ROOT/uninterrupted/KIND``: the same run, left to finish. All ten in
    forked children, side by side (the killed ones mostly sleep)."""
    root = tmp_path_factory.mktemp("runs")
    uninterrupted = {
        kind: start(
            pretrain_with_settings,
            (kind, tiny_bert, pretrain_data[kind], root / "uninterrupted" / kind),
        )
        for kind in PRETRAIN_KINDS
    }
    killed = {
        kind: (train_slowly, (kind, tiny_bert, pretrain_data[kind], root / "killed" / kind))
        for kind in PRETRAIN_KINDS
    }
    try:
        kill_after_first_checkpoint(killed, root / "killed")
    finally:
        for child in uninterrupted.values():
            child.join(300)
    for kind, child in uninterrupted.items():
        assert child.exitcode == 0, f"the uninterrupted {kind} run failed"
    return root


def traced_pretrain(monkeypatch, *args) -> tuple[dict, list[int]]:
    """:func:`pretrain` and the steps whose batches its training drew: those of the first
    batch stream iterated (Lightning may iterate it more than once; SSP's held-out scoring
    iterates another stream at the end)."""
    draws: list[tuple[StreamBatches, int]] = []
    draw = StreamBatches.__iter__

    def traced(self):
        for step, batch in enumerate(draw(self), start=self.skip):
            draws.append((self, step))
            yield batch

    with monkeypatch.context() as patch:
        patch.setattr(StreamBatches, "__iter__", traced)
        summary = pretrain_with_settings(*args)
    return summary, [step for stream, step in draws if stream is draws[0][0]]


def assert_same_tensors(first: dict, second: dict, what: str) -> None:
    assert first.keys() == second.keys(), what
    for name, tensor in second.items():
        assert torch.allclose(first[name], tensor, atol=1e-6), f"{what}: {name}"


@pytest.mark.parametrize("kind", PRETRAIN_KINDS)
def test_a_killed_pretraining_run_leaves_no_half_written_state_and_resumes_exactly(
    tiny_bert, pretrain_data, runs, monkeypatch, one_thread, kind
):
    interrupted, uninterrupted = runs / "killed" / kind, runs / "uninterrupted" / kind

    # Whatever the kill left: a model folder is complete (and says its run did not finish),
    # a checkpoint is loadable; the run resumes from the newest, one of the mid-run ones.
    assert json.loads((interrupted / "run.json").read_text())["status"] == "running"
    for path in interrupted.rglob("*"):
        if path.is_dir() and is_model_folder(path):
            assert path == interrupted / "model"
            with pytest.warns(UnfinishedRunWarning):
                ctxsent.load(path)
    for checkpoint in (interrupted / "checkpoints").glob("*.ckpt"):
        assert "global_step" in torch.load(checkpoint, weights_only=False, map_location="cpu")
    last = interrupted / "checkpoints" / "last.ckpt"
    checkpointed = torch.load(last, weights_only=False, map_location="cpu")["global_step"]
    assert 0 < checkpointed < STEPS and checkpointed % EVERY == 0

    resumed, drawn = traced_pretrain(monkeypatch, kind, tiny_bert, pretrain_data[kind], interrupted)
    assert drawn == list(range(checkpointed, STEPS))  # went on from the checkpoint, not over
    progress = resumed["progress"]
    assert progress["steps"] == STEPS and progress["steps_this_run"] == STEPS - checkpointed
    assert progress["resumed"]
    assert json.loads((interrupted / "run.json").read_text())["status"] == "finished"
    assert not list(interrupted.glob(".*.tmp"))  # staging left by the kill is gone

    assert json.loads((uninterrupted / "run.json").read_text())["status"] == "finished"
    folders = [run / "model" for run in (interrupted, uninterrupted)]
    files = [sorted(path.name for path in folder.glob("*.safetensors")) for folder in folders]
    assert files[0] == files[1] and files[0]
    for name in files[0]:
        weights = [load_file(folder / name) for folder in folders]
        assert_same_tensors(*weights, f"{kind} {name}")
    final = [
        torch.load(run / "checkpoints" / "last.ckpt", weights_only=False, map_location="cpu")
        for run in (interrupted, uninterrupted)
    ]
    assert final[0]["global_step"] == final[1]["global_step"] == STEPS
    assert_same_tensors(final[0]["state_dict"], final[1]["state_dict"], f"{kind} checkpoint")
