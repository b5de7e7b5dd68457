"""Model specs, the cache fingerprint, and ``ctxsent eval senteval`` end to end on tiny data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ctxsent.cli.evaluate import senteval
from ctxsent.errors import InputError, ModelFolderError
from ctxsent.evaluation.senteval import model_fingerprint
from ctxsent.models.bag_of_words import BagOfWordsEncoder
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.resolver import load_encoder


def test_bow_spec_loads_any_word_vector_file(tiny_vectors_file: Path) -> None:
    encoder = load_encoder(f"bow:{tiny_vectors_file}")
    assert isinstance(encoder, BagOfWordsEncoder) and encoder.vectors.dim == 4


def test_hf_folder_spec_gives_a_bi_encoder(tiny_bert: Path) -> None:
    assert isinstance(load_encoder(f"bi-encoder:{tiny_bert}"), BiEncoderRanker)
    with pytest.raises(ModelFolderError, match="a Hugging Face one: pass bi-encoder:PATH"):
        load_encoder(str(tiny_bert))


def test_folders_that_are_no_model_are_rejected_clearly(tmp_path: Path) -> None:
    with pytest.raises(ModelFolderError, match="not a ctxsent model folder"):
        load_encoder(str(tmp_path))
    (tmp_path / "ctxsent.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelFolderError, match="corrupt manifest"):
        load_encoder(str(tmp_path))


def test_unknown_spec_is_an_input_error() -> None:
    with pytest.raises(InputError, match="not a folder, nor a model name"):
        load_encoder("no-such-model")


def test_fingerprint_follows_the_files_of_the_model(tmp_path: Path, tiny_vectors_file) -> None:
    spec = f"bow:{tiny_vectors_file}"
    before = model_fingerprint(spec)
    assert model_fingerprint(spec) == before
    tiny_vectors_file.write_text("good 1 0 0 0\n", encoding="utf-8")
    assert model_fingerprint(spec) != before
    assert model_fingerprint("random") != model_fingerprint("minilm")


@pytest.fixture
def tiny_data_dir(tmp_path: Path) -> Path:
    """MR, STS Benchmark and one STS12 subset, laid out as in ../shared/data."""
    data = tmp_path / "data"
    (data / "senteval" / "MR").mkdir(parents=True)
    pos = [f"a good movie {'.' * (i % 3)}" for i in range(30)]
    neg = [f"a bad movie {'.' * (i % 3)}" for i in range(30)]
    (data / "senteval" / "MR" / "rt-polarity.pos").write_text("\n".join(pos) + "\n")
    (data / "senteval" / "MR" / "rt-polarity.neg").write_text("\n".join(neg) + "\n")
    pairs = [("good movie", "good movie", 5.0), ("good movie", "bad movie", 0.5)] * 5
    pairs += [("good movie", "good does", 3.0)] * 2
    (data / "stsbenchmark").mkdir()
    rows = [f"g\tf\t2012\t{i}\t{s}\t{a}\t{b}" for i, (a, b, s) in enumerate(pairs)]
    (data / "stsbenchmark" / "sts-test.csv").write_text("\n".join(rows) + "\n")
    (data / "sts12").mkdir()
    (data / "sts12" / "STS.input.x.txt").write_text("".join(f"{a}\t{b}\n" for a, b, _ in pairs))
    (data / "sts12" / "STS.gs.x.txt").write_text("".join(f"{s}\n" for *_, s in pairs))
    return data


def run_cli(*args: str):
    app = typer.Typer()
    app.command()(senteval)
    return CliRunner().invoke(app, list(args))


def test_command_prints_json_and_a_table_and_caches(
    tiny_data_dir: Path, tiny_vectors_file: Path, tmp_path: Path
) -> None:
    cache, output = tmp_path / "cache", tmp_path / "out" / "report.json"
    args = ["--model", f"bow:{tiny_vectors_file}", "--tasks", "MR,stsb,STS12"]
    args += ["--data", str(tiny_data_dir), "--cache", str(cache), "--output", str(output)]
    result = run_cli(*args, "--no-progress")
    assert result.exit_code == 0, result.output

    report = json.loads(result.stdout)
    assert report == json.loads(output.read_text())
    assert list(report["tasks"]) == ["MR", "STSB", "STS12"]
    assert report["tasks"]["MR"]["acc"] == 100.0 and report["tasks"]["MR"]["n_test"] == 60
    assert report["tasks"]["STSB"]["spearman"] > 0.9
    assert report["tasks"]["STS12"]["all"]["n"] == 12
    assert report["averages"]["all accuracy tasks"]["macro"] == 100.0
    assert "| Model | MR | STSB | STS12 |" in result.stderr
    assert len(list(cache.rglob("*.npy"))) == 3


@pytest.mark.parametrize(
    ("tasks", "message"), [("MR,NOPE", "unknown task 'NOPE'"), ("TREC", "no folder for task TREC")]
)
def test_command_checks_tasks_and_data_before_loading_the_model(
    tiny_data_dir: Path, tasks: str, message: str
) -> None:
    result = run_cli("--model", "bow:/absent", "--tasks", tasks, "--data", str(tiny_data_dir))
    assert isinstance(result.exception, InputError)
    assert message in str(result.exception)


def test_command_refuses_a_gpu_that_is_not_there(
    tiny_data_dir: Path, tiny_vectors_file: Path, monkeypatch
) -> None:
    import torch

    from ctxsent.errors import CtxsentError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = ["--model", f"bow:{tiny_vectors_file}", "--tasks", "STS12", "--no-cache"]
    args += ["--data", str(tiny_data_dir), "--no-progress"]
    assert run_cli(*args, "--accelerator", "cpu").exit_code == 0
    result = run_cli(*args, "--accelerator", "gpu")
    assert isinstance(result.exception, CtxsentError) and not result.stdout
    assert "--accelerator gpu" in str(result.exception)
