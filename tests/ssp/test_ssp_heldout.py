import json

import numpy as np
import pytest
import torch
import typer
from ssp_corpus import documents, write_corpus
from typer.testing import CliRunner

from ctxsent.cli import evaluate, pretrain
from ctxsent.errors import InputError
from ctxsent.evaluation.ssp_heldout import roc_auc, unseen_indices
from ctxsent.objectives.ssp import SspConfig
from ctxsent.objectives.ssp_data import build_ssp_dataset, example_lengths, load_ssp_dataset
from ctxsent.training.sampling import StreamBatches
from ctxsent.training.ssp_pretrain import SspPretrainConfig, pretrain_ssp


@pytest.fixture(scope="module")
def ssp_data(tiny_bert, tmp_path_factory):
    corpus = write_corpus(tmp_path_factory.mktemp("corpus") / "c", documents(30, seed=2))
    out = tmp_path_factory.mktemp("ssp") / "dslc"
    build_ssp_dataset(corpus, out, SspConfig("dslc", block_size=8, max_length=64), str(tiny_bert))
    return out


def _lengths(data):
    return example_lengths(load_ssp_dataset(data)[0])


def test_unseen_examples_are_exactly_those_no_step_draws(ssp_data):
    lengths = _lengths(ssp_data)
    seen = {i for batch in StreamBatches(len(lengths), 8, 42, 5, lengths) for i in batch}
    unseen = unseen_indices(lengths, 8, 42, steps=5, count=10**6)
    assert len(seen) == 40 and not seen & set(unseen)
    assert len(seen) + len(unseen) == len(lengths)
    sample = unseen_indices(lengths, 8, 42, steps=5, count=12)
    assert len(sample) == 12 and set(sample) <= set(unseen) and sample == sorted(sample)
    assert sample == unseen_indices(lengths, 8, 42, steps=5, count=12)  # seeded
    # accumulated steps draw another stream (batches of 4, two a step): its unseen examples
    drawn = StreamBatches(len(lengths), 8, 42, 5, lengths, accumulate=2)
    seen_in_parts = {i for batch in drawn for i in batch}
    unseen_in_parts = unseen_indices(lengths, 8, 42, steps=5, count=10**6, accumulate=2)
    assert not seen_in_parts & set(unseen_in_parts)
    assert len(seen_in_parts) + len(unseen_in_parts) == len(lengths)


def test_roc_auc_counts_ties_as_half_and_needs_both_classes():
    labels = np.array([1, 0, 1, 0])
    assert roc_auc(labels, np.array([0.9, 0.1, 0.8, 0.2])) == 1.0
    assert roc_auc(labels, np.array([0.1, 0.9, 0.2, 0.8])) == 0.0
    assert roc_auc(labels, np.zeros(4)) == 0.5
    assert roc_auc(labels, np.array([0.5, 0.5, 0.9, 0.1])) == 0.875  # one tie of four pairs
    assert roc_auc(np.ones(3), np.arange(3.0)) is None


def test_pretraining_reports_heldout_ssp_and_the_cli_reproduces_it(ssp_data, tiny_bert, tmp_path):
    from ctxsent.models.cross_encoder import CrossEncoderRanker

    torch.manual_seed(0)
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=True, max_length=64)
    config = SspPretrainConfig(
        objective="dslc", batch_size=8, max_steps=4, warmup_steps=1, checkpoint_every=4,
        learning_rate=1e-3, max_length=64, accelerator="cpu", precision="fp32",
        heldout_examples=50,
    )  # fmt: skip
    result = pretrain_ssp(ssp_data, tmp_path / "run", config, ranker)
    heldout = result["metrics"]["heldout"]
    assert heldout["examples"] == 50 and 0 < heldout["positive_rate"] < 0.5
    assert heldout["majority_accuracy"] == pytest.approx(1 - heldout["positive_rate"], abs=1e-4)
    assert heldout["prior_log_loss"] > 0 and 0 <= heldout["auc"] <= 1
    stored = json.loads((tmp_path / "run" / "run.json").read_text())
    assert stored["metrics"]["heldout"] == heldout

    app = typer.Typer()
    app.command("ssp")(evaluate.ssp)
    app.command("other")(pretrain.ssp)
    runner = CliRunner()
    out = runner.invoke(app, ["ssp", "--run", str(tmp_path / "run"), "--examples", "50"])
    assert out.exit_code == 0, out.output
    again = json.loads(out.stdout)
    assert {k: again[k] for k in heldout} == pytest.approx(heldout, abs=1e-4)
    missing = runner.invoke(app, ["ssp", "--run", str(tmp_path)])
    assert isinstance(missing.exception, InputError)
    assert "not a finished SSP run" in str(missing.exception)
