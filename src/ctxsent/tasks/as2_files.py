"""A user's own AS2 data: TSV, CSV, JSON Lines, Parquet or a Hugging Face dataset.

``read_as2_file("pairs.csv", {"question": "Query", "candidate": "Passage"})`` reads

* ``FILE.tsv`` / ``FILE.csv`` (``.gz`` allowed) with a header line: CSV is RFC 4180 (quoted
  fields may span lines), TSV has no quoting; blank lines are skipped.
* ``FILE.jsonl`` (``.gz`` allowed): one object per line, the first one's keys the columns.
* ``FILE.parquet``.
* ``hf:NAME[:CONFIG][@SPLIT]`` (``datasets.load_dataset``: a hub id or a local folder of data
  files) and ``hf-disk:PATH[@SPLIT]`` (``datasets.load_from_disk``); a DatasetDict needs a
  split unless it has one only.

Columns are the :class:`As2Record` fields (:data:`FIELDS`): ``question`` and ``candidate``
are required, ``label`` (0/1 or true/false), ``question_id``, ``previous``, ``next``,
``document_id`` and ``document_title`` optional; ``columns`` maps our names to the file's
(``--columns question=Query,label=Relevant``). Without a label every row is a positive pair
(mine negatives with :func:`~ctxsent.tasks.negative_mining.mine_negatives`); without a
question_id the question text is the id, also across files. ``document_id`` is the mining
pool and the unit of :func:`~ctxsent.tasks.negative_mining.split_by_document`. Records come
grouped by question (first appearance), candidates in file order; context is read from its
columns, never rebuilt from row order.

A file is read once, row by row. Bad input is a one-line :class:`InputError`
``FILE:LINE: field 'COLUMN': problem`` (LINE: the header is line 1 of a TSV/CSV; the row
number for Parquet and datasets): a missing column, an empty question or candidate, a
label that is not 0/1, an unpaired surrogate in JSON, a question id with two texts. An
empty file and one without a positive label are refused.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from ctxsent.errors import InputError
from ctxsent.io import check_file, open_text, read_json_lines, read_lines
from ctxsent.tasks.as2_records import As2Record
from ctxsent.tasks.negative_mining import CandidateScores, mine_negatives

FIELDS = tuple(field.name for field in fields(As2Record))
REQUIRED = ("question", "candidate")
SUFFIXES = (".tsv", ".csv", ".jsonl", ".parquet")
DATASET_PREFIXES = ("hf:", "hf-disk:")
_LABELS = {"0": 0, "1": 1, "false": 0, "true": 1}
_BATCH_ROWS = 10_000


def is_as2_file(spec: str) -> bool:
    """Whether :func:`read_as2_file` reads ``spec``: an ``hf:``/``hf-disk:`` spec, or a path
    ending in one of :data:`SUFFIXES` (text formats also with ``.gz``) that has no ``:`` or
    exists (so a mistyped ``NAME:PATH`` spec is not taken for a missing file)."""
    if spec.startswith(DATASET_PREFIXES):
        return True
    return _suffix(Path(spec)) in SUFFIXES and (":" not in spec or Path(spec).exists())


def parse_columns(text: str) -> dict[str, str]:
    """``"question=Query,label=Relevant"`` -> ``{"question": "Query", "label": "Relevant"}``.

    The ``--columns`` syntax: comma-separated ``FIELD=COLUMN`` pairs, FIELD one of
    :data:`FIELDS` (spaces around names are ignored).
    """
    columns: dict[str, str] = {}
    for part in text.split(","):
        ours, sep, theirs = (piece.strip() for piece in part.partition("="))
        if not (ours and sep and theirs):
            raise InputError(
                f"expected FIELD=COLUMN[,FIELD=COLUMN...], got {text!r}", field="columns"
            )
        if ours in columns:
            raise InputError(f"{ours} is mapped twice in {text!r}", field="columns")
        columns[ours] = theirs
    return _checked_columns(columns)


def read_as2_file(
    source: str | Path, columns: dict[str, str] | None = None, split: str | None = None
) -> list[As2Record]:
    """Read AS2 records from a file or a dataset spec (see the module docstring).

    ``split`` selects a split of an ``hf:``/``hf-disk:`` dataset named without ``@SPLIT``.
    """
    columns = _checked_columns(columns or {})
    table = _open_table(str(source), split)
    names = {field: columns.get(field, field) for field in FIELDS}
    for field in (*REQUIRED, *columns):
        if names[field] not in table.columns:
            raise InputError(
                f"no column {names[field]!r}; the columns are {', '.join(table.columns)}",
                path=table.name,
                line=table.header_line,
                field=names[field],
            )
    used = {field: name for field, name in names.items() if name in table.columns}
    return _records(table, used)


def read_fine_tuning_files(
    train: str,
    dev: str,
    test: str | None = None,
    columns: dict[str, str] | None = None,
    mine: CandidateScores | None = None,
    negatives: int = 5,
    seed: int = 0,
) -> tuple[list[As2Record], list[As2Record], list[As2Record]]:
    """``(train, dev, test)`` records from a user's files, checked before training starts.

    Each is read by :func:`read_as2_file` (``test`` may be left out: ``[]``); with ``mine``
    (:func:`ctxsent.resolver.candidate_scores`) each gets ``negatives`` mined per question from
    its own candidates (:func:`~ctxsent.tasks.negative_mining.mine_negatives`, no leakage
    between splits); then :func:`check_fine_tuning_splits`.
    """
    splits = [read_as2_file(source, columns) if source else [] for source in (train, dev, test)]
    if mine is not None:
        splits = [
            mine_negatives(split, mine, negatives, seed=seed) if split else [] for split in splits
        ]
    check_fine_tuning_splits(*splits)
    return splits[0], splits[1], splits[2]


def check_fine_tuning_splits(
    train: Sequence[As2Record], dev: Sequence[As2Record], test: Sequence[As2Record] = ()
) -> None:
    """Refuse splits of a user's data that a fine-tuning run would misuse, before it starts.

    Every split needs a negative (positives-only data: mine them first); every dev/test
    question needs a positive, since the metrics count a question without one as 0 and
    ``clean`` would drop it silently (DESIGN.md, AS2 metric conventions); no question id
    (the question text, without an id column) may be in two splits.
    """
    splits = {"train": train, "dev": dev, "test": test}
    seen: dict[str, set[str]] = {}
    for name, records in splits.items():
        if not records:
            continue
        if all(record.label for record in records):
            raise InputError(
                "every pair is positive (a file without a label column is read as question, "
                "answer pairs): add negatives with --mine-negatives bm25|bi-encoder",
                field=name,
            )
        positives: dict[str, int] = {}
        for record in records:
            positives[record.question_id] = positives.get(record.question_id, 0) + record.label
        if name != "train" and (lacking := [qid for qid, n in positives.items() if not n]):
            raise InputError(
                f"{len(lacking)} of {len(positives)} questions have no positive answer "
                f"(the first: {lacking[0]!r}); every metric would count them as 0, so label "
                "their answers or remove them",
                field=name,
            )
        for other, ids in seen.items():
            if shared := [qid for qid in positives if qid in ids]:
                raise InputError(
                    f"{len(shared)} question(s) are also in {other} (the first: {shared[0]!r}); "
                    "a question belongs to one split only (see split_by_document)",
                    field=name,
                )
        seen[name] = set(positives)


@dataclass(frozen=True)
class _Table:
    """A source's column names and a reader of ``(line, values)`` rows for some of them."""

    name: str
    columns: list[str]
    header_line: int | None
    rows: Callable[[list[str]], Iterator[tuple[int, tuple]]]


def _records(table: _Table, used: dict[str, str]) -> list[As2Record]:
    wanted = list(dict.fromkeys(used.values()))
    position = {field: wanted.index(name) for field, name in used.items()}
    texts = [field for field in position if field != "label"]
    shared: dict[str, str] = {}  # equal texts are stored once (candidates recur as context)
    groups: dict[str, list[As2Record]] = {}
    questions: dict[str, tuple[str, int]] = {}
    for line, values in table.rows(wanted):
        record = {
            field: _text(values[position[field]], shared, table.name, line, used[field])
            for field in texts
        }
        for field in ("question_id", *REQUIRED):
            if field in record and not record[field].strip():
                raise InputError("empty text", path=table.name, line=line, field=used[field])
        label = 1
        if "label" in position:
            label = _label(values[position["label"]], table.name, line, used["label"])
        qid = record.setdefault("question_id", record["question"])
        first, first_line = questions.setdefault(qid, (record["question"], line))
        if first != record["question"]:
            raise InputError(
                f"question id {qid!r} has another question text at line {first_line}",
                path=table.name,
                line=line,
                field=used["question"],
            )
        groups.setdefault(qid, []).append(As2Record(label=label, **record))
    if not groups:
        raise InputError("empty: no rows", path=table.name)
    records = [record for group in groups.values() for record in group]
    if not any(record.label for record in records):
        raise InputError(
            "no positive label: every label is 0", path=table.name, field=used["label"]
        )
    return records


def _text(value: object, shared: dict[str, str], name: str, line: int, field: str) -> str:
    """A text cell (a missing one is empty; an integer id becomes text), stored once."""
    if value is None or isinstance(value, str | int) and not isinstance(value, bool):
        value = "" if value is None else str(value)
        return shared.setdefault(value, value)
    problem = f"expected text, got {type(value).__name__} {value!r}"
    raise InputError(problem, path=name, line=line, field=field)


def _label(value: object, name: str, line: int, field: str) -> int:
    if isinstance(value, str):
        label = _LABELS.get(value.strip().lower())
    else:
        label = int(value) if isinstance(value, int | float) and value in (0, 1) else None
    if label is None:
        problem = f"expected 0/1 or true/false, got {value!r}"
        raise InputError(problem, path=name, line=line, field=field)
    return label


def _checked_columns(columns: dict[str, str]) -> dict[str, str]:
    unknown = sorted(set(columns) - set(FIELDS))
    if unknown:
        raise InputError(
            f"unknown field(s) {', '.join(unknown)}; the fields are {', '.join(FIELDS)}",
            field="columns",
        )
    return dict(columns)


def _suffix(path: Path) -> str:
    suffixes = path.suffixes
    if suffixes[-1:] == [".gz"] and suffixes[-2:-1] != [".parquet"]:
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def _open_table(source: str, split: str | None) -> _Table:
    if source.startswith(DATASET_PREFIXES):
        return _dataset_table(source, split)
    path = Path(source)
    suffix = _suffix(path)
    if suffix not in SUFFIXES:
        raise InputError(f"expected a {', '.join(SUFFIXES)} file or an hf: spec", path=path)
    check_file(path)
    if split is not None:
        raise InputError(f"a split ({split!r}) selects part of a dataset; got a file", path=path)
    if suffix == ".jsonl":
        return _jsonl_table(path)
    if suffix == ".parquet":
        return _parquet_table(path)
    return _delimited_table(path, "\t" if suffix == ".tsv" else ",")


#: The csv module's field limit while reading (its default, 131,072 characters, would refuse
#: a long passage that JSONL takes): the largest a C long holds everywhere.
CSV_FIELD_LIMIT = 2**31 - 1


def _delimited_table(path: Path, delimiter: str) -> _Table:
    kind = "TAB" if delimiter == "\t" else "comma"
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    csv.field_size_limit(CSV_FIELD_LIMIT)  # as JSONL: a field of any length a line can hold

    def rows() -> Iterator[tuple[int, list[str]]]:
        """``(first line, fields)`` of each non-blank row, the header first."""
        with open_text(path) as handle:
            reader = csv.reader(handle, delimiter=delimiter, quoting=quoting, strict=True)
            line = 1
            try:
                for values in reader:
                    if values:
                        yield line, values
                    line = reader.line_num + 1
            except csv.Error as err:
                problem = f"not valid {kind}-separated text ({err})"
                raise InputError(problem, path=path, line=line) from None
            except UnicodeDecodeError:
                for _ in read_lines(path):  # raises naming the line that is not UTF-8
                    pass
                raise

    header_line, header = next(rows(), (1, None))
    if header is None:
        raise InputError("empty: no header line", path=path)
    header = [name.strip() for name in header]

    def select(names: list[str]) -> Iterator[tuple[int, tuple]]:
        index = [header.index(name) for name in names]
        data = rows()
        next(data)
        for line, values in data:
            if len(values) != len(header):
                raise InputError(
                    f"expected {len(header)} {kind}-separated columns, found {len(values)}",
                    path=path,
                    line=line,
                )
            yield line, tuple(values[i] for i in index)

    return _Table(str(path), header, header_line, select)


def _jsonl_table(path: Path) -> _Table:
    line, first = next(read_json_lines(path), (None, None))
    if first is None:
        raise InputError("empty: no JSON object", path=path)

    def select(names: list[str]) -> Iterator[tuple[int, tuple]]:
        for line_no, obj in read_json_lines(path):
            yield line_no, tuple(obj.get(name) for name in names)

    return _Table(str(path), list(first), line, select)


def _parquet_table(path: Path) -> _Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"not a Parquet file ({err})", path=path) from None

    def batches(names: list[str]) -> Iterator[dict[str, list]]:
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=names):
            yield batch.to_pydict()

    return _Table(str(path), parquet.schema_arrow.names, None, _numbered(batches))


def _dataset_table(source: str, split: str | None) -> _Table:
    import datasets

    kind, _, rest = source.partition(":")
    if "@" in rest:
        rest, _, named = rest.rpartition("@")
        if split is not None:
            raise InputError(f"names split {named!r}; another ({split!r}) was asked", path=source)
        split = named
    try:
        if kind == "hf":
            name, _, config = rest.partition(":")
            data = datasets.load_dataset(name, config or None, split=split)
        else:
            data = datasets.load_from_disk(rest)
    except (OSError, ValueError) as err:  # FileNotFoundError, ConnectionError, unknown split
        raise InputError(f"cannot load the dataset: {err}", path=source) from None
    if isinstance(data, datasets.DatasetDict):
        if split is None and len(data) == 1:
            split = next(iter(data))
        if split not in data:
            problem = "no split given" if split is None else f"no split {split!r}"
            raise InputError(f"{problem}; the splits are {', '.join(data)}", path=source)
        data = data[split]
    elif kind == "hf-disk" and split is not None:
        raise InputError(f"a saved Dataset has no splits; got {split!r}", path=source)
    if not isinstance(data, datasets.Dataset):
        raise InputError(f"expected a Dataset, got {type(data).__name__}", path=source)

    def batches(names: list[str]) -> Iterable[dict[str, list]]:
        return data.select_columns(names).with_format(None).iter(batch_size=_BATCH_ROWS)

    return _Table(source, list(data.column_names), None, _numbered(batches))


def _numbered(
    batches: Callable[[list[str]], Iterable[dict[str, list]]],
) -> Callable[[list[str]], Iterator[tuple[int, tuple]]]:
    """Rows of column batches, numbered from 1 (the "line" of a Parquet file or dataset)."""

    def select(names: list[str]) -> Iterator[tuple[int, tuple]]:
        row = 0
        for batch in batches(names):
            for values in zip(*(batch[name] for name in names), strict=True):
                row += 1
                yield row, values

    return select
