import json
import sys

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


def test_cascade_tune_cli_saves_rates_and_plots(cascade, tmp_path):
    from ctxsent.tasks.as2_jsonl import write_as2_jsonl

    cascade.save_pretrained(tmp_path / "ct")
    write_as2_jsonl(make_records(questions=6, candidates=8), tmp_path / "dev.jsonl")
    result = CliRunner().invoke(
        app,
        [
            "cascade", "tune", "--model", str(tmp_path / "ct"),
            "--data", f"jsonl:{tmp_path / 'dev.jsonl'}", "--budget", "0.7", "--search", "greedy",
            "--questions", "4", "--plot", str(tmp_path / "fig.png"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["relative_cost"] <= 0.7 and report["saved"] and report["questions"] == 4
    saved = json.loads((tmp_path / "ct" / "ctxsent.json").read_text())
    assert saved["config"]["alphas"] == report["alphas"]
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"


def test_cascade_tune_without_matplotlib_stops_before_any_work(cascade, tmp_path, monkeypatch):
    import ctxsent.models.registry
    import ctxsent.tasks.as2_load
    from ctxsent.cli import cascade as cascade_commands
    from ctxsent.errors import InputError

    cascade.save_pretrained(tmp_path / "ct")
    before = {p.name: p.read_bytes() for p in (tmp_path / "ct").iterdir()}

    def work_started(*args, **kwargs):
        raise AssertionError("the model or the data was loaded")

    monkeypatch.setattr(ctxsent.models.registry, "load_model_folder", work_started)
    monkeypatch.setattr(ctxsent.tasks.as2_load, "evaluation_records", work_started)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    with pytest.raises(InputError, match=r"field 'plot'.*matplotlib.*ctxsent\[bench\]"):
        cascade_commands.tune(
            model=tmp_path / "ct", data=f"jsonl:{tmp_path / 'dev.jsonl'}", budget=0.7,
            split="dev", questions=None, metric="map", search="greedy",
            plot=tmp_path / "fig.png", save=True, batch_size=64,
        )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ct"]  # no plot, no temporary file
    assert {p.name: p.read_bytes() for p in (tmp_path / "ct").iterdir()} == before
