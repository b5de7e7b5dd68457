"""Each family's paper preset runs from the command line exactly as a GPU user starts it, here
for 20 steps on CPU with only the model's width and the batch made tiny (a paper batch of
4,096 examples or 4M tokens is no CPU test): data, model, optimiser, schedule, checkpoint and
saved model all come from the paper preset."""

from __future__ import annotations

import json
import random

import pytest
import torch
from typer.testing import CliRunner

from ctxsent.cli import app
from ctxsent.corpus import Document
from synthetic import write_corpus

STEPS = 20
TEXT = "the keeper of the old lighthouse saw a ship near the stone island at night"
ON_CPU = ["--accelerator", "cpu", "--precision", "fp32", "--max-steps", STEPS]
TINY_ENCODER = [
    "--set", "embedding_dim=8", "--set", "hidden_size=8", "--set", "ffn_size=16",
    "--set", "heads=2", "--set", "decoder_dims=8,16", "--set", "batch_size=8",
    "--set", "word_vectors=none", "--set", "expand_vocabulary=0", "--set", "vocab_size=30",
    "--set", "accelerator=cpu", "--max-steps", STEPS,
]  # fmt: skip
TINY_ELECTRA = [
    f"--set=electra.{key}={value}"
    for key, value in dict(hidden=32, layers=2, heads=2, intermediate=64, embedding=16).items()
]


def commands(corpus, tiny_bert, root) -> dict[str, list[list]]:
    """``pretrain-data`` then ``pretrain`` for one paper preset of each family."""
    data = {name: root / f"{name}-data" for name in ("ct", "ssp", "electra", "rnn", "aae")}
    return {
        "cross-thought-3-64": [
            ["pretrain-data", "cross-thought", "--corpus", corpus, "--out", data["ct"],
             "--preset", "cross-thought-3-64", "--backbone", tiny_bert],
            ["pretrain", "cross-thought", "--preset", "cross-thought-3-64", "--data", data["ct"],
             "--backbone", tiny_bert, "--set", "batch_size=2", "--set", "sequences_per_sample=4",
             *ON_CPU],
        ],
        "ssp-dpc": [
            ["pretrain-data", "ssp", "--corpus", corpus, "--out", data["ssp"],
             "--tokenizer", tiny_bert, "--block-size", 8],
            ["pretrain", "ssp", "--preset", "ssp-dpc", "--data", data["ssp"],
             "--backbone", tiny_bert, "--batch-size", 8, *ON_CPU],
        ],
        "ssp-dpc-electra": [
            ["pretrain-data", "ssp", "--corpus", corpus, "--out", data["electra"],
             "--train-tokenizer", 150, "--block-size", 8],
            ["pretrain", "ssp", "--preset", "ssp-dpc-electra", "--data", data["electra"],
             "--batch-size", 8, *TINY_ELECTRA, *ON_CPU],
        ],
        "rnn-cnn-small": [
            ["pretrain-data", "encoder", "--corpus", corpus, "--out", data["rnn"],
             "--preset", "rnn-cnn-small", "--set", "vocab_size=30"],
            ["pretrain", "encoder", "rnn-cnn-small", "--data", data["rnn"], *TINY_ENCODER],
        ],
        "mean-max-aae": [
            ["pretrain-data", "encoder", "--corpus", corpus, "--out", data["aae"],
             "--preset", "mean-max-aae", "--set", "vocab_size=30"],
            ["pretrain", "encoder", "mean-max-aae", "--data", data["aae"], *TINY_ENCODER],
        ],
    }  # fmt: skip


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models gain nothing from threads; one keeps a busy machine's spin-waits away."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = random.Random(0)
    words = TEXT.split()

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(4, 9))) + "."

    documents = [
        Document(str(d), f"Doc {d}", [[sentence() for _ in range(4)] for _ in range(4)])
        for d in range(16)
    ]
    return write_corpus(tmp_path_factory.mktemp("paper") / "corpus", documents)


@pytest.mark.parametrize(
    "preset", ["cross-thought-3-64", "ssp-dpc", "ssp-dpc-electra", "rnn-cnn-small", "mean-max-aae"]
)
def test_paper_preset_runs_with_a_tiny_width(preset, corpus, tiny_bert, tmp_path):
    build, train = commands(corpus, tiny_bert, tmp_path)[preset]
    out = tmp_path / "run"
    for args in (build, [*train, "--out", out]):
        result = CliRunner().invoke(app, [str(a) for a in args])
        assert result.exit_code == 0, f"{args[:2]}: {result.output[-2000:]}{result.exception!r}"
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "finished"
    assert not (out / "checkpoints").exists() and (out / "model").is_dir()
