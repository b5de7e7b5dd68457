"""Two DDP processes on CPU (gloo) follow the one-process loss trajectory for one global batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("ddp_run.py")


def trace(tiny_bert: Path, out: Path, devices: int) -> list[dict]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tiny_bert), str(out), str(devices)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "trace.json").read_text())


def test_two_ddp_processes_match_one_process_for_the_same_global_batch(tiny_bert, tmp_path):
    single = trace(tiny_bert, tmp_path / "single", devices=1)
    ddp = trace(tiny_bert, tmp_path / "ddp", devices=2)
    assert len(single) == len(ddp) == 4
    for one, two in zip(single, ddp, strict=True):
        first, second = two["examples"]
        assert not set(first) & set(second), "both ranks trained on the same examples"
        assert sorted(first + second) == sorted(one["examples"][0])
    losses = [step["loss"] for step in single]
    assert [step["loss"] for step in ddp] == pytest.approx(losses, abs=1e-5)
