"""The command line: JSON output, one-line errors, exit codes.

Commands run in this process (typer's ``CliRunner``: stdout, stderr and the exit code as
a shell sees them); only the test of what the shell hands over (argv bytes) starts
``python -m ctxsent.cli``, whose interpreter start costs seconds.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from ctxsent.cli import app
from ctxsent.errors import InputError
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from ctxsent.tasks.as2_records import As2Record
from synthetic import synthetic_as2


def run_cli(*args: str):
    """``ctxsent ARGS`` in this process: ``exit_code``, ``stdout`` and ``stderr``."""
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def as2_file(tmp_path):
    records = [
        As2Record("q1", "when was the lighthouse lit", "The lighthouse was first lit in 1874.", 1),
        As2Record("q1", "when was the lighthouse lit", "Three keepers lived on the island.", 0),
        As2Record("q2", "who lived on the island", "The tower is painted white.", 0),
        As2Record("q2", "who lived on the island", "Three keepers lived on the island.", 1),
        As2Record("q3", "only negatives here", "Nothing relevant.", 0),
    ]
    path = tmp_path / "test.jsonl"
    write_as2_jsonl(records, path)
    return path


def test_eval_as2_prints_one_json_object_with_the_metrics(as2_file):
    """... which is what :func:`evaluate_as2_data` returns; the questions left out by
    ``--clean`` are counted, with why, in the JSON and on stderr; a split of a file is refused
    in the CLI and in Python alike."""
    from ctxsent.evaluation.as2_evaluation import evaluate_as2_data

    result = run_cli("eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    timing = {"seconds", "pairs_per_second"}
    python = evaluate_as2_data("bm25", f"jsonl:{as2_file}")
    assert {k: v for k, v in report.items() if k not in timing} == {
        k: v for k, v in python.items() if k not in timing
    }
    assert report["questions"] == 2 and report["pairs"] == 4  # q3 dropped by --clean
    assert report["dropped"] == {"questions": 1, "no_positive": 1, "only_positives": 0}
    assert result.stderr == (
        "dropped 1 question(s) without both labels (1 no positive, 0 only positives); "
        "--all keeps them\n"
    )
    assert report["map"] == report["p@1"] == report["mrr"] == 1.0
    assert {"ndcg@10", "hits@1", "ties"} <= report.keys()
    split = run_cli("eval", "as2", "--model", "bm25", "--data", str(as2_file), "--split", "dev")
    assert split.exit_code == 2 and "a split ('dev') selects part of a dataset" in split.stderr
    with pytest.raises(InputError, match=r"a split \('dev'\) selects part of a dataset"):
        evaluate_as2_data("bm25", str(as2_file), split="dev")
    unclean = json.loads(
        run_cli("eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}", "--all").stdout
    )
    assert unclean["questions"] == 3 and unclean["map"] == pytest.approx(2 / 3)


def test_eval_as2_refuses_a_gpu_that_is_not_there_before_scoring(as2_file, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu = run_cli("eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}",
                  "--accelerator", "cpu")  # fmt: skip
    assert cpu.exit_code == 0 and json.loads(cpu.stdout)["map"] == 1.0
    for accelerator in ("gpu", "cuda"):
        gpu = run_cli("eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}",
                      "--accelerator", accelerator)  # fmt: skip
        assert gpu.exit_code != 0 and not gpu.stdout
        assert gpu.stderr.count("\n") == 1 and f"--accelerator {accelerator}" in gpu.stderr


def test_on_accelerator_moves_torch_models_and_leaves_the_others(monkeypatch):
    import torch

    from ctxsent.models.precision import on_accelerator
    from ctxsent.resolver import load

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    layer = torch.nn.Linear(2, 2)
    moved = []
    monkeypatch.setattr(layer, "to", lambda device: moved.append(device) or layer)
    assert on_accelerator(layer, "auto") is layer and moved == ["cpu"]
    bm25 = load("bm25")
    assert on_accelerator(bm25, "cpu") is bm25


def test_rank_refuses_a_question_that_is_not_valid_unicode(tmp_path):
    document = tmp_path / "d.txt"
    document.write_text("The keeper lit the lamp.")
    command = [sys.executable, "-m", "ctxsent.cli", "rank", "--model", "bm25"]
    done = subprocess.run(
        [*command, "--question", b"who \xff?", "--document", str(document)], capture_output=True
    )
    assert done.returncode == 2 and not done.stdout
    assert (
        done.stderr.decode()
        .strip()
        .endswith("--question: not valid Unicode: unpaired surrogate U+DCFF at character 4")
    )


def test_eval_as2_against_a_second_model_reports_paired_differences(as2_file, tiny_bert, tmp_path):
    same = run_cli(
        "eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}", "--against", "bm25"
    )  # fmt: skip
    assert same.exit_code == 0, same.output
    against = json.loads(same.stdout)["against"]
    assert against["model"] == "bm25" and against["map"] == 1.0
    assert against["difference"]["p@1"] == {
        "mean": 0.0, "low": 0.0, "high": 0.0, "level": 0.95, "questions": 2
    }  # fmt: skip
    # 12 questions that BM25 answers perfectly, against a cross-encoder with a zeroed head:
    # every pair scores the same, so pessimistic ties put each positive last (P@1 = 0)
    import torch

    from ctxsent.models.cross_encoder import CrossEncoderRanker

    words = [
        "lighthouse",
        "keeper",
        "island",
        "tower",
        "lamp",
        "harbour",
        "storm",
        "ship",
        "rock",
        "coast",
        "light",
        "bell",
    ]
    records = [
        As2Record(f"q{i}", f"where is the {word}", text, int(text.startswith("The")))
        for i, word in enumerate(words)
        for text in (f"The {word} stands here.", "It rained.", "Nobody came.", "Grass grew.")
    ]
    many = tmp_path / "many.jsonl"
    write_as2_jsonl(records, many)
    constant = CrossEncoderRanker.from_backbone(str(tiny_bert))
    head = constant.model.classifier
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
    constant_model = tmp_path / "constant"
    constant.save_pretrained(constant_model)
    constant_vs_bm25 = run_cli(
        "eval", "as2", "--model", str(constant_model), "--data", f"jsonl:{many}",
        "--against", "bm25",
    )  # fmt: skip
    report = json.loads(constant_vs_bm25.stdout)
    difference = report["against"]["difference"]["p@1"]
    assert report["against"]["p@1"] == 1.0 and report["p@1"] == 0.0
    assert difference["mean"] == -1.0
    assert difference["low"] == difference["high"] == -1.0
    bad = run_cli(
        "eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}", "--against", "/nowhere"
    )  # fmt: skip
    assert bad.exit_code != 0 and "/nowhere" in bad.stderr and not bad.stdout


def test_eval_as2_compares_against_a_run_it_stored(as2_file, tmp_path):
    run = tmp_path / "bm25.run"
    stored = run_cli(
        "eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}", "--run-out", str(run)
    )  # fmt: skip
    assert stored.exit_code == 0, stored.output
    compared = {}
    for against in ("bm25", f"run:{run}"):
        result = run_cli(
            "eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}", "--against", against
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        compared[against] = json.loads(result.stdout)["against"]
        assert compared[against].pop("model") == against
    assert compared["bm25"] == compared[f"run:{run}"]
    missing = run_cli(
        "eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}",
        "--against", f"run:{tmp_path / 'none.run'}",
    )  # fmt: skip
    assert missing.exit_code != 0 and "none.run: no such file" in missing.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["eval", "as2", "--model", "{tmp}", "--data", "jsonl:{file}"],
            "not a ctxsent model folder",
        ),
        (["eval", "as2", "--model", "bm25", "--data", "nosuch:{file}"], "NAME one of wikiqa"),
        (
            ["rank", "--question", "q?", "--document", "{tmp}/missing.txt"],
            "missing.txt: no such file",
        ),
        (
            ["rank", "--question", "q?", "--document", "{tmp}/latin1.txt", "--model", "bm25"],
            "latin1.txt",
        ),
        (
            ["rank", "--question", " ", "--document", "{tmp}/ok.txt", "--model", "bm25"],
            "--question: the question is empty",
        ),
        (
            ["rank", "--question", "q?", "--document", "{tmp}/ok.txt", "--split", "dev"],
            "--split: applies to --data only",
        ),
    ],
)
def test_bad_input_gives_one_line_error_and_exit_2(tmp_path, as2_file, args, message):
    (tmp_path / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me is sold here.".encode("latin-1"))
    (tmp_path / "ok.txt").write_text("A sentence here. Another one there.")
    args = [a.format(tmp=tmp_path, file=as2_file) for a in args]
    result = run_cli(*args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_rank_prints_the_best_sentence_first(tmp_path):
    document = tmp_path / "doc.txt"
    document.write_text(
        "The tower was first lit in 1874. Three keepers lived on the island. "
        "The tower is painted white."
    )
    result = run_cli(
        "rank",
        "--question",
        "when was the tower lit",
        "--document",
        str(document),
        "--model",
        "bm25",
        "--top-k",
        "1",
        "--json",
    )
    assert result.exit_code == 0, result.output
    [answer] = json.loads(result.stdout)[0]["answers"]
    assert answer["candidate"] == "The tower was first lit in 1874."
    assert answer["next"] == "Three keepers lived on the island."


def test_rank_is_rank_answers(tmp_path, as2_file):
    from dataclasses import asdict

    from ctxsent.serving.answers import rank_answers

    document = tmp_path / "doc.txt"
    document.write_text("The tower was lit in 1874. Three keepers lived there. It is white.")
    questions = ["when was the tower lit", "who lived there"]
    for cli_args, python_args in [
        (["--question", questions[0], "--question", questions[1], "--document", str(document)],
         {"questions": questions, "document": document}),
        (["--data", str(as2_file), "--columns", "question=question"],
         {"data": str(as2_file), "columns": {"question": "question"}}),
    ]:  # fmt: skip
        result = run_cli("rank", "--model", "bm25", "--top-k", "2", "--json", *cli_args)
        assert result.exit_code == 0, result.output
        ranked = rank_answers("bm25", top_k=2, **python_args)
        expected = [{k: v for k, v in asdict(r).items() if k != "contextual"} for r in ranked]
        assert json.loads(result.stdout) == expected and len(expected) in (2, 3)


def test_finetune_cascade_then_eval_with_alpha(tmp_path, tiny_bert):
    data = tmp_path / "data"
    write_as2_jsonl(synthetic_as2(8, seed=1), data / "train.jsonl")
    write_as2_jsonl(synthetic_as2(8, seed=2), data / "dev.jsonl")
    trained = run_cli(
        "finetune",
        "as2",
        "--data",
        f"squad-as2:{data}",
        "--out",
        str(tmp_path / "run"),
        "--init",
        str(tiny_bert),
        "--arch",
        "cascade",
        "--max-steps",
        "2",
        "--eval-every",
        "2",
        "--batch-size",
        "8",
        "--max-length",
        "32",
    )
    assert trained.exit_code == 0, trained.output
    assert json.loads(trained.stdout)["best"]["dev"]["questions"] == 8  # bars on stderr
    model = str(tmp_path / "run" / "model")
    args = ["eval", "as2", "--model", model, "--data", f"squad-as2:{data}", "--split", "dev"]
    report = json.loads(run_cli(*args, "--alpha", "0.5").stdout)
    assert report["candidates_per_exit"] == [32, 16]  # 8 questions x 4 -> 2 kept each
    assert report["relative_cost"] == pytest.approx((32 + 16) / (2 * 32))
    full = json.loads(run_cli(*args, "--alpha", "0").stdout)
    assert full["relative_cost"] == 1.0
    wrong = run_cli(*args, "--alpha", "0.1,0.2")
    assert wrong.exit_code == 2 and "error: --alpha: need 1 drop rates" in wrong.stderr
    finetune = ["finetune", "as2", "--data", f"squad-as2:{data}", "--out", str(tmp_path / "x")]
    stray = run_cli(*finetune, "--exits", "1", "--arch", "cross-encoder")
    assert stray.exit_code == 2 and "--exits applies to --arch cascade" in stray.stderr
    with pytest.warns(FutureWarning, match="--cascade is replaced by --arch cascade"):
        reshape = run_cli(*finetune, "--init", model, "--layers", "1", "--cascade")
    assert reshape.exit_code == 2 and "shape a new model" in reshape.stderr


def test_finetune_a_bi_encoder_with_its_recipe_then_export_it(tmp_path, tiny_bert):
    from sentence_transformers import SentenceTransformer

    import ctxsent

    data = tmp_path / "data"
    write_as2_jsonl(synthetic_as2(16, seed=1), data / "train.jsonl")
    write_as2_jsonl(synthetic_as2(4, seed=2), data / "dev.jsonl")
    finetune = ["finetune", "as2", "--data", f"squad-as2:{data}", "--init", str(tiny_bert)]
    trained = run_cli(
        *finetune, "--out", str(tmp_path / "run"), "--arch", "bi-encoder", "--max-steps", "2",
        "--eval-every", "2", "--questions-per-batch", "4", "--max-length", "16",
        "--in-batch-negatives", "--temperature", "0.1",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    settings = json.loads(trained.stdout)["settings"]["config"]
    given = {"max_steps": 2, "eval_every": 2, "questions_per_batch": 4, "temperature": 0.1}
    recipe = {"loss": "listwise", "learning_rate": 5e-5, "max_negatives_per_question": 15}
    assert settings.items() >= {**given, **recipe, "in_batch_negatives": True}.items()
    model = tmp_path / "run" / "model"
    exported = run_cli(
        "export", str(model), "--to", "sentence-transformers", "--out", str(tmp_path / "st")
    )
    assert exported.exit_code == 0, exported.output
    texts = ["which one is red?", "it is red because of dye.", "the box is blue. " * 20]
    ours = ctxsent.load(model).encode(texts)
    theirs = SentenceTransformer(str(tmp_path / "st"), device="cpu").encode(texts)
    assert np.allclose(ours, theirs, atol=1e-5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arch", "cross-encoder", "--temperature", "0.1"],
         "--temperature applies to --arch bi-encoder only"),
        (["--contextual", "--in-batch-negatives"],
         "--in-batch-negatives applies to --arch bi-encoder only"),
        (["--arch", "bi-encoder", "--contextual"], "embeds each candidate alone"),
        (["--arch", "bi-encoder", "--loss", "pointwise", "--questions-per-batch", "4"],
         "--questions-per-batch: applies to the listwise loss only"),
        (["--arch", "bi-encoder", "--cascade"], "contradicts --arch"),
    ],
)  # fmt: skip
def test_finetune_refuses_options_its_architecture_cannot_use(tmp_path, tiny_bert, args, message):
    from typer.testing import CliRunner

    from ctxsent.cli import app

    command = ["finetune", "as2", "--data", "wikiqa:nowhere", "--out", str(tmp_path / "x")]
    result = CliRunner().invoke(app, [*command, "--init", str(tiny_bert), *args])
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "x").exists()


def test_eval_rank_and_serve_take_the_inference_precision(as2_file, tiny_bert, tmp_path):
    from ctxsent.models.cross_encoder import CrossEncoderRanker

    folder = CrossEncoderRanker.from_backbone(str(tiny_bert)).save_pretrained(tmp_path / "ce")
    evaluate = ("eval", "as2", "--model", str(folder), "--data", f"jsonl:{as2_file}")
    assert json.loads(run_cli(*evaluate).stdout)["precision"] == "fp32"  # auto (conftest)
    bf16 = run_cli(*evaluate, "--precision", "bf16")
    assert bf16.exit_code == 0 and json.loads(bf16.stdout)["precision"] == "bf16"
    bm25 = run_cli("eval", "as2", "--model", "bm25", "--data", f"jsonl:{as2_file}",
                   "--precision", "bf16")  # fmt: skip
    assert bm25.exit_code != 0 and bm25.stderr.count("\n") == 1 and "precision" in bm25.stderr
    ranked = run_cli("rank", "--model", str(folder), "--data", f"jsonl:{as2_file}", "--json",
                     "--precision", "bf16", "--accelerator", "cpu")  # fmt: skip
    assert ranked.exit_code == 0 and len(json.loads(ranked.stdout)) == 3
    serve_help = run_cli("serve", "--help").stdout
    assert "--precision" in serve_help and "--accelerator" in serve_help
    assert "/rerank" in serve_help
