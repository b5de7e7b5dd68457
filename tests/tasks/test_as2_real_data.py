"""The readers on the real data sets in ../shared/data (counts from its README)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import typer

from ctxsent import cli
from ctxsent.tasks.as2_load import load_as2
from ctxsent.tasks.as2_records import clean, group_by_question
from ctxsent.tasks.squad_as2 import build_squad_as2, read_squad_articles, split_articles

pytestmark = pytest.mark.integration


def counts(records) -> tuple[int, int, int]:
    return len(group_by_question(records)), len(records), sum(r.label for r in records)


@pytest.mark.parametrize(
    ("split", "raw", "cleaned"),
    [
        ("train", (2118, 20360, 1040), (857, 8651)),
        ("dev", (296, 2733, 140), (122, 1126)),
        ("test", (633, 6165, 293), (237, 2341)),
    ],
)
def test_wikiqa_counts_and_clean_setting(shared_data: Path, split, raw, cleaned) -> None:
    records = load_as2(f"wikiqa:{shared_data / 'wikiqa'}", split)
    assert counts(records) == raw
    assert counts(clean(records))[:2] == cleaned
    first = records[1]  # the second sentence of the first question has both neighbours
    assert first.previous == records[0].candidate and first.next == records[2].candidate


def test_finetune_help_quotes_the_clean_wikiqa_train_counts(shared_data: Path) -> None:
    """857 questions / 8,651 pairs keep both labels; the Cascade paper's 873 (Table 1) are
    the questions with at least one correct answer, some of which have no negative."""
    train = clean(load_as2(f"wikiqa:{shared_data / 'wikiqa'}", "train"))
    questions, pairs, _ = counts(train)
    command = typer.main.get_command(cli.app).commands["finetune"].commands["as2"]
    (option,) = [p for p in command.params if p.name == "train_clean"]
    assert f"{questions} of 2,118" in option.help and f"{pairs:,} pairs" in option.help


@pytest.mark.parametrize(
    ("split", "expected"), [("dev", (785, 9377, 893)), ("test", (1590, 19435, 1798))]
)
def test_selqa_counts_match_the_published_tsv(shared_data: Path, split, expected) -> None:
    records = load_as2(f"selqa:{shared_data / 'selqa'}", split)
    assert counts(records) == expected
    assert len(clean(records)) == expected[1]  # every question has positives and negatives
    tsv = shared_data / f"selqa/ass/selqa-ass-{split}.tsv.gz"
    with gzip.open(tsv, "rt", encoding="utf-8") as f:
        tsv_labels = [int(line.rsplit("\t", 1)[1]) for line in f]
    assert [r.label for r in records] == tsv_labels  # same rows, same order


def test_squad_as2_on_the_real_file(shared_data: Path, tmp_path: Path) -> None:
    source = shared_data / "squad/dev-v1.1.json.gz"
    articles = read_squad_articles(source)
    questions = [q for a in articles for q in a.questions]
    assert (len(articles), len(questions)) == (48, 10570)
    assert all(q.positives for q in questions)
    splits = split_articles([a.title for a in articles], seed=0)
    assert {k: len(v) for k, v in splits.items()} == {"train": 34, "dev": 7, "test": 7}
    by_title = {a.title: a for a in articles}
    questions_per_split = {k: sum(len(by_title[t].questions) for t in v) for k, v in splits.items()}
    assert questions_per_split == {"train": 8170, "dev": 1258, "test": 1142}

    # The full build writes 1.8 GB; build the three smallest articles end to end instead.
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    data["data"] = sorted(data["data"], key=lambda a: len(json.dumps(a)))[:3]
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps(data))
    summary = build_squad_as2(subset, tmp_path / "out")
    for split, stats in summary["splits"].items():
        (title,) = split_articles([a["title"] for a in data["data"]])[split]
        article = by_title[title]
        assert stats["questions"] == len(article.questions)
        assert stats["pairs"] == len(article.questions) * len(article.sentences)
        records = load_as2(f"squad-as2:{tmp_path / 'out'}", split)
        assert len(records) == stats["pairs"]
        assert sum(r.label for r in records) == stats["positives"]
        assert len(clean(records)) == stats["pairs"]
