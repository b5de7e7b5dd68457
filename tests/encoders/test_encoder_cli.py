import json

import numpy as np
import pytest
import typer
from encoder_data import synthetic_documents, write_corpus, write_word_vectors
from typer.testing import CliRunner

import ctxsent
from ctxsent.cli import pretrain, pretrain_data
from ctxsent.errors import InputError
from ctxsent.presets import get_preset, presets
from synthetic import script_evaluations

TINY = [
    "--set", "embedding_dim=16", "--set", "hidden_size=16", "--set", "ffn_size=32",
    "--set", "heads=2", "--set", "decoder_dims=8,16", "--set", "batch_size=8",
    "--set", "expand_vocabulary=10", "--set", "max_sentences=none", "--set", "target_length=6",
    "--set", "epochs=100",
]  # fmt: skip


@pytest.fixture
def cli():
    app = typer.Typer()
    app.command("data")(pretrain_data.encoder)
    app.command("pretrain")(pretrain.encoder)
    return app


@pytest.fixture
def inputs(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", synthetic_documents(8))
    return corpus, write_word_vectors(tmp_path / "vectors.txt", dim=16)


def run(cli, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=True)


@pytest.mark.parametrize("preset", ["rnn-cnn-small-cpu", "mean-max-aae-cpu"])
def test_cli_trains_saves_and_resumes(cli, inputs, tmp_path, preset):
    corpus, vectors = inputs
    data, out = tmp_path / "data", tmp_path / "run"
    built = run(cli, "data", "--preset", preset, "--corpus", corpus, "--out", data,
                "--set", "max_sentences=none", "--num-proc", 2)  # fmt: skip
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout)["sentences"] == 8 * 6
    common = ["pretrain", preset, "--data", data, "--out", out, "--word-vectors", vectors, *TINY]
    first = run(cli, *common, "--max-steps", 2, "--keep-checkpoints")
    assert first.exit_code == 0, first.output
    summary = json.loads((out / "run.json").read_text())
    assert summary["progress"]["steps"] == 2 and not summary["progress"]["resumed"]
    assert json.loads(first.stdout)["progress"] == summary["progress"]
    encoder = ctxsent.load(out / "model")
    assert encoder.encode(["the cat sat .", "novel1"]).shape == (2, encoder.dim)
    second = run(cli, *common, "--max-steps", 5)
    assert second.exit_code == 0, second.output
    resumed = json.loads((out / "run.json").read_text())["progress"]
    assert resumed["steps"] == 5 and resumed["resumed"]
    assert not (out / "checkpoints").exists()  # kept by the first run only
    changed = run(cli, *common, "--set", "hidden_size=8", "--max-steps", 6)
    assert isinstance(changed.exception, InputError) and "other settings" in str(changed.exception)


def test_cli_rejects_bad_input(cli, inputs, tmp_path):
    corpus, vectors = inputs
    bad_preset = run(cli, "pretrain", "no-such-preset", "--data", corpus, "--out", tmp_path / "a")
    assert isinstance(bad_preset.exception, InputError)
    not_data = run(cli, "pretrain", "rnn-cnn-small-cpu", "--data", corpus, "--out", tmp_path / "b")
    assert isinstance(not_data.exception, InputError)
    assert "not a pre-training data folder" in str(not_data.exception)
    not_corpus = run(cli, "data", "--preset", "rnn-cnn-small-cpu", "--corpus", tmp_path,
                     "--out", tmp_path / "c")  # fmt: skip
    assert isinstance(not_corpus.exception, InputError)
    assert "not a corpus" in str(not_corpus.exception)
    data = tmp_path / "data"
    built = run(cli, "data", "--preset", "rnn-cnn-small", "--corpus", corpus, "--out", data)
    assert built.exit_code == 0, built.output
    wrong_dim = run(
        cli, "pretrain", "rnn-cnn-small", "--data", data, "--out", tmp_path / "d",
        "--word-vectors", vectors,
    )  # fmt: skip
    assert isinstance(wrong_dim.exception, InputError) and "16-d" in str(wrong_dim.exception)
    listing = run(cli, "pretrain", "x", "--list")
    assert listing.exit_code == 0 and "mean-max-rae-cpu" in listing.output
    by_option = run(cli, "pretrain", "--preset", "rnn-cnn-small", "--data", data,
                    "--out", tmp_path / "e", "--word-vectors", vectors)  # fmt: skip
    assert "16-d" in str(by_option.exception)  # --preset names the preset as the argument does


def config(name: str):
    return get_preset(name, "encoder").config


def test_every_preset_has_a_cpu_variant_and_paper_values():
    names = [p.name for p in presets("encoder")]
    paper = [name for name in names if not name.endswith("-cpu")]
    assert all(f"{name}-cpu" in names for name in paper)
    small, large = config("rnn-cnn-small"), config("rnn-cnn-large")
    assert (small.hidden_size, large.hidden_size, small.learning_rate) == (300, 1200, 5e-4)
    assert (small.decoder_dims, small.target_length, small.batch_size) == ((600, 1200), 30, 512)
    aae = config("mean-max-aae")
    assert (aae.hidden_size, aae.ffn_size, aae.heads, aae.max_grad_norm) == (2048, 4096, 8, 5.0)
    assert config("mean-max-rae").architecture == "lstm"
    assert config("rnn-cnn-ar-cnn-us").input_mode == "uniform-sampling"


def test_cli_evaluates_during_training_and_keeps_the_best_encoder(
    cli, inputs, tmp_path, monkeypatch
):
    from ctxsent.training import encoder_pretrain

    corpus, vectors = inputs
    squad = tmp_path / "squad.json"
    paragraphs = [
        {"context": "the cat sat on the mat .", "qas": [{"question": "where did the cat sit ?"}]},
        {"context": "a dog ran in the park .", "qas": [{"question": "where did a dog run ?"}]},
    ]
    squad.write_text(json.dumps({"data": [{"title": "t", "paragraphs": paragraphs}]}))
    data, out = tmp_path / "data", tmp_path / "run"
    preset = "mean-max-aae-cpu"
    built = run(cli, "data", "--preset", preset, "--corpus", corpus, "--out", data,
                "--set", "max_sentences=none")  # fmt: skip
    assert built.exit_code == 0, built.output
    # 2 paragraphs put every gold one in the top 20: the script says which step is best
    made = script_evaluations(monkeypatch, encoder_pretrain, [40.0, 90.0, 60.0], "the cat")
    trained = run(cli, "pretrain", preset, "--data", data, "--out", out, "--word-vectors",
                  vectors, *TINY, "--max-steps", 6, "--eval", f"squad:{squad}",
                  "--eval-every", 2)  # fmt: skip
    assert trained.exit_code == 0, trained.output
    best = json.loads((out / "run.json").read_text())["best"]
    (evaluated,) = made
    assert [metrics["recall@20"] for metrics, _ in evaluated.seen] == [40.0, 90.0, 60.0]
    assert best["step"] == 4 and best["dev"]["recall@20"] == 90.0
    assert {"recall@1", "own_article_recall@1"} <= set(best["dev"])  # the real ranking's
    saved = ctxsent.load(out / "model").encode(["the cat"])
    np.testing.assert_allclose(saved, evaluated.seen[1][1], atol=1e-6)
    assert not np.allclose(saved, evaluated.seen[2][1], atol=1e-6)
    ranking = run(cli, "pretrain", preset, "--data", data, "--out", tmp_path / "other", *TINY,
                  "--eval", "as2:wikiqa:nowhere")  # fmt: skip
    assert isinstance(ranking.exception, InputError)
    assert "does not evaluate this model" in str(ranking.exception)
    assert not (tmp_path / "other").exists()
