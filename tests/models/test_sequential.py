"""The Sequential Ranker baseline (Cascade paper, section 4.2)."""

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import ctxsent
from ctxsent.cli import app
from ctxsent.errors import InputError
from ctxsent.evaluation.cascade_tuning import simulate_cascade
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.registry import load_model_folder
from ctxsent.models.sequential import SequentialRanker, build_sequential
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from synthetic import make_records, make_tiny_bert


@pytest.fixture(scope="module")
def stage_folders(tmp_path_factory):
    """Two saved pairwise rankers of depth 2 and 4 (independent random weights); tests only
    read them."""
    folders = []
    for layers in (2, 4):
        torch.manual_seed(layers)
        backbone = make_tiny_bert(tmp_path_factory.mktemp(f"bert{layers}"), layers=layers)
        ranker = CrossEncoderRanker.from_backbone(str(backbone), max_length=64)
        folders.append(ranker.save_pretrained(tmp_path_factory.mktemp("stages") / f"d{layers}"))
    return folders


@pytest.fixture
def sequential(stage_folders):
    return SequentialRanker([ctxsent.load(folder) for folder in stage_folders])


def test_alpha_zero_ranks_by_the_deepest_stage_at_summed_cost(sequential):
    records = make_records(questions=3, candidates=10)
    scores = sequential.predict(records, alpha=0.0)
    last = sequential.stages[-1].predict(records).astype(np.float64)
    np.testing.assert_allclose(scores, 1 + 1 / (1 + np.exp(-last)), rtol=1e-6)
    assert sequential.last_cost.relative == pytest.approx((2 + 4) / 4)


def test_drops_per_question_and_matches_the_simulation(sequential):
    records = make_records(questions=3, candidates=10)
    scores = sequential.predict(records, alpha=0.5)
    assert sequential.last_cost.candidates_per_exit == [30, 15]
    assert sequential.last_cost.relative == pytest.approx((2 * 30 + 4 * 15) / (4 * 30))
    stage_logits = np.stack([stage.predict(records) for stage in sequential.stages])
    ids = [r.question_id for r in records]
    expected, _ = simulate_cascade(stage_logits, ids, [0.5], [2, 4], 4)
    np.testing.assert_allclose(scores, expected, rtol=1e-6)
    for q in range(3):  # 5 survivors per question, all above the 5 dropped
        rows = scores[q * 10 : q * 10 + 10]
        assert (rows >= 1).sum() == 5 and rows[rows >= 1].min() > rows[rows < 1].max()


def test_save_load_round_trip_keeps_stages_and_alphas(sequential, tmp_path):
    sequential.alphas = [0.3]
    sequential.save_pretrained(tmp_path / "seq")
    loaded = ctxsent.load(tmp_path / "seq")
    assert isinstance(loaded, SequentialRanker)
    assert loaded.alphas == [0.3] and loaded.depths == [2, 4]
    records = make_records(questions=2)
    np.testing.assert_allclose(
        loaded.predict(records), sequential.predict(records), rtol=1e-6, atol=1e-8
    )


def test_bad_stage_lists_are_rejected(stage_folders):
    shallow, deep = (ctxsent.load(folder) for folder in stage_folders)
    with pytest.raises(InputError, match="at least 2"):
        SequentialRanker([deep])
    with pytest.raises(InputError, match="shallower"):
        SequentialRanker([deep, shallow])
    with pytest.raises(InputError, match="mix pairwise and contextual"):
        SequentialRanker([shallow, deep.with_context(True)])


def test_cli_assembles_then_evaluates_with_alpha(stage_folders, tmp_path):
    write_as2_jsonl(make_records(questions=4, candidates=6), tmp_path / "test.jsonl")
    out = tmp_path / "seq"
    runner = CliRunner()
    built = runner.invoke(
        app, ["cascade", "sequential", *[f"--stage={f}" for f in stage_folders], "--out", str(out)]
    )
    assert built.exit_code == 0, built.output
    assert json.loads(built.output)["depths"] == [2, 4]
    build_sequential(stage_folders, tmp_path / "python", load_model_folder)  # the command's call
    manifests = [
        json.loads((folder / "ctxsent.json").read_text()) for folder in (out, tmp_path / "python")
    ]
    assert manifests[0] == manifests[1]
    evaluated = runner.invoke(
        app,
        [
            "eval",
            "as2",
            "--model",
            str(out),
            "--data",
            f"jsonl:{tmp_path}/test.jsonl",
            "--alpha",
            "0.5",
            "--all",
        ],
    )
    assert evaluated.exit_code == 0, evaluated.output
    report = json.loads(evaluated.output)
    assert report["candidates_per_exit"] == [24, 12]
    assert report["relative_cost"] == pytest.approx((2 * 24 + 4 * 12) / (4 * 24))
