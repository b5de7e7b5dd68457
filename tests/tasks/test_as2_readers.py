"""Every AS2 reader on small synthetic files, and the errors bad files give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxsent.errors import InputError
from ctxsent.tasks.as2_jsonl import read_as2_jsonl, write_as2_jsonl
from ctxsent.tasks.as2_readers import (
    read_as2_tsv,
    read_asnq,
    read_selqa,
    read_trecqa,
    read_wikiqa,
)
from ctxsent.tasks.as2_records import As2Record

WIKIQA = (
    "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\n"
    "Q1\twho is a?\tD1\tA\tD1-1\tA is b.\t1\n"  # listed out of document order on purpose
    'Q1\twho is a?\tD1\tA\tD1-0\tA "quoted" start.\t0\n'
    "Q1\twho is a?\tD1\tA\tD1-2\tThe end.\t0\n"
    "Q2\twhat is c?\tD2\tC\tD2-0\tC is d.\t0\n"
)


def context(records: list[As2Record]) -> list[tuple[str, str, str, int]]:
    return [(r.previous, r.candidate, r.next, r.label) for r in records]


def test_wikiqa_rebuilds_context_in_document_order_from_crlf_file(write_file) -> None:
    records = read_wikiqa(write_file("WikiQA-test.tsv", WIKIQA, newline="\r\n"))
    assert [r.question_id for r in records] == ["Q1", "Q1", "Q1", "Q2"]
    assert context(records) == [
        ("", 'A "quoted" start.', "A is b.", 0),
        ('A "quoted" start.', "A is b.", "The end.", 1),
        ("A is b.", "The end.", "", 0),
        ("", "C is d.", "", 0),
    ]
    assert records[0].document_id == "D1" and records[0].document_title == "A"
    assert records[1].question == "who is a?"


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_a_utf8_byte_order_mark_is_not_part_of_the_first_column(tmp_path: Path, suffix) -> None:
    import gzip

    plain, marked = tmp_path / f"plain.tsv{suffix}", tmp_path / f"marked.tsv{suffix}"
    write = gzip.open if suffix else open
    for path, prefix in ((plain, b""), (marked, b"\xef\xbb\xbf")):
        with write(path, "wb") as handle:
            handle.write(prefix + WIKIQA.encode())
    assert read_wikiqa(marked) == read_wikiqa(plain)


def test_selqa_drops_empty_candidates_and_keeps_duplicate_questions_apart(write_file) -> None:
    entry = {
        "question": "Where is X?",
        "article": "Art",
        "section": "Sec",
        "candidates": ["", "First.", " ", "Second has X.", "Third."],
        "answers": [3],
    }
    path = write_file("ass/selqa-ass-dev.json.gz", json.dumps([entry, entry]))
    records = read_selqa(path)
    assert [r.question_id for r in records] == ["selqa-ass-dev-0"] * 3 + ["selqa-ass-dev-1"] * 3
    assert context(records[:3]) == [
        ("", "First.", "Second has X.", 0),
        ("First.", "Second has X.", "Third.", 1),
        ("Second has X.", "Third.", "", 0),
    ]
    assert records[0].document_id == "Art#Sec" and records[0].document_title == "Art"


def test_asnq_maps_label_4_to_positive_and_groups_by_question_text(write_file) -> None:
    rows = ["q one\ts1\t1", "q one\ts2\t4", "q two\tt1\t3", "q one\ts3\t2", "q two\tt2\t4"]
    records = read_asnq(write_file("dev.tsv", "\n".join(rows) + "\n"))
    assert [r.question_id for r in records] == ["dev-0"] * 3 + ["dev-1"] * 2
    assert [r.label for r in records] == [0, 1, 0, 0, 1]
    assert context(records[:3]) == [("", "s1", "s2", 0), ("s1", "s2", "s3", 1), ("s2", "s3", "", 0)]
    assert records[3].previous == "" and records[3].next == "t2"


TRECQA_XML = """<QApairs id='1.1'>
<question>
Who\tis\tthe\tCEO\tof\tAT&T\t?
WP\tVBZ\tDT\tNN\tIN\tNNP\t.
nsubj\troot\tdet\tnsubj\tprep\tpobj\tpunct
</question>
<positive>
Randall\tStephenson\t<\tCEO\t>\tleads\tAT&T\t.
NNP\tNNP\t-LRB-\tNN\t-RRB-\tVBZ\tNNP\t.
</positive>
<negative>
AT&T\tis\ta\tcompany\t.
NNP\tVBZ\tDT\tNN\t.
</negative>
</QApairs>
<QApairs id='1.2'>
<question>
When\t?
WRB\t.
</question>
<negative>
Never\t.
RB\t.
</negative>
</QApairs>
"""


def test_trecqa_pseudo_xml_keeps_unescaped_characters_and_skips_annotation_lines(
    write_file,
) -> None:
    records = read_trecqa(write_file("test-less-than-40.manual-edit.xml", TRECQA_XML))
    assert [(r.question_id, r.label) for r in records] == [("1.1", 1), ("1.1", 0), ("1.2", 0)]
    assert records[0].question == "Who is the CEO of AT&T ?"
    assert records[0].candidate == "Randall Stephenson < CEO > leads AT&T ."
    assert records[2].question == "When ?" and records[2].previous == records[2].next == ""


def test_trecqa_tsv_and_generic_tsv_headers(write_file) -> None:
    trec = write_file(
        "test.tsv", "qid\tquestion\tanswer\tlabel\n7\tWho ?\tHim .\t1\n7\tWho ?\tNo .\t0\n"
    )
    assert [(r.question_id, r.candidate, r.label) for r in read_trecqa(trec)] == [
        ("7", "Him .", 1),
        ("7", "No .", 0),
    ]
    generic = write_file(
        "mine.tsv",
        "Label\tCandidate\tQuestion\tPrev\tNext\tTitle\n"
        "0\tc1\tq?\t\tc2\tDoc\n1\tc2\tq?\tc1\t\tDoc\n1\td1\tr?\t\t\tDoc\n",
    )
    records = read_as2_tsv(generic)
    assert [r.question_id for r in records] == ["mine-0", "mine-0", "mine-1"]
    assert context(records[:2]) == [("", "c1", "c2", 0), ("c1", "c2", "", 1)]
    assert records[0].document_title == "Doc" and records[0].document_id == ""


def test_jsonl_round_trip_with_unicode(tmp_path: Path) -> None:
    records = [
        As2Record("q1", "Qué?", 'Ça va "bien".', 1, "", "n", "d", "Tïtle"),
        As2Record("q1", "Qué?", "n", 0, 'Ça va "bien".', ""),
    ]
    path = tmp_path / "out" / "set.jsonl"
    assert write_as2_jsonl(records, path) == 2
    assert read_as2_jsonl(path) == records
    assert [p.name for p in path.parent.iterdir()] == ["set.jsonl"]  # no temporary left behind


# --- bad input: each error names the file and the line or field -----------------------------


def test_jsonl_refuses_an_unpaired_surrogate_escape_and_reads_a_paired_one(tmp_path: Path) -> None:
    row = '{"question_id": "q1", "question": "%s", "candidate": "c", "label": 1}\n'
    paired, lone = tmp_path / "paired.jsonl", tmp_path / "lone.jsonl"
    paired.write_text(row % "smile \\ud83d\\ude00?")
    lone.write_text(row % "ok" + row % "bad \\ud800?")
    assert read_as2_jsonl(paired)[0].question == "smile \U0001f600?"
    message = r"lone\.jsonl:2: field 'question': not valid Unicode: unpaired .*U\+D800"
    with pytest.raises(InputError, match=message):
        read_as2_jsonl(lone)


def test_wrong_column_count_names_file_and_line(write_file) -> None:
    path = write_file("WikiQA-dev.tsv", WIKIQA + "Q3\tq\tD3\tT\tD3-0\tonly six columns\n")
    with pytest.raises(InputError, match=r"WikiQA-dev\.tsv:6: expected 7 TAB-separated columns"):
        read_wikiqa(path)


def test_missing_column_is_named(write_file) -> None:
    wikiqa = write_file("WikiQA-dev.tsv", WIKIQA.replace("\tLabel\n", "\n", 1))
    with pytest.raises(InputError, match=r"WikiQA-dev\.tsv:1: .*missing column\(s\) Label"):
        read_wikiqa(wikiqa)
    generic = write_file("g.tsv", "question\tlabel\nq\t1\n")
    with pytest.raises(InputError, match=r"g\.tsv:1: field 'candidate': .*candidate or answer"):
        read_as2_tsv(generic)


@pytest.mark.parametrize(
    ("name", "text", "reader", "where"),
    [
        ("WikiQA-dev.tsv", WIKIQA.replace("what is c?", " "), read_wikiqa, ":5: field 'Question'"),
        ("dev.tsv", "q\ts\t4\n\ts\t1\n", read_asnq, ":2: field 'question'"),
        (
            "g.tsv",
            "qid\tquestion\tanswer\tlabel\n1\t\ta\t1\n",
            read_as2_tsv,
            ":2: field 'question'",
        ),
        ("g.tsv", "qid\tquestion\tanswer\tlabel\n \tq\ta\t1\n", read_as2_tsv, ":2: field 'qid'"),
        ("t.xml", TRECQA_XML.replace("When\t?", "\t"), read_trecqa, ":18: field 'question'"),
        (
            "selqa-ass-dev.json",
            '[{"question": "", "candidates": ["a"], "answers": [0]}]',
            read_selqa,
            ": field 'question': entry 0: empty text",
        ),
        (
            "s.jsonl",
            '{"question_id": "1", "question": "", "candidate": "c", "label": 0}\n',
            read_as2_jsonl,
            ":1: field 'question'",
        ),
    ],
)
def test_empty_text_names_file_and_line_or_field(
    write_file, name: str, text: str, reader, where: str
) -> None:
    path = write_file(name, text)
    with pytest.raises(InputError, match="empty text") as caught:
        reader(path)
    assert str(caught.value).startswith(str(path) + where)


def test_non_utf8_file_names_the_file_and_a_line(tmp_path: Path) -> None:
    path = tmp_path / "dev.tsv"
    path.write_bytes(b"q\ts\t4\nq\tcaf\xe9\t1\n")
    with pytest.raises(InputError, match=r"dev\.tsv:\d+: not valid utf-8"):
        read_asnq(path)


def test_non_utf8_error_points_at_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "dev.tsv"
    path.write_bytes(b"q\ts\t4\nq\tcaf\xe9\t1\n")
    with pytest.raises(InputError, match=r"dev\.tsv:2: not valid utf-8"):
        read_asnq(path)


@pytest.mark.parametrize(
    ("reader", "name", "text", "message"),
    [
        (read_wikiqa, "w.tsv", WIKIQA.replace("D1-2", "x"), ":4: field 'SentenceID'"),
        (read_wikiqa, "w.tsv", WIKIQA.replace("\t1\n", "\tyes\n"), ":2: field 'Label'"),
        (read_asnq, "a.tsv", "q\ts\t5\n", ":1: field 'label': expected one of 1, 2, 3, 4"),
        (read_selqa, "s.json", '[{"question": "q", "candidates": ["a"], "answers": [1]}]',
         ": field 'answers': entry 0"),
        (read_selqa, "s.json", '{"question": "q"}', ": expected a JSON array"),
        (read_selqa, "s.json", '[{"question": "q",', ":1: not valid JSON"),
        (read_trecqa, "t.xml", TRECQA_XML.replace("</QApairs>\n<Q", "<Q"), ":15: <QApairs> inside"),
        (read_trecqa, "t.xml", TRECQA_XML.replace("<negative>", "<question>", 1),
         ":11: second <question> in <QApairs id='1.1'>"),
        (read_trecqa, "t.xml", TRECQA_XML.replace("</QApairs>\n<QApairs id='1.2'>\n", ""),
         ":15: second <question> in <QApairs id='1.1'>"),
        (read_trecqa, "t.xml", TRECQA_XML.rsplit("</QApairs>", 1)[0], ": file ends inside"),
        (read_trecqa, "t.txt", "x", ": expected a TrecQA .xml or .tsv file"),
        (read_as2_jsonl, "j.jsonl", '{"question_id": "1", "question": "q", "candidate": "c"}',
         ":1: field 'label': missing"),
        (read_as2_jsonl, "j.jsonl",
         '{"question_id": "1", "question": "q", "candidate": "c", "label": 1, "lable": 0}',
         ":1: unknown field(s) ['lable']"),
        (read_as2_jsonl, "j.jsonl",
         '{"question_id": "1", "question": "q", "candidate": "c", "label": true}',
         ":1: field 'label': expected 0 or 1"),
    ],
)  # fmt: skip
def test_malformed_files_are_reported_with_their_place(
    write_file, reader, name: str, text: str, message: str
) -> None:
    path = write_file(name, text)
    with pytest.raises(InputError) as caught:
        reader(path)
    assert str(caught.value).startswith(str(path) + message)
