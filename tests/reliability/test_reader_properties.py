"""Property tests: any file either reads, or raises ctxsent's InputError; never another crash.

Files are built from fragments that matter to each format (TABs, line breaks,
header names, labels, markup, JSON pieces) plus arbitrary text and bytes, and
written under the names the readers dispatch on (``.gz``, ``.xml``, ``.json``).
"""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxsent.corpus.readers import CorpusFormat, read_documents
from ctxsent.errors import InputError
from ctxsent.tasks.as2_jsonl import read_as2_jsonl
from ctxsent.tasks.as2_readers import (
    WIKIQA_HEADER,
    read_as2_tsv,
    read_asnq,
    read_selqa,
    read_trecqa,
    read_wikiqa,
)
from ctxsent.tasks.as2_records import As2Record

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FRAGMENTS = [
    "\t",
    "\n",
    "\r\n",
    " ",
    "",
    "0",
    "1",
    "2",
    "4",
    "-1",
    "x",
    "Q1",
    "D1-0",
    "D2-x",
    "é",
    "\x00",
    *WIKIQA_HEADER,
    "question",
    "candidate",
    "answer",
    "label",
    "qid",
    "previous",
    "next",
    "title",
    "<QApairs id='1'>",
    "</QApairs>",
    "<question>",
    "</question>",
    "<positive>",
    "</positive>",
    "<negative>",
    "</negative>",
    '<doc id="1" url="u" title="T">',
    "</doc>",
    " = T = ",
    " = = H = = ",
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    "null",
    '"text"',
    '"paragraphs"',
]
texts = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=40).map("".join)


def json_values(depth: int = 2):
    scalars = st.none() | st.booleans() | st.integers(-3, 5) | st.floats(allow_nan=False) | texts
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(JSON_KEYS) | st.text(max_size=4), inner, max_size=5)
        ),
        max_leaves=12,
    )


JSON_KEYS = [
    "question",
    "candidates",
    "answers",
    "article",
    "section",
    "question_id",
    "candidate",
    "label",
    "previous",
    "next",
    "document_id",
    "document_title",
    "data",
    "title",
    "paragraphs",
    "context",
    "text",
    "id",
]
contents = (
    texts.map(lambda s: s.encode("utf-8"))
    | st.binary(max_size=64)
    | json_values().map(lambda v: json.dumps(v).encode())
    | st.lists(json_values().map(json.dumps), max_size=4).map(lambda ls: "\n".join(ls).encode())
)


PACKING = {
    "plain": lambda data: data,
    "gzip": gzip.compress,
    "not-gzip": lambda data: data,  # named .gz, but not compressed
    "truncated-gzip": lambda data: gzip.compress(data)[:-6],
}
packings = st.sampled_from(["plain", "gzip"])


def check(read: Callable, name: str, data: bytes, packing: str = "plain") -> list | None:
    """Read ``data`` saved as ``name`` and packed: the result, or None on InputError."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / (name + ("" if packing == "plain" else ".gz"))
        path.write_bytes(PACKING[packing](data))
        try:
            return list(read(path))
        except InputError:
            return None


def assert_records(records: list | None) -> None:
    for record in records or []:
        assert isinstance(record, As2Record)
        assert record.label in (0, 1)
        assert record.question.strip() and record.candidate.strip()


AS2_READERS = [
    (read_wikiqa, "WikiQA-test.tsv"),
    (read_selqa, "selqa-ass-test.json"),
    (read_asnq, "dev.tsv"),
    (read_trecqa, "test.xml"),
    (read_trecqa, "test.tsv"),
    (read_as2_tsv, "data.tsv"),
    (read_as2_jsonl, "data.jsonl"),
]


@pytest.mark.parametrize(("read", "name"), AS2_READERS, ids=lambda x: getattr(x, "__name__", x))
@SETTINGS
@given(data=contents, packing=packings)
def test_as2_readers_read_or_raise_input_error(read, name, data, packing):
    assert_records(check(read, name, data, packing))


@SETTINGS
@given(
    rows=st.lists(st.lists(st.sampled_from(FRAGMENTS) | texts, min_size=7, max_size=7), max_size=5)
)
def test_wikiqa_rows_with_the_right_shape_read_or_raise_input_error(rows):
    lines = ["\t".join(WIKIQA_HEADER)] + ["\t".join(row) for row in rows]
    assert_records(check(read_wikiqa, "WikiQA-dev.tsv", "\n".join(lines).encode()))


@pytest.mark.parametrize("fmt", [f for f in CorpusFormat], ids=str)
@SETTINGS
@given(data=contents, packing=packings)
def test_corpus_readers_read_or_raise_input_error(fmt, data, packing):
    name = {"squad": "dev.json", "jsonl": "docs.jsonl"}.get(fmt.value, "corpus.txt")
    documents = check(lambda path: read_documents(path, fmt), name, data, packing)
    for document in documents or []:
        assert all(isinstance(p, str) and p.strip() for p in document.paragraphs)


ALL_READERS = [*AS2_READERS] + [
    (lambda path, fmt=fmt: read_documents(path, fmt), f"corpus-{fmt.value}.txt")
    for fmt in CorpusFormat
]


@pytest.mark.parametrize(("read", "name"), ALL_READERS, ids=lambda x: getattr(x, "__name__", x))
@pytest.mark.parametrize("packing", ["not-gzip", "truncated-gzip"])
def test_corrupt_gzip_files_raise_input_error(read, name, packing):
    check(
        read, name, b"question\tcandidate\tlabel\nq\ta\t1\n", packing
    )  # a result or InputError; BadGzipFile/EOFError fail
