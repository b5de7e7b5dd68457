import json
import sys
from dataclasses import asdict

import numpy as np
import pytest
from typer.testing import CliRunner

from ctxsent.cli import app
from ctxsent.evaluation.cascade_tuning import (
    best_within_budget,
    evaluate_setting,
    greedy_search,
    grid_search,
    simulate_cascade,
    tune_saved_cascade,
)
from synthetic import make_records


def test_simulation_reproduces_predict_exactly(cascade):
    records = make_records(questions=4, candidates=9)
    logits = cascade.predict_exits(records)
    ids = [r.question_id for r in records]
    depth = cascade.model.config.num_hidden_layers
    for alphas in ([0.0] * 4, [0.3] * 4, [0.5, 0.1, 0.0, 0.4]):
        scores = cascade.predict(records, alpha=alphas)
        simulated, cost = simulate_cascade(logits, ids, alphas, cascade.config.exits, depth)
        np.testing.assert_allclose(simulated, scores, rtol=1e-5)
        assert cost == pytest.approx(cascade.last_cost.relative)


def synthetic_exit_logits(questions=10, candidates=10, seed=0):
    """Later exits see the label more clearly than earlier ones."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(questions * candidates, dtype=int)
    labels[::candidates] = 1
    noise = [3.0, 2.0, 1.0, 0.5, 0.2]
    logits = np.stack([labels + rng.normal(0, s, labels.size) for s in noise])
    ids = [f"q{i // candidates}" for i in range(labels.size)]
    return logits, ids, labels.tolist()


EXITS = [2, 3, 4, 5, 6]


@pytest.fixture(scope="module")
def exit_logits():
    return synthetic_exit_logits()


@pytest.fixture(scope="module")
def grid(exit_logits):
    """Every setting of the paper's grid on ``exit_logits``, searched once for the module."""
    return grid_search(*exit_logits, EXITS, depth=6)


def test_grid_covers_the_papers_rates_and_budget_choice_is_feasible(grid):
    assert len(grid) == 7**4
    assert len({s.alphas for s in grid}) == 7**4
    chosen = best_within_budget(grid, budget=0.6)
    assert chosen.relative_cost <= 0.6
    assert all(s.metrics["map"] <= chosen.metrics["map"] for s in grid if s.relative_cost <= 0.6)
    assert best_within_budget(grid, budget=0.1) is None  # nothing is that cheap


def test_greedy_reaches_the_budget_and_never_beats_the_grid_optimum(exit_logits, grid):
    logits, ids, labels = exit_logits
    path = greedy_search(logits, ids, labels, EXITS, depth=6, budget=0.55)
    assert path[0].alphas == (0.0,) * 4 and path[0].relative_cost == pytest.approx(1.0)
    assert path[-1].relative_cost <= 0.55
    assert [s.relative_cost for s in path] == sorted((s.relative_cost for s in path), reverse=True)
    grid_best = best_within_budget(grid, 0.55)
    assert path[-1].metrics["map"] <= grid_best.metrics["map"] + 1e-12
    full = evaluate_setting(logits, ids, labels, [0.0] * 4, EXITS, 6)
    assert full.metrics["map"] >= grid_best.metrics["map"] - 0.2


def test_cascade_tune_cli_is_the_library_call(cascade, tmp_path):
    """``ctxsent cascade tune`` prints what :func:`tune_saved_cascade` returns, stores the
    same rates in its model, says on stderr which questions it dropped, and refuses a split
    of a file as ``load_as2`` does."""
    import pandas as pd

    for name in ("cli", "python"):
        cascade.save_pretrained(tmp_path / name)
    records = make_records(questions=7, candidates=8)
    records = [r for r in records if r.question_id != "q6" or not r.label]  # no positive
    data = pd.DataFrame([asdict(r) for r in records])
    data.rename(columns={"question": "Query", "candidate": "Passage"}).to_csv(
        tmp_path / "dev.csv", index=False
    )
    args = ["--data", str(tmp_path / "dev.csv"), "--columns", "question=Query,candidate=Passage"]
    args += ["--budget", "0.7", "--search", "greedy", "--questions", "4", "--accelerator", "cpu"]
    result = CliRunner().invoke(
        app, ["cascade", "tune", "--model", str(tmp_path / "cli"), *args,
              "--plot", str(tmp_path / "cli.png")]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = tune_saved_cascade(
        tmp_path / "python", str(tmp_path / "dev.csv"), 0.7, search="greedy", questions=4,
        columns={"question": "Query", "candidate": "Passage"}, accelerator="cpu",
        plot=tmp_path / "python.png",
    )  # fmt: skip
    assert json.loads(result.stdout) == report
    assert report["relative_cost"] <= 0.7 and report["saved"] and report["questions"] == 4
    assert report["dropped"] == {"questions": 1, "no_positive": 1, "only_positives": 0}
    assert result.stderr.startswith("dropped 1 question(s) without both labels (1 no positive")
    for name in ("cli", "python"):
        saved = json.loads((tmp_path / name / "ctxsent.json").read_text())
        assert saved["config"]["alphas"] == report["alphas"]
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    split = CliRunner().invoke(app, ["cascade", "tune", "--model", str(tmp_path / "cli"), *args,
                                     "--split", "dev"])  # fmt: skip
    assert split.exit_code == 2 and "a split ('dev') selects part of a dataset" in split.stderr


def test_cascade_tune_without_matplotlib_stops_before_any_work(cascade, tmp_path, monkeypatch):
    import ctxsent.evaluation.cascade_tuning as tuning
    from ctxsent.errors import InputError

    cascade.save_pretrained(tmp_path / "ct")
    before = {p.name: p.read_bytes() for p in (tmp_path / "ct").iterdir()}

    def work_started(*args, **kwargs):
        raise AssertionError("the model or the data was loaded")

    monkeypatch.setattr(tuning, "load", work_started)
    monkeypatch.setattr(tuning, "evaluation_records", work_started)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    with pytest.raises(InputError, match=r"field 'plot'.*matplotlib.*ctxsent\[bench\]"):
        tuning.tune_saved_cascade(tmp_path / "ct", "dev.jsonl", 0.7, plot=tmp_path / "fig.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ct"]  # no plot, no temporary file
    assert {p.name: p.read_bytes() for p in (tmp_path / "ct").iterdir()} == before
