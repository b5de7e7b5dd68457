"""Two DDP processes on CPU (gloo) follow the one-process loss trajectory for one global batch.

A cascade trains one sampled exit per step (Cascade paper, 4.3.1), so a step leaves the
other exits' parameters without gradient: DDP must expect that, and every rank must
train the exit the one-process run trains.

One launch of two ranks trains both kinds (interpreter starts cost seconds each); the
one-process runs train in the test's own process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ddp_run import traced_runs

SCRIPT = Path(__file__).with_name("ddp_run.py")
KINDS = ["cross-encoder", "cascade"]


@pytest.fixture(scope="module")
def ddp_traces(tiny_bert, tmp_path_factory) -> dict[str, list[dict]]:
    out = tmp_path_factory.mktemp("ddp")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tiny_bert), str(out), "2", ",".join(KINDS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {kind: json.loads((out / kind / "trace.json").read_text()) for kind in KINDS}


@pytest.mark.parametrize("kind", KINDS)
def test_two_ddp_processes_match_one_process_for_the_same_global_batch(
    tiny_bert, tmp_path, ddp_traces, kind
):
    traced_runs(str(tiny_bert), tmp_path, 1, [kind])
    single = json.loads((tmp_path / kind / "trace.json").read_text())
    ddp = ddp_traces[kind]
    assert len(single) == len(ddp) == 4
    for one, two in zip(single, ddp, strict=True):
        first, second = two["examples"]
        assert not set(first) & set(second), "both ranks trained on the same examples"
        assert sorted(first + second) == sorted(one["examples"][0])
    if kind == "cascade":  # every rank trains the exit the one-process run trains
        assert [step["exits"] * 2 for step in single] == [step["exits"] for step in ddp]
        assert {step["exits"][0] for step in single} == {0, 1}  # some steps leave exit 1 unused
    losses = [step["loss"] for step in single]
    assert [step["loss"] for step in ddp] == pytest.approx(losses, abs=1e-5)
