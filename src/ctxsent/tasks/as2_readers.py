"""Readers for AS2 benchmark files: WikiQA, SelQA, ASNQ, TrecQA and a generic TSV.

Each reader returns ``list[As2Record]`` with questions in file order and each question's
candidates together. Where a file lists a question's candidates in document order
(WikiQA, SelQA, ASNQ), ``previous``/``next`` are rebuilt from that order, as contextual AS2
needs (SSP paper, section 3; Lauriola and Moschitti 2021). Bad input raises
:class:`~ctxsent.errors.InputError` naming the file, the line (or JSON entry) and the field.
Formats are described in ``../shared/data/README.md``.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from operator import itemgetter
from pathlib import Path

from ctxsent.errors import InputError
from ctxsent.io import check_file, open_text, read_lines
from ctxsent.tasks.as2_files import _delimited_table, _records
from ctxsent.tasks.as2_records import As2Record, with_context

WIKIQA_HEADER = (
    "QuestionID",
    "Question",
    "DocumentID",
    "DocumentTitle",
    "SentenceID",
    "Sentence",
    "Label",
)
ASNQ_LABELS = {"1": 0, "2": 0, "3": 0, "4": 1}
"""ASNQ (Garg et al. 2020): label 4 = sentence holds the short answer inside the long answer."""

TSV_COLUMNS = {
    "question_id": ("question_id", "qid", "questionid"),
    "question": ("question",),
    "candidate": ("candidate", "answer", "sentence"),
    "label": ("label",),
    "previous": ("previous", "prev"),
    "next": ("next",),
    "document_id": ("document_id", "doc_id", "documentid"),
    "document_title": ("document_title", "doc_title", "title", "documenttitle"),
}
"""Generic TSV header names (case-insensitive) accepted for each :class:`As2Record` field."""
REQUIRED_TSV_FIELDS = ("question", "candidate", "label")

_WIKIQA_SENTENCE_ID = re.compile(r"D\d+-(\d+)")
_TRECQA_OPEN = re.compile(r"""<QApairs\s+id\s*=\s*(['"])(.*?)\1\s*>""")
_TRECQA_BLOCKS = {"question": None, "positive": 1, "negative": 0}


def read_wikiqa(path: str | Path) -> list[As2Record]:
    """Read a WikiQA TSV (``WikiQA-{train,dev,test}.tsv``; CRLF or LF line endings).

    Context comes from document order: ``SentenceID`` is ``D<doc>-<k>`` with ``k`` the
    sentence's 0-based position in the page summary, so each question's candidates are
    sorted by ``k`` before ``previous``/``next`` are filled in.
    """
    lines = read_lines(path)
    _check_header(path, next(lines, (1, ""))[1].split("\t"), WIKIQA_HEADER)
    groups: dict[str, list[tuple[int, As2Record]]] = {}
    for line_no, line in lines:
        qid, question, doc_id, title, sentence_id, sentence, label = _split(
            path, line_no, line, len(WIKIQA_HEADER)
        )
        position = _WIKIQA_SENTENCE_ID.fullmatch(sentence_id)
        if position is None:
            raise InputError(
                f"expected D<doc>-<k>, got {sentence_id!r}",
                path=path,
                line=line_no,
                field="SentenceID",
            )
        record = As2Record(
            question_id=_text(path, line_no, "QuestionID", qid),
            question=_text(path, line_no, "Question", question),
            candidate=_text(path, line_no, "Sentence", sentence),
            label=_binary_label(path, line_no, "Label", label),
            document_id=doc_id,
            document_title=title,
        )
        groups.setdefault(qid, []).append((int(position.group(1)), record))
    ordered = [
        record for group in groups.values() for _, record in sorted(group, key=itemgetter(0))
    ]
    return list(with_context(ordered))


def read_selqa(path: str | Path) -> list[As2Record]:
    """Read a SelQA answer-selection JSON file (``selqa-ass-{split}.json[.gz]``).

    Empty (whitespace-only) candidates are dropped, as in the published TSV version behind
    the reported counts (dev 9,377 pairs, test 19,435); context is then rebuilt from the
    order of the remaining candidates, so an empty sentence never becomes a neighbour.
    Question ids are ``<file stem>-<index>`` because question texts repeat (dev has one
    duplicate); ``document_id`` is ``article#section`` (the candidates are that section's
    sentences) and ``document_title`` the article.
    """
    path = Path(path)
    entries = read_json(path)
    if not isinstance(entries, list):
        raise InputError("expected a JSON array of questions", path=path)
    stem = path.name.removesuffix(".gz").removesuffix(".json")
    records: list[As2Record] = []
    for index, entry in enumerate(entries):
        question = _json_text(path, index, entry, "question")
        candidates = _json_field(path, index, entry, "candidates", list)
        answers = _json_field(path, index, entry, "answers", list)
        if not all(isinstance(a, int) and 0 <= a < len(candidates) for a in answers):
            raise InputError(
                f"entry {index}: {answers} are not all indices into the "
                f"{len(candidates)} candidates",
                path=path,
                field="answers",
            )
        article = str(entry.get("article", ""))
        document_id = f"{article}#{entry.get('section', '')}"
        for position, candidate in enumerate(candidates):
            if not isinstance(candidate, str):
                raise InputError(
                    f"entry {index}: candidate {position} is not a string",
                    path=path,
                    field="candidates",
                )
            if candidate.strip():
                records.append(
                    As2Record(
                        question_id=f"{stem}-{index}",
                        question=question,
                        candidate=candidate,
                        label=int(position in answers),
                        document_id=document_id,
                        document_title=article,
                    )
                )
    return list(with_context(records))


def read_asnq(path: str | Path) -> list[As2Record]:
    """Read an ASNQ TSV: ``question<TAB>sentence<TAB>label`` without a header.

    Label 4 is positive, 1-3 negative. Rows are grouped into questions by question text
    (ids ``<file stem>-<n>`` in first-seen order); context is rebuilt from the file order
    of each question's sentences, which ASNQ lists in document order.
    """
    stem = Path(path).name.removesuffix(".gz").removesuffix(".tsv")
    qids: dict[str, str] = {}
    groups: dict[str, list[As2Record]] = {}
    for line_no, line in read_lines(path):
        question, sentence, label = _split(path, line_no, line, 3)
        if label not in ASNQ_LABELS:
            raise InputError(
                f"expected one of 1, 2, 3, 4, got {label!r}", path=path, line=line_no, field="label"
            )
        _text(path, line_no, "question", question)
        qid = qids.setdefault(question, f"{stem}-{len(qids)}")
        candidate = _text(path, line_no, "sentence", sentence)
        groups.setdefault(qid, []).append(As2Record(qid, question, candidate, ASNQ_LABELS[label]))
    return list(with_context([record for group in groups.values() for record in group]))


def read_trecqa_xml(path: str | Path) -> list[As2Record]:
    """Read TrecQA in Yao et al.'s (2013) pseudo-XML (``*-less-than-40.manual-edit.xml``).

    Each ``<QApairs id='…'>`` block holds one ``<question>`` and ``<positive>`` /
    ``<negative>`` blocks; the first line inside a block is the TAB-separated tokens
    (joined here with single spaces), the following lines (POS, dependencies, NER) are
    skipped. Text is not HTML-escaped, so the file is parsed line by line, not as XML.
    Candidates come from different documents: ``previous``/``next`` stay empty.
    """
    records: list[As2Record] = []
    qid: str | None = None
    question: str | None = None
    block: str | None = None
    tokens: str | None = None
    for line_no, raw in read_lines(path):
        line = raw.strip()
        if block is not None:
            if line == f"</{block}>":
                if tokens is None:
                    raise InputError(f"empty <{block}> block", path=path, line=line_no)
                if block == "question":
                    question = tokens
                else:
                    records.append(As2Record(qid, question, tokens, _TRECQA_BLOCKS[block]))
                block = tokens = None
            elif tokens is None:
                tokens = _text(path, line_no, block, " ".join(line.split()))
        elif opening := _TRECQA_OPEN.fullmatch(line):
            if qid is not None:
                raise InputError("<QApairs> inside <QApairs>", path=path, line=line_no)
            qid, question = opening.group(2), None
        elif qid is not None and line == "</QApairs>":
            qid = None
        elif qid is not None and line[1:-1] in _TRECQA_BLOCKS and line == f"<{line[1:-1]}>":
            block = line[1:-1]
            if (block == "question") == (question is not None):
                problem = "second <question>" if question else f"<{block}> before <question>"
                raise InputError(f"{problem} in <QApairs id='{qid}'>", path=path, line=line_no)
        elif line:
            raise InputError(f"unexpected line {line[:40]!r}", path=path, line=line_no)
    if qid is not None or block is not None:
        raise InputError("file ends inside a <QApairs> block", path=path)
    return records


def read_trecqa(path: str | Path) -> list[As2Record]:
    """TrecQA as pseudo-XML (``.xml``) or as TSV with header ``qid question answer label``."""
    if Path(path).suffix == ".xml":
        return read_trecqa_xml(path)
    if Path(path).suffix == ".tsv":
        return read_as2_tsv(path)
    raise InputError("expected a TrecQA .xml or .tsv file", path=path)


def read_as2_tsv(path: str | Path) -> list[As2Record]:
    """Read a TSV with a header naming at least question, candidate and label columns.

    Accepted header names per field are in :data:`TSV_COLUMNS` (e.g. TrecQA's
    ``qid question answer label``); rows are read as :func:`~ctxsent.tasks.as2_files.read_as2_file`
    reads them. Without a qid column, questions get ids ``<file stem>-<n>`` by question text.
    """
    table = _delimited_table(check_file(path), "\t")
    columns = _tsv_columns(path, table.columns)
    records = _records(table, columns)
    if "question_id" in columns:
        return records
    stem = Path(path).name.removesuffix(".gz").removesuffix(".tsv")
    qids: dict[str, str] = {}
    return [
        replace(r, question_id=qids.setdefault(r.question_id, f"{stem}-{len(qids)}"))
        for r in records
    ]


def _tsv_columns(path: str | Path, header: list[str]) -> dict[str, str]:
    """Field -> the header's column for it (:data:`TSV_COLUMNS`, any case)."""
    columns: dict[str, str] = {}
    for field, aliases in TSV_COLUMNS.items():
        found = [name for name in header if name.lower() in aliases]
        if len(found) > 1:
            raise InputError(f"header has several columns for {field}: {found}", path=path, line=1)
        if found:
            columns[field] = found[0]
        elif field in REQUIRED_TSV_FIELDS:
            raise InputError(
                f"header has no column named {' or '.join(aliases)}; found {header}",
                path=path,
                line=1,
                field=field,
            )
    return columns


def _check_header(path: str | Path, header: list[str], expected: tuple[str, ...]) -> None:
    if tuple(header) != expected:
        missing = [name for name in expected if name not in header]
        problem = f"missing column(s) {', '.join(missing)}" if missing else f"got {header}"
        raise InputError(f"expected header {' '.join(expected)}; {problem}", path=path, line=1)


def _split(path: str | Path, line_no: int, line: str, n_columns: int) -> list[str]:
    values = line.split("\t")
    if len(values) != n_columns:
        raise InputError(
            f"expected {n_columns} TAB-separated columns, found {len(values)}",
            path=path,
            line=line_no,
        )
    return values


def _text(path: str | Path, line_no: int, field: str, value: str) -> str:
    if not value.strip():
        raise InputError("empty text", path=path, line=line_no, field=field)
    return value


def _binary_label(path: str | Path, line_no: int, field: str, value: str) -> int:
    if value.strip() not in ("0", "1"):
        raise InputError(f"expected 0 or 1, got {value!r}", path=path, line=line_no, field=field)
    return int(value)


def read_json(path: str | Path, encoding: str = "utf-8") -> object:
    """Parse a JSON file (``.gz`` allowed); bad text or JSON raises :class:`InputError`."""
    try:
        with open_text(path, encoding) as handle:
            return json.load(handle)
    except UnicodeDecodeError as err:
        raise InputError(f"not valid {encoding} text ({err.reason})", path=path) from None
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON ({err.msg})", path=path, line=err.lineno) from None


def _json_field(path: Path, index: int, entry: object, field: str, kind: type) -> object:
    value = entry.get(field) if isinstance(entry, dict) else None
    if not isinstance(value, kind):
        raise InputError(
            f"entry {index}: expected a {kind.__name__}, got {type(value).__name__}",
            path=path,
            field=field,
        )
    return value


def _json_text(path: Path, index: int, entry: object, field: str) -> str:
    value = _json_field(path, index, entry, field, str)
    if not value.strip():
        raise InputError(f"entry {index}: empty text", path=path, field=field)
    return value
