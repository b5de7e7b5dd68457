"""A user's own AS2 files: every format, column mapping, grouping and one-line errors."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest

from ctxsent.errors import InputError
from ctxsent.tasks.as2_files import check_fine_tuning_splits, parse_columns, read_as2_file
from ctxsent.tasks.as2_load import load_as2, takes_split
from ctxsent.tasks.as2_records import As2Record

LIT = 'The keeper, "Tom", lit it.'  # a comma and quotes: CSV quotes it, TSV keeps it as is
RECORDS = [
    As2Record("q1", "who lit the lamp?", LIT, 1, "", "He slept.", "d1", "Lamp"),
    As2Record("q1", "who lit the lamp?", "He slept.", 0, LIT, "", "d1", "Lamp"),
    As2Record("q2", "where is the tower?", "On the rock.", 1, "", "", "d2", "Tower"),
    As2Record("q2", "where is the tower?", "It is tall.", 0, "", "", "d2", "Tower"),
]  # fmt: skip


def frame(records) -> pd.DataFrame:
    return pd.DataFrame([asdict(record) for record in records])


def write(path: Path, data: pd.DataFrame) -> Path:
    """Write ``data`` in the format of ``path``'s suffix, as a user's tools would."""
    if path.suffix == ".csv":
        data.to_csv(path, index=False)
    elif path.suffix == ".tsv":
        data.to_csv(path, sep="\t", index=False, quoting=csv.QUOTE_NONE)
    elif path.suffix == ".jsonl":
        data.to_json(path, orient="records", lines=True, force_ascii=False)
    else:
        data.to_parquet(path, index=False)
    return path


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """``datasets`` caches what ``load_dataset`` prepares under ``tmp_path``."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))


@pytest.mark.parametrize("name", ["pairs.csv", "pairs.tsv", "pairs.jsonl", "pairs.parquet"])
def test_each_file_format_reads_back_the_records(tmp_path, name):
    path = write(tmp_path / name, frame(RECORDS))
    assert read_as2_file(path) == RECORDS
    assert load_as2(str(path)) == RECORDS  # a plain path is a data spec
    assert not takes_split(str(path))


def test_a_csv_cell_may_span_lines_and_a_tsv_keeps_quotes_as_text(tmp_path):
    multiline = [As2Record("q", "q?", "line one\nline two, still", 1)]
    assert read_as2_file(write(tmp_path / "m.csv", frame(multiline))) == multiline
    tsv = tmp_path / "q.tsv"
    tsv.write_text('question\tcandidate\tlabel\n"q?\t"quoted" text\t1\n')
    [record] = read_as2_file(tsv)
    assert (record.question, record.candidate) == ('"q?', '"quoted" text')


@pytest.mark.parametrize("name", ["long.tsv", "long.csv", "long.jsonl"])
def test_a_field_longer_than_the_csv_modules_default_limit_is_read_as_jsonl_reads_it(
    tmp_path, name
):
    long = [As2Record("q", "q?", "word " * 40_000, 1)]  # 200,000 characters > 131,072
    assert read_as2_file(write(tmp_path / name, frame(long))) == long


def test_gzipped_text_files_are_read(tmp_path):
    path = tmp_path / "pairs.csv.gz"
    frame(RECORDS).to_csv(path, index=False)  # pandas gzips by the suffix
    assert read_as2_file(path) == RECORDS


def test_saved_datasets_and_load_dataset_specs(tmp_path, hf_cache):
    import datasets

    data = datasets.Dataset.from_pandas(frame(RECORDS))
    data.save_to_disk(tmp_path / "one")
    subset = data.select([2, 3])  # an indices mapping over the same table
    datasets.DatasetDict({"train": data, "test": subset}).save_to_disk(tmp_path / "two")
    one, two = f"hf-disk:{tmp_path / 'one'}", f"hf-disk:{tmp_path / 'two'}"
    assert read_as2_file(one) == RECORDS
    assert read_as2_file(f"{two}@test") == RECORDS[2:]
    assert load_as2(two, "train") == RECORDS
    assert takes_split(two) and not takes_split(one) and not takes_split(f"{two}@test")
    with pytest.raises(InputError, match=r"two: no split given; the splits are train, test"):
        read_as2_file(two)
    with pytest.raises(InputError, match=r"one@dev: a saved Dataset has no splits"):
        read_as2_file(f"{one}@dev")
    with pytest.raises(InputError, match=r"two@test: names split 'test'; another \('dev'\)"):
        load_as2(f"{two}@test", "dev")

    folder = tmp_path / "hub-like"  # load_dataset names the split after the file
    folder.mkdir()
    write(folder / "train.parquet", frame(RECORDS))
    assert read_as2_file(f"hf:{folder}") == RECORDS  # its only split
    assert read_as2_file(f"hf:{folder}@train") == RECORDS
    with pytest.raises(InputError, match=r"hub-like@test: cannot load the dataset: .*split"):
        read_as2_file(f"hf:{folder}@test")


def test_columns_map_our_fields_to_the_files_names(tmp_path):
    data = frame(RECORDS).rename(
        columns={"question": "Query", "candidate": "Passage", "label": "Relevant"}
    )
    data["Relevant"] = data["Relevant"].map({1: "True", 0: "false"})  # booleans as words
    data["extra"] = "ignored"
    path = write(tmp_path / "mine.csv", data)
    columns = parse_columns("question=Query, candidate=Passage,label=Relevant")
    assert columns == {"question": "Query", "candidate": "Passage", "label": "Relevant"}
    assert read_as2_file(path, columns) == RECORDS
    assert load_as2(str(path), columns=columns) == RECORDS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("question", r"expected FIELD=COLUMN\[,FIELD=COLUMN\.\.\.\], got 'question'"),
        ("question=A,question=B", "question is mapped twice"),
        ("questoin=Query", "unknown field.*questoin; the fields are question_id, question,"),
    ],
)
def test_a_bad_columns_option_is_one_clear_error(text, message):
    with pytest.raises(InputError, match=f"^field 'columns': {message}"):
        parse_columns(text)


def test_columns_are_refused_for_a_built_in_format(tmp_path):
    path = write(tmp_path / "x.jsonl", frame(RECORDS))
    with pytest.raises(InputError, match="field 'columns': column names apply to"):
        load_as2(f"jsonl:{path}", columns={"question": "q"})


def test_rows_of_a_question_need_not_be_adjacent(tmp_path):
    shuffled = [RECORDS[0], RECORDS[2], RECORDS[1], RECORDS[3]]
    assert read_as2_file(write(tmp_path / "s.csv", frame(shuffled))) == RECORDS


def test_without_question_ids_questions_are_grouped_by_text(tmp_path):
    rows = pd.DataFrame(
        {
            "question": ["who?", "where?", "who?", "where?"],
            "candidate": ["Tom.", "Here.", "Ann.", "There."],
            "label": [1, 0, 0, 1],
        }
    )
    records = read_as2_file(write(tmp_path / "t.tsv", rows))
    assert [(r.question_id, r.candidate) for r in records] == [
        ("who?", "Tom."), ("who?", "Ann."), ("where?", "Here."), ("where?", "There.")
    ]  # fmt: skip


def test_without_a_label_column_every_pair_is_positive(tmp_path):
    pairs = pd.DataFrame({"question": ["who?", "where?"], "candidate": ["Tom.", "Here."]})
    records = read_as2_file(write(tmp_path / "pairs.csv", pairs))
    assert [r.label for r in records] == [1, 1]


def test_document_ids_and_numeric_ids_are_read_as_text(tmp_path):
    rows = pd.DataFrame(
        {"question_id": [7, 7], "question": ["q?"] * 2, "candidate": ["a", "b"],
         "label": [True, False], "document_id": [12, 12]}
    )  # fmt: skip
    records = read_as2_file(write(tmp_path / "ids.parquet", rows))
    assert [(r.question_id, r.document_id, r.label) for r in records] == [
        ("7", "12", 1), ("7", "12", 0)
    ]  # fmt: skip


CSV_HEADER = "question_id,question,candidate,label\n"
TWO_LINES = CSV_HEADER + 'q1,who?,"two\nlines",1\n'  # one row on lines 2-3
TSV = "question\tcandidate\tlabel\nq\ta\t1\n"
LABEL = "field 'label': expected 0/1 or true/false, got"
JSON_ROW = '{"question": "q", "candidate": "a", "label": 1}\n'


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "a.csv",
            "question,answer,label\nq,a,1\n",
            "a.csv:1: field 'candidate': no column 'candidate'; the columns are "
            "question, answer, label",
        ),
        ("b.csv", TWO_LINES + "q2, ,a,1\n", "b.csv:4: field 'question': empty text"),
        ("c.csv", TWO_LINES + "q2,where?,,0\n", "c.csv:4: field 'candidate': empty text"),
        ("d.csv", TWO_LINES + "\nq2,where?,x,yes\n", f"d.csv:5: {LABEL} 'yes'"),
        ("e.tsv", TSV + "q\tb\t2\n", f"e.tsv:3: {LABEL} '2'"),
        ("f.tsv", TSV + "q\tb\n", "f.tsv:3: expected 3 TAB-separated columns, found 2"),
        (
            "g.csv",
            TWO_LINES + "q1,what?,x,0\n",
            "g.csv:4: field 'question': question id 'q1' has another question text at line 2",
        ),
        (
            "h.jsonl",
            JSON_ROW + '\n{"question": "q", "candidate": "b \\ud800", "label": 0}\n',
            "h.jsonl:3: field 'candidate': not valid Unicode: unpaired surrogate U+D800",
        ),
        ("i.jsonl", JSON_ROW + '{"question": "q"}\n', "i.jsonl:2: field 'candidate': empty text"),
        (
            "j.jsonl",
            '{"question": "q", "candidate": ["a"], "label": 1}\n',
            "j.jsonl:1: field 'candidate': expected text, got list",
        ),
        ("k.csv", CSV_HEADER + 'q1,who?,"open,1\n', "k.csv:2: not valid comma-separated text"),
    ],
)
def test_each_bad_row_is_one_error_naming_file_line_and_column(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_as2_file(path)
    assert str(caught.value).startswith(f"{tmp_path}/{message}")
    assert "\n" not in str(caught.value)


def test_a_mapped_column_must_exist_and_the_error_names_the_files_column(tmp_path):
    path = write(tmp_path / "p.parquet", frame(RECORDS))
    with pytest.raises(
        InputError, match=r"p\.parquet: field 'Relevant': no column 'Relevant'; the"
    ):
        read_as2_file(path, {"label": "Relevant"})
    bad = frame(RECORDS)
    bad.loc[3, "label"] = 3
    with pytest.raises(InputError, match=r"bad\.parquet:4: field 'label': expected 0/1 or true"):
        read_as2_file(write(tmp_path / "bad.parquet", bad))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("empty.csv", "", "empty: no header line"),
        ("header.tsv", "question\tcandidate\tlabel\n", "empty: no rows"),
        ("blank.jsonl", "\n\n", "empty: no JSON object"),
        ("no-positive.csv", "question,candidate,label\nq,a,0\nq,b,false\n", "field 'label': no"),
    ],
)  # fmt: skip
def test_empty_files_and_files_without_a_positive_are_refused(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=f"{name}: {message}"):
        read_as2_file(path)


def test_unknown_suffixes_and_missing_files_are_refused(tmp_path):
    with pytest.raises(InputError, match=r"x\.txt: expected a \.tsv, \.csv, \.jsonl, \.parquet"):
        read_as2_file(tmp_path / "x.txt")
    with pytest.raises(InputError, match=r"y\.csv: no such file"):
        load_as2(str(tmp_path / "y.csv"))
    with pytest.raises(InputError, match=r"z\.csv: a split \('dev'\) selects part of a dataset"):
        read_as2_file(write(tmp_path / "z.csv", frame(RECORDS)), split="dev")


def pair(qid: str, label: int, question: str = "q?") -> As2Record:
    return As2Record(qid, question, f"answer {label}", label)


def test_fine_tuning_splits_refuse_leaks_unanswered_dev_questions_and_no_negatives():
    train = [pair("a", 1), pair("a", 0), pair("b", 1), pair("b", 0)]
    check_fine_tuning_splits(train, [pair("c", 1), pair("c", 0)], [pair("d", 1), pair("d", 0)])
    dev = [pair("c", 1), pair("c", 0), pair("d", 0), pair("e", 0)]
    with pytest.raises(InputError, match=r"field 'dev': 2 of 3 questions have no positive answer"):
        check_fine_tuning_splits(train, dev)
    with pytest.raises(InputError, match=r"field 'dev': 1 question\(s\) are also in train .*'b'"):
        check_fine_tuning_splits(train, [pair("b", 1), pair("b", 0)])
    with pytest.raises(InputError, match=r"field 'test': .* also in dev"):
        check_fine_tuning_splits(train, [pair("c", 1), pair("c", 0)], [pair("c", 1), pair("c", 0)])
    with pytest.raises(
        InputError, match=r"field 'train': every pair is positive .*--mine-negatives"
    ):
        check_fine_tuning_splits([pair("a", 1)], [pair("c", 1), pair("c", 0)])


def test_records_read_from_jsonl_written_by_json_dumps_keep_unicode(tmp_path):
    path = tmp_path / "u.jsonl"
    row = {"question": "Où est-il ?", "candidate": "Ici 😀.", "label": 1}
    path.write_text(json.dumps(row) + "\n")  # ASCII escapes, surrogate pairs included
    [record] = read_as2_file(path)
    assert (record.question, record.candidate) == ("Où est-il ?", "Ici 😀.")
