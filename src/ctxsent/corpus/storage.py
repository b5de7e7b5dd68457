"""Arrow storage of a corpus: an HF ``datasets`` folder with one row per document.

Row schema: ``{"id": str, "title": str, "paragraphs": list[list[str]]}``
(``paragraphs[i][j]`` is sentence j of paragraph i). The folder also holds
``summary.json`` (counts, filters, inputs). ``datasets`` is imported lazily so
that importing :mod:`ctxsent.corpus` stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ctxsent.corpus.document import Document
from ctxsent.errors import InputError

if TYPE_CHECKING:
    import datasets

SUMMARY_FILE = "summary.json"
_ITER_BATCH = 256


def corpus_features() -> datasets.Features:
    """The ``datasets`` features of a corpus row."""
    from datasets import Features, List, Value

    return Features(
        {"id": Value("string"), "title": Value("string"), "paragraphs": List(List(Value("string")))}
    )


@dataclass
class Corpus:
    """A built corpus: the memory-mapped Arrow dataset, its summary, and documents on iteration."""

    dataset: datasets.Dataset
    summary: dict

    def __len__(self) -> int:
        return len(self.dataset)

    def __iter__(self) -> Iterator[Document]:
        for batch in self.dataset.iter(batch_size=_ITER_BATCH):
            for id_, title, paragraphs in zip(
                batch["id"], batch["title"], batch["paragraphs"], strict=True
            ):
                yield Document(id=id_, title=title, paragraphs=paragraphs)


def is_corpus_dir(path: str | Path) -> bool:
    path = Path(path)
    return (path / SUMMARY_FILE).is_file() and (path / "dataset_info.json").is_file()


def load_corpus(path: str | Path) -> Corpus:
    """Open a corpus folder written by :func:`~ctxsent.corpus.build.build_corpus`."""
    from datasets import load_from_disk

    path = Path(path)
    if not is_corpus_dir(path):
        raise InputError(f"not a corpus folder (no {SUMMARY_FILE} or dataset_info.json)", path=path)
    dataset = load_from_disk(str(path))
    if dataset.features != corpus_features():
        raise InputError(f"unexpected columns {dataset.features}", path=path)
    summary = json.loads((path / SUMMARY_FILE).read_text(encoding="utf-8"))
    return Corpus(dataset=dataset, summary=summary)
