"""Two DDP processes on CPU (gloo) follow the one-process loss trajectory for one global
batch, for every training objective: AS2 fine-tuning (cross-encoder, cascade, and the
listwise bi-encoder recipe with 3 questions a step, so that the ranks hold unequal shares
and only a mean over the global batch's questions agrees) and each pre-training objective
(SSP, ELECTRA + SSP, Cross-Thought, RNN-CNN, Mean-Max AAE), and ELECTRA + SSP with each
step's batch split in 2 (``--accumulate 2``: every loss part counted over the step's
batches of every rank).

A cascade trains one sampled exit per step (Cascade paper, 4.3.1), so a step leaves the
other exits' parameters without gradient: DDP must expect that, and every rank must
train the exit the one-process run trains. Pre-training draws its masks for the global
batch and averages over it (``ctxsent.objectives.global_batch``).

One launch of two ranks trains every kind (interpreter starts cost seconds each); the
one-process runs train in the test's own process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ddp_run import ACCUMULATED, AS2_KINDS, traced_runs
from pretraining_runs import PRETRAIN_KINDS, write_pretrain_data

SCRIPT = Path(__file__).with_name("ddp_run.py")
KINDS = AS2_KINDS + PRETRAIN_KINDS + list(ACCUMULATED)


@pytest.fixture(scope="module")
def pretrain_data(tiny_bert, tmp_path_factory) -> dict[str, str]:
    """A data folder per pre-training objective, from one corpus of 12 documents."""
    return write_pretrain_data(tiny_bert, tmp_path_factory.mktemp("ddp-data"))


@pytest.fixture(scope="module")
def ddp_traces(tiny_bert, pretrain_data, tmp_path_factory) -> dict[str, list[dict]]:
    out = tmp_path_factory.mktemp("ddp")
    data = Path(pretrain_data["ssp"]).parent / "data.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tiny_bert), str(out), "2", ",".join(KINDS), str(data)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {kind: json.loads((out / kind / "trace.json").read_text()) for kind in KINDS}


@pytest.mark.parametrize("kind", KINDS)
def test_two_ddp_processes_match_one_process_for_the_same_global_batch(
    tiny_bert, pretrain_data, tmp_path, ddp_traces, kind
):
    traced_runs(str(tiny_bert), tmp_path, 1, [kind], pretrain_data)
    single = json.loads((tmp_path / kind / "trace.json").read_text())
    ddp = ddp_traces[kind]
    accumulate = ACCUMULATED.get(kind, (kind, 1))[1]
    assert len(single) == len(ddp) == 4 * accumulate  # one trace a batch
    losses = [step["loss"] for step in single]
    # to 1e-5, relative for ELECTRA's loss of ~40 (RTD weighted 50): fp32 sums split in two
    assert [step["loss"] for step in ddp] == pytest.approx(losses, rel=1e-5, abs=1e-5)
    assert len(set(losses)) == 4 * accumulate  # the steps train: a frozen model could not tell
    if kind in PRETRAIN_KINDS or kind in ACCUMULATED:
        return
    for one, two in zip(single, ddp, strict=True):
        first, second = two["examples"]
        assert not set(first) & set(second), "both ranks trained on the same examples"
        assert sorted(first + second) == sorted(one["examples"][0])
    if kind == "cascade":  # every rank trains the exit the one-process run trains
        assert [step["exits"] * 2 for step in single] == [step["exits"] for step in ddp]
        assert {step["exits"][0] for step in single} == {0, 1}  # some steps leave exit 1 unused
