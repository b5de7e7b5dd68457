"""The job runner that benchmark scripts use to chain ``ctxsent`` commands."""

import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from cli_runs import Job, run_in_order  # noqa: E402


def test_a_waiting_job_holds_no_worker_and_ready_jobs_keep_list_order():
    baselines_started = threading.Barrier(3, timeout=120)  # "a1", "b1", "pretrain"; ends a hang
    started: list[str] = []

    def record(name: str):
        def fn(needed):
            started.append(name)
            if name in ("pretrain", "a1", "b1"):
                # Passes only if all three run at once on the three workers: "s1", listed
                # before the baselines, must wait for "pretrain" without holding a worker.
                baselines_started.wait()
            return f"{name}<-{needed}"

        return fn

    jobs = [
        Job("pretrain", record("pretrain")),
        Job("s1", record("s1"), needs="pretrain"),
        Job("a1", record("a1")),
        Job("b1", record("b1")),
        Job("s2", record("s2"), needs="pretrain"),
    ]
    results = run_in_order(jobs, workers=3)

    assert started.index("b1") < started.index("s1") < started.index("s2")
    assert results["s2"] == "s2<-pretrain<-None" and results["a1"] == "a1<-None"


def test_a_failed_job_fails_its_dependants_and_is_raised_after_the_rest_ran():
    ran: list[str] = []

    def fail(_):
        raise RuntimeError("pretraining broke")

    jobs = [
        Job("pretrain", fail),
        Job("finetune", lambda needed: ran.append("finetune"), needs="pretrain"),
        Job("baseline", lambda _: ran.append("baseline")),
    ]
    with pytest.raises(RuntimeError, match="pretraining broke"):
        run_in_order(jobs, workers=2)
    assert ran == ["baseline"]


def test_needs_must_name_an_earlier_job():
    with pytest.raises(ValueError, match="'later'"):
        run_in_order([Job("first", lambda _: 1, needs="later"), Job("later", lambda _: 2)], 1)
