"""``load_as2``: one spec per data set, folders with splits or files, and clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ctxsent.errors import InputError
from ctxsent.tasks.as2_jsonl import write_as2_jsonl
from ctxsent.tasks.as2_load import FORMATS, load_as2
from ctxsent.tasks.as2_records import As2Record

WIKIQA = (
    "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\n"
    "Q1\tq?\tD1\tT\tD1-0\ts0\t0\nQ1\tq?\tD1\tT\tD1-1\ts1\t1\n"
)
SELQA = [{"question": "q?", "candidates": ["a", "b"], "answers": [1]}]
TRECQA_XML = (
    "<QApairs id='3'>\n<question>\nq\t?\n</question>\n<positive>\na\t.\n</positive>\n</QApairs>\n"
)


@pytest.fixture
def data_root(write_file, tmp_path: Path) -> Path:
    write_file("wikiqa/WikiQA-test.tsv", WIKIQA, newline="\r\n")
    write_file("selqa/ass/selqa-ass-dev.json.gz", json.dumps(SELQA))
    write_file("trecqa/test-less-than-40.manual-edit.xml", TRECQA_XML)
    write_file("trecqa/dev.tsv", "qid\tquestion\tanswer\tlabel\n3\tq ?\ta .\t1\n")
    write_file("asnq/dev.tsv", "q\ta\t4\nq\tb\t1\n")
    write_as2_jsonl([As2Record("s1", "q?", "a", 1)], tmp_path / "squad/test.jsonl")
    return tmp_path


@pytest.mark.parametrize(
    ("spec", "split", "expected"),
    [
        ("wikiqa:wikiqa", "test", [("Q1", "s0", 0), ("Q1", "s1", 1)]),
        ("wikiqa:wikiqa/WikiQA-test.tsv", None, [("Q1", "s0", 0), ("Q1", "s1", 1)]),
        ("selqa:selqa", "dev", [("selqa-ass-dev-0", "a", 0), ("selqa-ass-dev-0", "b", 1)]),
        ("selqa:selqa/ass/selqa-ass-dev.json.gz", None, [("selqa-ass-dev-0", "a", 0),
                                                         ("selqa-ass-dev-0", "b", 1)]),
        ("trecqa:trecqa", "test", [("3", "a .", 1)]),
        ("trecqa:trecqa", "dev", [("3", "a .", 1)]),
        ("asnq:asnq", "dev", [("dev-0", "a", 1), ("dev-0", "b", 0)]),
        ("asnq:asnq/dev.tsv", None, [("dev-0", "a", 1), ("dev-0", "b", 0)]),
        ("squad-as2:squad", "test", [("s1", "a", 1)]),
        ("jsonl:squad/test.jsonl", None, [("s1", "a", 1)]),
        ("tsv:trecqa/dev.tsv", None, [("3", "a .", 1)]),
    ],
)  # fmt: skip
def test_every_spec_loads(
    data_root: Path, monkeypatch, spec: str, split: str | None, expected: list
) -> None:
    monkeypatch.chdir(data_root)
    records = load_as2(spec, split)
    assert [(r.question_id, r.candidate, r.label) for r in records] == expected


def test_unknown_name_lists_the_valid_ones(data_root: Path) -> None:
    for spec in (f"wikiqq:{data_root}", str(data_root / "wikiqa")):
        with pytest.raises(InputError, match="field 'spec'") as caught:
            load_as2(spec, "test")
        assert all(name in str(caught.value) for name in FORMATS)


def test_missing_split_lists_the_splits_present(data_root: Path) -> None:
    with pytest.raises(InputError, match=r"trecqa: no trecqa file for split 'train' .*dev, test"):
        load_as2(f"trecqa:{data_root / 'trecqa'}", "train")
    with pytest.raises(InputError, match=r"wikiqa: no split given \(.*\); splits here: test"):
        load_as2(f"wikiqa:{data_root / 'wikiqa'}")


@pytest.mark.parametrize(
    ("spec", "split", "message"),
    [
        ("wikiqa:wikiqa/WikiQA-test.tsv", "dev", "a split ('dev') selects a file in a folder"),
        ("tsv:trecqa", None, "tsv: expected a file, got a folder"),
        ("asnq:nowhere", "dev", "no such file or folder"),
    ],
)
def test_path_errors(data_root: Path, monkeypatch, spec: str, split: str | None, message) -> None:
    monkeypatch.chdir(data_root)
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        load_as2(spec, split)
    assert str(caught.value).startswith(spec.partition(":")[2])


def test_several_sets_mix_into_one_keeping_equal_ids_apart():
    from ctxsent.tasks.as2_load import mix_sources
    from ctxsent.tasks.as2_records import As2Record, group_by_question

    first = [As2Record("Q1", "who?", "a", 1), As2Record("Q1", "who?", "b", 0)]
    second = [As2Record("Q1", "when?", "c", 1)]
    mixed = mix_sources([first, second])
    assert [r.question_id for r in mixed] == ["0:Q1", "0:Q1", "1:Q1"]
    assert len(group_by_question(mixed)) == 2
    assert mix_sources([first]) == first
    bigger = [As2Record(f"Q{i}", "why?", "d", 1) for i in range(4)]
    balanced = group_by_question(mix_sources([first, bigger], balance=True))
    assert sorted(balanced) == sorted(
        ["0:Q1", "0:Q1#1", "0:Q1#2", "0:Q1#3", *(f"1:Q{i}" for i in range(4))]
    )
    assert [r.candidate for r in balanced["0:Q1#3"]] == ["a", "b"]


def test_evaluation_records_default_split_count_what_clean_drops_and_refuse_a_files_split(
    tmp_path: Path,
):
    from ctxsent.tasks.as2_load import evaluation_records

    pairs = {"q1": (1, 0), "q2": (0, 0), "q3": (1, 1)}  # both labels, no positive, only positives
    records = [
        As2Record(q, "?", f"c{i}", label) for q, ls in pairs.items() for i, label in enumerate(ls)
    ]
    write_as2_jsonl(records, tmp_path / "test.jsonl")
    write_as2_jsonl(records[:2], tmp_path / "dev.jsonl")
    kept, dropped = evaluation_records(f"squad-as2:{tmp_path}")  # the folder's test split
    assert [r.question_id for r in kept] == ["q1", "q1"]
    assert dropped == {"questions": 2, "no_positive": 1, "only_positives": 1}
    assert evaluation_records(f"squad-as2:{tmp_path}", default_split="dev")[1]["questions"] == 0
    assert len(evaluation_records(str(tmp_path / "test.jsonl"), clean_questions=False)[0]) == 6
    with pytest.raises(InputError, match=r"a split \('test'\) selects part of a dataset"):
        evaluation_records(str(tmp_path / "test.jsonl"), "test")  # as load_as2 refuses it
    write_as2_jsonl(records[2:], tmp_path / "none.jsonl")
    with pytest.raises(InputError, match=r"none.jsonl has no questions to evaluate \(2 without"):
        evaluation_records(str(tmp_path / "none.jsonl"))
