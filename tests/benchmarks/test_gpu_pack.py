"""The GPU pack (benchmarks/gpu_pack): its dry run at toy sizes, and the time budget that
keeps the GPU run within its minutes."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsent.cli import app

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks" / "gpu_pack"))
import cli_runs  # noqa: E402
import pack  # noqa: E402


def _is_gone(pid: int) -> bool:
    """No such process, or only its exit status left (a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_a_command_running_at_the_deadline_is_stopped_with_its_process_group(tmp_path):
    pid_file = tmp_path / "pid"
    began = time.monotonic()
    with cli_runs.time_budget(began + 3), pytest.raises(cli_runs.OutOfTime, match="stopped"):
        cli_runs.run(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"])
    assert time.monotonic() - began < 30
    child = int(pid_file.read_text())
    for _ in range(50):  # the orphaned child is reaped by init soon after the kill
        if _is_gone(child):
            break
        time.sleep(0.1)
    assert _is_gone(child)


def test_after_the_deadline_no_command_starts_in_either_mode(tmp_path):
    marker = tmp_path / "ran"
    with cli_runs.time_budget(time.monotonic() - 1):
        with pytest.raises(cli_runs.OutOfTime, match="not started"):
            cli_runs.run(["touch", str(marker)])
        with cli_runs.in_process(), pytest.raises(cli_runs.OutOfTime, match="not started"):
            cli_runs.ctxsent("presets")
    assert not marker.exists()


def test_a_part_stopped_at_its_budget_keeps_what_finished_and_says_so():
    def part(report):
        report["first"] = cli_runs.run(["echo", "done"])
        report["second"] = cli_runs.run(["sleep", "60"])

    report: dict = {}
    pack.run_part(part, report, time.monotonic() + 3)

    assert report["first"] == "done\n" and "second" not in report
    assert report["stopped_at_budget"] is True and report["seconds"] < 30
    assert "error" not in report


def test_a_failing_part_is_recorded_and_a_job_waiting_on_a_failed_one_is_skipped():
    report: dict = {}
    failed = pack.guarded(report, lambda _: 1 / 0)
    waiting = pack.guarded(report, lambda needed: needed + 1, needs_result=True)
    results = cli_runs.run_in_order(
        [cli_runs.Job("a", failed), cli_runs.Job("b", waiting, needs="a")], workers=1
    )
    assert results == {"a": None, "b": None}
    assert report["errors"] == ["ZeroDivisionError: division by zero"]

    pack.run_part(lambda report: 1 / 0, report, time.monotonic() + 60)
    assert report["error"] == "ZeroDivisionError: division by zero"
    assert report["stopped_at_budget"] is False


def test_the_first_seeds_baselines_run_beside_the_pretraining_and_later_seeds_wait():
    # passes only if both pre-trainings and the first seed's four baselines run at once
    together = threading.Barrier(6, timeout=20)
    finished: list = []

    def pretrain(mlm_only):
        together.wait()
        finished.append(f"pretrain mlm={mlm_only}")
        return Path(f"checkpoint-{mlm_only}")

    def finetune(checkpoint, row, target, seed):
        if seed == 1 and row in pack.BASELINES:
            together.wait()
        finished.append((target, row, seed))
        return {"checkpoint": checkpoint}

    report: dict = {}
    jobs = pack.ssp_jobs(report, pretrain, finetune, seeds=(1, 2), targets=["wikiqa", "squad"])
    results = cli_runs.run_in_order(jobs, workers=6)

    assert "errors" not in report and len(finished) == 2 + 2 * 2 * len(pack.SSP_ROWS)
    needs = {job.key: job.needs for job in jobs}
    for target in ("wikiqa", "squad"):
        for row, checkpoint in (("contextual+ssp-dpc", False), ("contextual+mlm-dpc", True)):
            assert results[target, row, 1]["checkpoint"] == Path(f"checkpoint-{checkpoint}")
        assert needs[target, "contextual", 1] is None and needs[target, "pairwise", 1] is None
        assert needs[target, "contextual", 2] == needs[target, "pairwise", 2] == jobs[0].key
    for position, entry in enumerate(finished):  # a later seed's run after its pre-training
        if isinstance(entry, tuple) and entry[2] == 2:
            mlm_only = entry[1] == "contextual+mlm-dpc"
            assert finished.index(f"pretrain mlm={mlm_only}") < position


def test_keep_negatives_draws_that_many_negatives_per_question_and_keeps_the_order(tmp_path):
    source, target = tmp_path / "all", tmp_path / "kept"
    source.mkdir()
    lines = [
        json.dumps({"question_id": q, "candidate": f"{q}{i}", "label": int(i == 2)}) + "\n"
        for q in ("a", "b")
        for i in range(6)
    ]
    (source / "train.jsonl").write_text("".join(lines))
    for name in ("dev.jsonl", "test.jsonl", "summary.json", ".ctxsent-output"):
        (source / name).write_text(name)

    summary = pack.keep_negatives(source, target, negatives=2)

    kept = [json.loads(line) for line in (target / "train.jsonl").read_text().splitlines()]
    for question in ("a", "b"):
        rows = [row for row in kept if row["question_id"] == question]
        assert [row["label"] for row in rows].count(1) == 1 and len(rows) == 3
        assert [row["candidate"] for row in rows] == sorted(row["candidate"] for row in rows)
    assert summary == {"questions": 2, "pairs": 6, "negatives_per_question": 2}
    assert (target / "test.jsonl").read_text() == "test.jsonl"


@pytest.mark.integration
def test_the_tiny_bundle_runs_every_part_end_to_end(shared_data, tmp_path):
    """``pack.py build --tiny`` and the bundle's ``run.sh``, as on the GPU, at toy sizes
    (about a minute on two cores): every part finishes within its budget and reports."""
    bundle, work, out = tmp_path / "bundle", tmp_path / "work", tmp_path / "out"
    manifest = pack.build(bundle, shared_data, tiny=True)
    assert manifest["mib"] < pack.MAX_BUNDLE_MIB and (bundle / "run.sh").is_file()

    env = {**os.environ, "PYTHON": sys.executable, "PACK_WORK": str(work)}
    done = subprocess.run(
        ["bash", str(bundle / "run.sh"), str(out)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]

    results = json.loads((out / "results.json").read_text())
    assert list(results["parts"]) == ["prepare", "ssp", "cascade", "aae"]
    assert results["environment"]["imports_failing"] == {}
    for name, part in results["parts"].items():
        assert part["stopped_at_budget"] is False, name
        assert not {"error", "errors"} & part.keys(), (name, part.get("error"), part.get("errors"))
        assert 0 < part["seconds"] <= 60 * part["planned_minutes"]

    ssp = results["parts"]["ssp"]
    assert set(ssp["pretraining"]) == {"contextual+ssp-dpc", "contextual+mlm-dpc"}
    pretraining = ssp["pretraining"]["contextual+mlm-dpc"]
    assert pretraining["progress"]["steps"] == pack.TINY.pretrain_steps
    assert set(ssp["table"]) == {"wikiqa -> wikiqa test", "squad -> selqa test"}
    for rows in ssp["table"].values():
        assert set(rows) == set(pack.SSP_ROWS)
        for row, summary in rows.items():
            assert summary["seed_numbers"] == list(pack.TINY.seeds)
            assert ("paired_with_contextual" in summary) == (row != "contextual")

    cascade = results["parts"]["cascade"]
    assert set(cascade["training"]) == set(pack.CASCADE_MODELS)
    evaluations = cascade["evaluations"]
    for name in ("cascade_vs_pooled-6", "cascade_vs_mono-6"):
        assert evaluations[name]["alphas"] == [pack.TINY.alpha] * 4
        assert evaluations[name]["relative_cost"] < 1
        assert {"low", "high"} <= evaluations[name]["against"]["difference"]["p@1"].keys()
    assert cascade["cascade_over_pooled-6_speed"] > 0

    aae = results["parts"]["aae"]
    assert aae["training"]["progress"]["steps"] == 2
    # expanded from the bundle's GloVe rows, not the 400k of the installed package
    assert aae["training"]["data"]["saved_vocabulary"] < 20_000
    assert set(aae["sts"]) == {"mean-max-aae", "glove-bow"}
    for report in aae["sts"].values():
        assert set(report["tasks"]) == {"STSB", "STS12"}
    # the rows kept (in fp16) give GloVe BOW the scores of all 400k words
    args = ["eval", "senteval", "--model", "glove-bow", "--tasks", "STSB,STS12", "--no-cache"]
    full = CliRunner().invoke(app, [*args, "--data", str(shared_data), "--no-progress"])
    for task, scores in json.loads(full.stdout)["tasks"].items():
        pearson = aae["sts"]["glove-bow"]["tasks"][task]["pearson"]
        assert pearson == pytest.approx(scores["pearson"], abs=1e-3)

    # every default backbone was the bundle's, through the stand-in package
    model = work / "ssp" / "wikiqa-contextual-seed1" / "model"
    assert json.loads((model / "config.json").read_text())["hidden_size"] == 32
