"""``ctxsent finetune as2 --train --dev`` and ``eval as2`` on a user's own files."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict

import pandas as pd

from synthetic import synthetic_as2

COLUMNS = "question_id=Id,question=Query,candidate=Passage,label=Relevant"


def own_file(path, questions: int, seed: int, *, labels: bool = True):
    """Synthetic AS2 data under the user's column names, ids prefixed by the file's stem."""
    data = pd.DataFrame([asdict(record) for record in synthetic_as2(questions, seed)])
    data = data.rename(
        columns={
            "question_id": "Id",
            "question": "Query",
            "candidate": "Passage",
            "label": "Relevant",
        }
    )[["Id", "Query", "Passage", "Relevant"]]
    data["Id"] = path.stem + "-" + data["Id"]
    if not labels:  # question-answer pairs only
        data = data[data["Relevant"] == 1]
    if path.suffix == ".csv":
        data.to_csv(path, index=False)
    elif path.suffix == ".tsv":
        data.to_csv(path, sep="\t", index=False, quoting=csv.QUOTE_NONE)
    else:
        data.to_parquet(path, index=False)
    return path


def test_finetune_on_own_files_then_evaluate_a_parquet_file(tmp_path, tiny_bert):
    train = own_file(tmp_path / "train.csv", 16, seed=1)
    dev = own_file(tmp_path / "dev.tsv", 4, seed=2)
    test = own_file(tmp_path / "test.parquet", 4, seed=3)
    out = tmp_path / "run"
    trained, report = invoke(
        "finetune", "as2", "--train", str(train), "--dev", str(dev), "--test", str(test),
        "--columns", COLUMNS, "--out", str(out), "--init", str(tiny_bert), "--max-steps", "2",
        "--eval-every", "1", "--batch-size", "8", "--max-length", "32",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    assert report["model"] == str(out / "model") and (out / "model").is_dir()
    assert report["best"]["dev"]["questions"] == 4 and report["metrics"]["test"]["pairs"] == 16

    evaluated, scores = invoke(
        "eval", "as2", "--model", str(out / "model"), "--data", str(test), "--columns", COLUMNS
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert (scores["questions"], scores["pairs"]) == (4, 16)


def invoke(*args: str):
    """Run a command in this process (no interpreter start): the result and its JSON."""
    from typer.testing import CliRunner

    from ctxsent.cli import app

    result = CliRunner().invoke(app, list(args))
    return result, json.loads(result.stdout) if result.exit_code == 0 else None


def test_question_answer_pairs_train_with_mined_negatives(tmp_path, tiny_bert):
    train = own_file(tmp_path / "train.csv", 8, seed=1, labels=False)
    dev = own_file(tmp_path / "dev.csv", 4, seed=2, labels=False)
    result, report = invoke(
        "finetune", "as2", "--train", str(train), "--dev", str(dev), "--columns", COLUMNS,
        "--mine-negatives", "bm25", "--negatives", "2", "--out", str(tmp_path / "run"),
        "--init", str(tiny_bert), "--max-steps", "1", "--batch-size", "8", "--max-length", "32",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    dev = report["best"]["dev"]
    assert dev["questions"] == 4 and dev["pairs"] == 4 * 3


def test_own_files_are_checked_before_training(tmp_path, tiny_bert):
    train = own_file(tmp_path / "train.csv", 4, seed=1)
    unanswered = tmp_path / "unanswered.csv"
    data = pd.read_csv(own_file(tmp_path / "dev.csv", 4, seed=2))
    data.loc[data["Id"].isin(["dev-q1", "dev-q2"]), "Relevant"] = 0
    data.to_csv(unanswered, index=False)
    pairs = own_file(tmp_path / "pairs.csv", 4, seed=3, labels=False)
    finetune = ["finetune", "as2", "--out", str(tmp_path / "run"), "--init", str(tiny_bert)]
    cases = [
        (["--train", str(train)], "error: expected --data SPEC or --train FILE --dev"),
        (["--data", f"jsonl:{train}", "--train", str(train)], "one of the two"),
        (["--train", str(train), "--dev", str(train)], "--dev: 4 question(s) are also in"),
        (
            ["--train", str(train), "--dev", str(unanswered)],
            "--dev: 2 of 4 questions have no positive answer",
        ),
        (["--train", str(pairs), "--dev", str(train)], "--train: every pair is positive"),
        (["--train", str(train), "--dev", str(pairs), "--columns", "label=Label"], "no column"),
    ]
    for args, message in cases:
        result, _ = invoke(*finetune, "--columns", COLUMNS, *args)
        # the error is raised, or printed by the app as one line (then the exit code is 2)
        assert result.exit_code != 0 and message in f"{result.output} {result.exception}", args
    assert not (tmp_path / "run").exists()


def test_rank_reads_an_own_file_with_its_columns(tmp_path):
    """``ctxsent rank --data FILE --columns ...``: every question of the file with its top
    candidates by the model's scores (BM25 here: exact, so the order can be checked), the
    same file and column names that ``eval as2`` takes; modes cannot be mixed."""
    from ctxsent.models.baseline_rankers import BM25Ranker
    from ctxsent.tasks.as2_files import parse_columns, read_as2_file

    path = own_file(tmp_path / "mine.csv", 3, seed=4)
    ranked, payload = invoke(
        "rank", "--data", str(path), "--columns", COLUMNS, "--model", "bm25", "--top-k", "2",
        "--json",
    )  # fmt: skip
    assert ranked.exit_code == 0, ranked.output
    records = read_as2_file(str(path), parse_columns(COLUMNS))
    scores = BM25Ranker().predict(records)
    assert [entry["question_id"] for entry in payload] == list(
        dict.fromkeys(r.question_id for r in records)
    )
    for entry in payload:
        rows = [i for i, r in enumerate(records) if r.question_id == entry["question_id"]]
        best = sorted(rows, key=lambda i: -scores[i])[:2]
        assert [answer["index"] for answer in entry["answers"]] == best
        assert [answer["candidate"] for answer in entry["answers"]] == [
            records[i].candidate for i in best
        ]
    mixed, _ = invoke("rank", "--data", str(path), "--question", "who?", "--model", "bm25")
    assert mixed.exit_code == 2 and "--data alone" in mixed.output


def test_finetune_trains_on_several_sets_at_once(tmp_path, tiny_bert):
    from ctxsent.tasks.as2_jsonl import write_as2_jsonl

    specs = []
    for name in ("first", "second"):  # the same question ids in both: kept apart
        (tmp_path / name).mkdir()
        write_as2_jsonl(synthetic_as2(6, seed=1), tmp_path / name / "train.jsonl")
        write_as2_jsonl(synthetic_as2(2, seed=2), tmp_path / name / "dev.jsonl")
        specs += ["--data", f"squad-as2:{tmp_path / name}"]
    out = tmp_path / "run"
    trained, report = invoke(
        "finetune", "as2", *specs, "--out", str(out), "--init", str(tiny_bert),
        "--max-steps", "1", "--batch-size", "8", "--max-length", "32",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    assert report["best"]["dev"]["questions"] == 4
    assert report["progress"]["stopped"] == "max_steps"
    assert "12 questions" in (out / "model" / "README.md").read_text()
