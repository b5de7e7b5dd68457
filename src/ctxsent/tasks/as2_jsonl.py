"""AS2 records as JSON Lines: one :class:`As2Record` object per line, the toolkit's own format.

Required keys: ``question_id``, ``question``, ``candidate``, ``label`` (0/1); optional:
``previous``, ``next``, ``document_id``, ``document_title``. Other keys are rejected, so a
misspelt field fails loudly instead of being silently dropped.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path

from ctxsent.errors import InputError
from ctxsent.io import atomic_write, read_json_lines
from ctxsent.tasks.as2_records import As2Record

FIELDS = tuple(field.name for field in fields(As2Record))
REQUIRED_FIELDS = ("question_id", "question", "candidate", "label")
_TEXT_FIELDS = tuple(name for name in FIELDS if name != "label")


def read_as2_jsonl(path: str | Path) -> list[As2Record]:
    """Read AS2 records from a ``.jsonl`` (or ``.jsonl.gz``) file; blank lines are skipped.

    Equal strings are shared between records (SQuAD-AS2 repeats each sentence as candidate
    and as context for hundreds of questions), which keeps memory close to the text size.
    """
    shared: dict[str, str] = {}
    records: list[As2Record] = []
    for line_no, obj in read_json_lines(path):
        _check_record(path, line_no, obj)
        for name in _TEXT_FIELDS:
            if name in obj:
                obj[name] = shared.setdefault(obj[name], obj[name])
        records.append(As2Record(**obj))
    return records


def write_as2_jsonl(records: Iterable[As2Record], path: str | Path) -> int:
    """Write ``records`` to ``path`` atomically (temporary file, then rename); return the count."""
    # Each distinct string is JSON-encoded once: candidates recur as context of many pairs.
    encode = functools.lru_cache(maxsize=1 << 16)(json.JSONEncoder(ensure_ascii=False).encode)
    keys = {name: json.dumps(name) + ":" for name in FIELDS}
    count = 0
    with atomic_write(path) as handle:
        for record in records:
            items = [key + encode(getattr(record, name)) for name, key in keys.items()]
            handle.write("{" + ",".join(items) + "}\n")
            count += 1
    return count


def _check_record(path: str | Path, line_no: int, obj: dict) -> None:
    unknown = sorted(set(obj) - set(FIELDS))
    if unknown:
        raise InputError(
            f"unknown field(s) {unknown}; expected {list(FIELDS)}", path=path, line=line_no
        )
    for name in REQUIRED_FIELDS:
        if name not in obj:
            raise InputError("missing", path=path, line=line_no, field=name)
    for name in _TEXT_FIELDS:
        if not isinstance(obj.get(name, ""), str):
            raise InputError("expected a string", path=path, line=line_no, field=name)
    for name in ("question_id", "question", "candidate"):
        if not obj[name].strip():
            raise InputError("empty text", path=path, line=line_no, field=name)
    label = obj["label"]
    if type(label) is not int or label not in (0, 1):
        raise InputError(f"expected 0 or 1, got {label!r}", path=path, line=line_no, field="label")
