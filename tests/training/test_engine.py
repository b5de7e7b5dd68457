"""The one training engine: early stopping on an evaluator's primary metric, the best model
kept, named losses logged, tokens counted, a resumed run going on from its checkpoint."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

import pytest
import torch
from torch.utils.data import DataLoader

from ctxsent.training.engine import Evaluation, OptimizerSettings, train_objective
from ctxsent.training.settings import RunSettings


class Toy(torch.nn.Module):
    """A one-weight objective: ``loss`` its square, a named part and a token count."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor([3.0]))

    def forward(self, batch, generator=None) -> dict:
        loss = (self.weight**2).sum()
        return {"loss": loss, "half": loss.detach() / 2, "tokens": torch.tensor(5)}


class Scripted:
    """An evaluator whose primary metric follows a script, one value per call."""

    primary_metric = "score"

    def __init__(self, scores: list[float]) -> None:
        self.scores, self.calls = scores, 0

    def __call__(self, model) -> dict:
        self.calls += 1
        return {"score": self.scores[self.calls - 1], "calls": float(self.calls)}


PLACEMENT = RunSettings(precision="fp32", accelerator="cpu", devices=1)


def _train(out, evaluation=None, steps=20):
    return train_objective(
        Toy(),
        DataLoader(range(steps), batch_size=None),
        out,
        PLACEMENT,
        OptimizerSettings(0.1, schedule="constant"),
        seed=0,
        max_steps=steps,
        evaluation=evaluation,
        log_every_n_steps=1,
    )


def test_stops_after_patience_evaluations_without_a_better_primary_metric(tmp_path):
    saved: list[int] = []
    evaluator = Scripted([0.1, 0.5, 0.3, 0.2, 0.9, 0.9])
    evaluation = Evaluation(
        evaluator, None, every=2, patience=2, on_best=lambda m, s: saved.append(s)
    )
    trained = _train(tmp_path / "run", evaluation)
    assert evaluator.calls == 4 and trained.steps == 8  # 0.3 and 0.2 after 0.5: stop
    assert saved == [2, 4]
    assert trained.best["step"] == 4 and trained.best["metrics"]["score"] == 0.5
    assert trained.metrics["dev_score"] == pytest.approx(0.2) and trained.metrics["dev_calls"] == 4
    assert trained.stopped == "patience"


def test_a_run_says_why_it_stopped(tmp_path):
    improving = Evaluation(Scripted([0.1, 0.2, 0.3, 0.4]), None, every=2, patience=1)
    assert _train(tmp_path / "steps", improving, steps=6).stopped == "max_steps"
    assert _train(tmp_path / "plain", steps=3).stopped == "max_steps"


def test_evaluates_after_the_last_step_and_at_the_start_when_asked(tmp_path):
    evaluator = Scripted([0.0, 0.1, 0.2, 0.3])
    evaluation = Evaluation(evaluator, None, every=4, at_start=True)
    trained = _train(tmp_path / "run", evaluation, steps=10)
    assert evaluator.calls == 4  # before step 1, after 4, after 8, after the last (10)
    assert trained.best["step"] == 10 and trained.steps == 10


def test_logs_named_losses_counts_tokens_and_resumes(tmp_path):
    out = tmp_path / "run"
    first = _train(out, steps=3)
    assert not first.resumed and first.module.tokens_seen == 15
    assert first.metrics["half"] == pytest.approx(first.metrics["train_loss"] / 2)
    more = _train(out, steps=5)  # the same folder, more steps: goes on from step 3
    assert more.resumed and more.steps == 5 and more.steps_this_run == 2
    assert more.module.tokens_seen == 25
    straight = _train(tmp_path / "straight", steps=5)
    assert torch.equal(more.module.objective.weight, straight.module.objective.weight)
    logged = (out / "logs").rglob("metrics.csv")
    assert any("half" in path.read_text().splitlines()[0] for path in logged)


def test_pretraining_runs_evaluate_and_keep_the_best(tmp_path):
    from ctxsent.training.encoder_presets import EncoderPretrainConfig
    from ctxsent.training.engine import pretraining_evaluation
    from ctxsent.training.runs import TrainingRun

    class Config:
        eval_every, checkpoint_every, patience = None, 3, None

    saved = []
    run = TrainingRun(tmp_path / "run", EncoderPretrainConfig(), "rnn-cnn")
    with run.started():
        evaluation = pretraining_evaluation(
            Config, Scripted([0.2, 0.1]), None, run.keep_best(lambda: saved.append(1))
        )
        assert evaluation.every == 3 and evaluation.monitor == "dev_score"
        evaluation.on_best({"score": 0.2}, 3)
    assert saved == [1]
    stored = json.loads((tmp_path / "run" / "run.json").read_text())
    assert stored["best"] == {"step": 3, "dev": {"score": 0.2}}
    assert pretraining_evaluation(Config, None, None, print) is None


class MeanTarget(torch.nn.Module):
    """``loss = (w - mean(batch))**2``; records each batch and its generator's seed."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.seen: list[list[float]] = []
        self.seeds: list[int] = []

    def forward(self, batch, generator=None) -> dict:
        self.seen.append(batch.tolist())
        self.seeds.append(generator.initial_seed())
        return {"loss": ((self.weight - batch.mean()) ** 2).sum()}


def _stream_run(out, steps: int, accumulate: int):
    from ctxsent.training.sampling import StreamBatches

    objective = MeanTarget()
    batches = StreamBatches(64, 8, 0, steps, accumulate=accumulate)
    trained = train_objective(
        objective,
        DataLoader(torch.arange(64.0), batch_sampler=batches),
        out,
        replace(PLACEMENT, accumulate=accumulate),
        OptimizerSettings(0.1, schedule="constant"),
        seed=0,
        max_steps=steps,
        checkpoint_every=2,
    )
    return trained, objective


def test_accumulated_steps_split_the_batch_and_resume_exactly(tmp_path):
    whole, objective = _stream_run(tmp_path / "whole", 4, accumulate=2)
    assert whole.steps == 4 and [len(b) for b in objective.seen] == [4] * 8
    assert len(set(objective.seeds)) == 8  # each part of a step draws its own
    _, plain = _stream_run(tmp_path / "plain", 4, accumulate=1)
    assert objective.seeds[::2] == plain.seeds  # the first part seeds as without accumulation
    _stream_run(tmp_path / "split", 2, accumulate=2)
    resumed, rest = _stream_run(tmp_path / "split", 4, accumulate=2)
    assert resumed.resumed and rest.seen == objective.seen[4:] and rest.seeds == objective.seeds[4:]
    assert torch.equal(rest.weight, objective.weight)


class TokenMean(torch.nn.Module):
    """``loss = mean over the batch's tokens of (w - token)**2`` (``global_mean`` of part
    ``tokens``); records each batch's tokens and the gradient of each backward pass."""

    def __init__(self, counted: bool) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.weight.register_hook(lambda grad: self.grads.append(float(grad)))
        self.seen: list[list[float]] = []
        self.grads: list[float] = []
        if counted:
            self.step_counts = lambda batch, generator: {"tokens": len(batch)}

    def forward(self, batch, generator=None) -> dict:
        from ctxsent.objectives.global_batch import global_mean

        self.seen.append(batch.tolist())
        total = ((self.weight - batch) ** 2).sum()
        return {"loss": global_mean(total, len(batch), part="tokens")}


def _token_mean_step(out, counted: bool) -> TokenMean:
    from ctxsent.training.sampling import StreamBatches

    rows = [torch.full((1 + r,), float(r)) for r in range(8)]  # row r: r+1 tokens of r
    objective = TokenMean(counted)
    batches = StreamBatches(8, 4, 0, 1, accumulate=2)  # one step of 2 batches of 2 rows
    train_objective(
        objective,
        DataLoader(rows, batch_sampler=batches, collate_fn=torch.cat),
        out,
        replace(PLACEMENT, accumulate=2),
        OptimizerSettings(0.1, schedule="constant"),
        seed=0,
        max_steps=1,
        checkpoints=False,
    )
    return objective


def test_an_accumulated_step_averages_over_all_its_tokens(tmp_path):
    counted = _token_mean_step(tmp_path / "counted", counted=True)
    assert len(counted.seen) == 2 and len(counted.seen[0]) != len(counted.seen[1])
    tokens = torch.tensor(counted.seen[0] + counted.seen[1])
    # d/dw of the step's token mean of (w - x)**2 at w = 0
    assert sum(counted.grads) == pytest.approx(float(-2 * tokens.mean()))
    means = _token_mean_step(tmp_path / "means", counted=False)  # no step_counts
    assert means.seen == counted.seen
    mean_of_means = sum(torch.tensor(batch).mean() for batch in means.seen) / 2
    assert sum(means.grads) == pytest.approx(float(-2 * mean_of_means))
    assert sum(means.grads) != pytest.approx(sum(counted.grads))


def test_a_batch_that_does_not_split_evenly_is_warned_about():
    from ctxsent.training.settings import warn_uneven_accumulation

    with pytest.warns(UserWarning, match="10 pairs does not divide by accumulate 3: .* = 9"):
        warn_uneven_accumulation(10, 3, "pairs")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_uneven_accumulation(9, 3, "pairs")
    from ctxsent.training.as2_finetune import As2TrainConfig, _train_batches
    from synthetic import synthetic_as2

    with pytest.warns(UserWarning, match="10 pairs does not divide by accumulate 3"):
        _train_batches(synthetic_as2(4, seed=0), As2TrainConfig(batch_size=10, accumulate=3))
