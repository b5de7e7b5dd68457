"""SQuAD → AS2: answer offsets mark sentences, context crosses paragraphs, splits by article."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsent.cli.data import app
from ctxsent.errors import InputError
from ctxsent.io import OUTPUT_MARKER
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import group_by_question
from ctxsent.tasks.squad_as2 import build_squad_as2, read_squad_articles, split_articles

P1 = "Alpha is first. The Trinity-St. Paul's Church is old. Gamma ends."
P2 = "Delta opens the next paragraph. Alpha is mentioned again."
SENTENCES = [
    "Alpha is first.",
    "The Trinity-St.",  # nupunkt splits after "St."; the answer crosses the boundary
    "Paul's Church is old.",
    "Gamma ends.",
    "Delta opens the next paragraph.",
    "Alpha is mentioned again.",
]


def qa(qid: str, question: str, context: str, *answers: str) -> dict:
    spans = [{"text": text, "answer_start": context.index(text)} for text in answers]
    return {"id": qid, "question": question, "answers": spans}


def squad(titles: list[str]) -> dict:
    articles = []
    for title in titles:
        paragraphs = [
            {"context": P1, "qas": [qa(f"{title}-1", "Which church?", P1, "Trinity-St. Paul's")]},
            {"context": P2, "qas": [qa(f"{title}-2", "What is first?", P2, " Alpha", "Delta")]},
        ]
        articles.append({"title": title, "paragraphs": paragraphs})
    return {"data": articles, "version": "1.1"}


def test_answer_offsets_mark_sentences_and_context_crosses_paragraphs(write_file) -> None:
    (article,) = read_squad_articles(write_file("s.json", json.dumps(squad(["Some_Title"]))))
    assert article.sentences == SENTENCES
    records = [r for q in article.questions for r in article.question_records(q)]
    assert len(records) == 2 * 6  # every question against every sentence of the article
    church, first = records[:6], records[6:]
    assert [r.label for r in church] == [0, 1, 1, 0, 0, 0]
    # Positives come from the offsets: "Alpha" in sentence 0 of paragraph 1 stays negative.
    assert [r.label for r in first] == [0, 0, 0, 0, 1, 1]
    assert (church[4].previous, church[4].next) == ("Gamma ends.", "Alpha is mentioned again.")
    assert church[0].previous == "" and church[5].next == ""
    assert church[0].document_id == "Some_Title" and church[0].document_title == "Some Title"


def test_crossing_span_skips_a_sentence_that_only_holds_punctuation(write_file) -> None:
    context = "The pre-game show aired. Jim Gray will anchor it."
    paragraph = {"context": context, "qas": [qa("q", "Who anchors?", context, ". Jim Gray")]}
    data = {"data": [{"title": "T", "paragraphs": [paragraph]}]}
    (article,) = read_squad_articles(write_file("s.json", json.dumps(data)))
    assert [r.label for q in article.questions for r in article.question_records(q)] == [0, 1]


def test_answer_not_at_its_offset_is_reported(write_file) -> None:
    data = squad(["T"])
    data["data"][0]["paragraphs"][1]["qas"][0]["answers"][1]["answer_start"] = 3
    with pytest.raises(InputError, match=r"field 'answer_start': question T-2: answer 'Delta'"):
        read_squad_articles(write_file("s.json", json.dumps(data)))
    with pytest.raises(InputError, match=r"s2\.json: not in SQuAD format"):
        read_squad_articles(write_file("s2.json", json.dumps({"data": [{"title": "x"}]})))


def test_split_by_article_is_deterministic_and_disjoint() -> None:
    titles = [f"Article_{i}" for i in range(48)]
    splits = split_articles(titles, seed=0)
    assert {k: len(v) for k, v in splits.items()} == {"train": 34, "dev": 7, "test": 7}
    assert sorted(sum(splits.values(), [])) == sorted(titles)
    assert split_articles(list(reversed(titles)), seed=0) == splits
    assert split_articles(titles, seed=1) != splits
    assert {k: len(v) for k, v in split_articles(titles[:3]).items()} == {
        "train": 1,
        "dev": 1,
        "test": 1,
    }


@pytest.mark.parametrize(
    ("articles", "sizes"),
    [(3, (1, 1, 1)), (8, (4, 2, 2)), (10, (4, 3, 3)), (20, (14, 3, 3)), (48, (34, 7, 7))],
)
def test_dev_and_test_hold_several_articles_when_there_are_enough(articles, sizes) -> None:
    titles = [f"Article_{i}" for i in range(articles)]
    splits = split_articles(titles, seed=3)
    assert tuple(len(splits[s]) for s in ("train", "dev", "test")) == sizes
    assert sorted(sum(splits.values(), [])) == sorted(titles)


def test_split_files_list_questions_round_robin_over_articles(write_file, tmp_path) -> None:
    """The first N dev questions (``--dev-questions N``) span the split's articles."""
    data = squad([f"Article_{i}" for i in range(10)])
    for article in data["data"]:  # a third question per article, in its second paragraph
        article["paragraphs"][1]["qas"].append(qa(article["title"] + "-3", "Who?", P2, "Delta"))
    build_squad_as2(write_file("squad.json", json.dumps(data)), tmp_path / "out")
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    for split in ("dev", "test"):
        titles = summary["splits"][split]["titles"]
        records = load_as2(f"squad-as2:{tmp_path / 'out'}", split)
        questions = list(group_by_question(records).values())
        assert [group[0].document_id for group in questions[: len(titles)]] == titles
        assert [group[0].question_id for group in questions[: 2 * len(titles)]] == [
            f"{title}-{k}" for k in (1, 2) for title in titles
        ]
        # each question's candidates stay together, in article order
        assert all([r.candidate for r in group] == SENTENCES for group in questions)


def test_cli_writes_splits_and_summary_atomically(write_file, tmp_path: Path) -> None:
    titles = [f"Article_{i}" for i in range(10)]
    source = write_file("squad.json.gz", json.dumps(squad(titles)))
    out = tmp_path / "squad-as2"
    args = ["squad-as2", "--squad", str(source), "--out", str(out), "--seed", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads(result.output) == summary
    assert summary == build_squad_as2(source, tmp_path / "python", seed=3)  # the same call
    for name in ("train", "dev", "test"):
        python = (tmp_path / "python" / f"{name}.jsonl").read_bytes()
        assert (out / f"{name}.jsonl").read_bytes() == python
    assert sorted(p.name for p in out.iterdir()) == [
        OUTPUT_MARKER,
        "dev.jsonl",
        "summary.json",
        "test.jsonl",
        "train.jsonl",
    ]
    assert {s: summary["splits"][s]["articles"] for s in ("train", "dev", "test")} == {
        "train": 4,
        "dev": 3,
        "test": 3,
    }
    for split, counts in summary["splits"].items():
        records = load_as2(f"squad-as2:{out}", split)
        assert len(records) == counts["pairs"] == counts["questions"] * 6
        assert sum(r.label for r in records) == counts["positives"] == counts["questions"] * 2
        assert counts["candidates_per_question"] == {"mean": 6.0, "min": 6, "max": 6}

    bad = write_file("bad.json", "{")
    failed = CliRunner().invoke(app, ["squad-as2", "--squad", str(bad), "--out", str(out / "x")])
    assert isinstance(failed.exception, InputError) and not (out / "x").exists()
