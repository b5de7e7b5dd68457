"""One entry point for every AS2 data set: ``load_as2("wikiqa:../shared/data/wikiqa", "test")``.

A spec is ``NAME:PATH``. PATH is a data set folder, in which ``split`` picks the file, or
a file, in which case ``split`` must be left out. A user's own file (``.tsv``, ``.csv``,
``.jsonl``, ``.parquet``) or ``hf:``/``hf-disk:`` dataset is a spec too
(:mod:`ctxsent.tasks.as2_files`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ctxsent.errors import InputError
from ctxsent.tasks.as2_files import is_as2_file, read_as2_file
from ctxsent.tasks.as2_jsonl import read_as2_jsonl
from ctxsent.tasks.as2_readers import (
    read_as2_tsv,
    read_asnq,
    read_selqa,
    read_trecqa,
    read_wikiqa,
)
from ctxsent.tasks.as2_records import As2Record, clean_counted


@dataclass(frozen=True)
class As2Format:
    read: Callable[[str | Path], list[As2Record]]
    split_files: tuple[str, ...]
    """File names tried, in order, inside a folder; ``{split}`` is replaced by the split."""


FORMATS: dict[str, As2Format] = {
    "wikiqa": As2Format(read_wikiqa, ("WikiQA-{split}.tsv",)),
    "selqa": As2Format(
        read_selqa,
        (
            "ass/selqa-ass-{split}.json.gz",
            "ass/selqa-ass-{split}.json",
            "selqa-ass-{split}.json.gz",
            "selqa-ass-{split}.json",
        ),
    ),
    "trecqa": As2Format(
        read_trecqa, ("{split}-less-than-40.manual-edit.xml", "{split}.xml", "{split}.tsv")
    ),
    "asnq": As2Format(read_asnq, ("{split}.tsv",)),
    "squad-as2": As2Format(read_as2_jsonl, ("{split}.jsonl",)),
    "tsv": As2Format(read_as2_tsv, ()),
    "jsonl": As2Format(read_as2_jsonl, ()),
}


def load_as2(
    spec: str, split: str | None = None, columns: dict[str, str] | None = None
) -> list[As2Record]:
    """Load AS2 records from ``NAME:PATH``, NAME one of :data:`FORMATS` (a folder, in which
    ``split`` picks the file, or a file), or from a user's ``.tsv``/``.csv``/``.jsonl``/
    ``.parquet`` file or ``hf:``/``hf-disk:`` dataset
    (:func:`~ctxsent.tasks.as2_files.read_as2_file`, ``columns`` mapping its column names).
    Unknown names, missing paths and missing splits are refused listing the valid choices."""
    name, sep, path_text = spec.partition(":")
    if name not in FORMATS and is_as2_file(spec):
        return read_as2_file(spec, columns, split)
    if columns:
        problem = "column names apply to .tsv/.csv/.jsonl/.parquet files and hf: datasets"
        raise InputError(f"{problem}, not to {spec!r}", field="columns")
    if not sep or name not in FORMATS or not path_text:
        raise InputError(
            f"expected NAME:PATH with NAME one of {', '.join(FORMATS)}, a .tsv/.csv/.jsonl/"
            f".parquet file or an hf:/hf-disk: dataset; got {spec!r}",
            field="spec",
        )
    fmt, path = FORMATS[name], Path(path_text)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if path.is_dir():
        return fmt.read(_split_file(name, fmt, path, split))
    if split is not None:
        raise InputError(f"a split ({split!r}) selects a file in a folder; got a file", path=path)
    return fmt.read(path)


def load_as2_sources(
    specs: Sequence[str],
    split: str | None = None,
    columns: dict[str, str] | None = None,
    balance: bool = False,
) -> list[As2Record]:
    """The records of several AS2 sets as one list (:func:`mix_sources`)."""
    return mix_sources([load_as2(spec, split, columns) for spec in specs], balance)


def mix_sources(sets: Sequence[Sequence[As2Record]], balance: bool = False) -> list[As2Record]:
    """Several AS2 sets as one, for multi-source training: batches of whole questions then mix
    sets in proportion to their questions, or, with ``balance``, about equally (each smaller
    set's questions repeated as new questions, ``"#k"`` added to their ids, until it has about
    as many as the largest). With more than one set, question ids get their set's number
    (``"1:Q12"``) so that equal ids of two sets stay two questions."""
    if len(sets) == 1:
        return list(sets[0])
    sizes = [len({record.question_id for record in records}) for records in sets]
    mixed = []
    for number, records in enumerate(sets):
        copies = max(1, round(max(sizes) / max(sizes[number], 1))) if balance else 1
        for copy in range(copies):
            suffix = f"#{copy}" if copy else ""
            mixed += [
                replace(record, question_id=f"{number}:{record.question_id}{suffix}")
                for record in records
            ]
    return mixed


def evaluation_records(
    data: str,
    split: str | None = None,
    clean_questions: bool = True,
    columns: dict[str, str] | None = None,
    default_split: str = "test",
) -> tuple[list[As2Record], dict[str, int]]:
    """The records of ``split`` of ``data`` (``default_split`` of a folder or data set when
    None; a file is one split, which a split refuses as in :func:`load_as2`), with only the
    questions that have both labels if ``clean_questions``, and how many questions that
    dropped, by reason (:func:`~ctxsent.tasks.as2_records.clean_counted`); an error when no
    question is left."""
    split = split_or_default(data, split, default_split)
    records = load_as2(data, split, columns)
    dropped = {"questions": 0, "no_positive": 0, "only_positives": 0}
    if clean_questions:
        records, dropped = clean_counted(records)
    if not records:
        where = data if split is None else f"split {split!r} of {data}"
        why = (
            f" ({dropped['questions']} without both labels dropped)" if dropped["questions"] else ""
        )
        raise InputError(f"{where} has no questions to evaluate{why}", field="data")
    return records, dropped


def split_or_default(spec: str, split: str | None, default: str = "test") -> str | None:
    """``split``, or ``default`` for a spec that :func:`takes_split` when ``split`` is None."""
    return default if split is None and takes_split(spec) else split


def takes_split(spec: str) -> bool:
    """Whether :func:`load_as2` takes a split for ``spec``: a folder of a built-in format,
    or an ``hf:`` dataset or saved DatasetDict (``hf-disk:``) named without ``@SPLIT``."""
    name, _, rest = spec.partition(":")
    if name in FORMATS:
        return Path(rest).is_dir()
    if name == "hf" or name == "hf-disk" and (Path(rest) / "dataset_dict.json").is_file():
        return "@" not in rest
    return False


def available_splits(fmt: As2Format, folder: Path) -> list[str]:
    """Splits for which ``folder`` holds a file of ``fmt``."""
    found: set[str] = set()
    for pattern in fmt.split_files:
        head, _, tail = pattern.partition("{split}")
        regex = re.compile(re.escape(head) + "(.+)" + re.escape(tail))
        for candidate in folder.glob(pattern.replace("{split}", "*")):
            match = regex.fullmatch(candidate.relative_to(folder).as_posix())
            if match:
                found.add(match.group(1))
    return sorted(found)


def _split_file(name: str, fmt: As2Format, folder: Path, split: str | None) -> Path:
    """The file of ``split`` in ``folder``, or an error saying which file was expected."""
    if not fmt.split_files:
        raise InputError(f"{name}: expected a file, got a folder", path=folder)
    if split is not None:
        for pattern in fmt.split_files:
            if (folder / pattern.format(split=split)).is_file():
                return folder / pattern.format(split=split)
    named = "a folder named like a file: " if folder.suffix else ""
    expected = " or ".join(pattern.format(split=split or "SPLIT") for pattern in fmt.split_files)
    problem = "no split given" if split is None else f"no {name} file for split {split!r}"
    splits = ", ".join(available_splits(fmt, folder)) or "none"
    raise InputError(f"{named}{problem} (expected {expected}); splits here: {splits}", path=folder)
