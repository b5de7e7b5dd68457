"""Evaluation data kept out of a pre-training corpus: articles by title, sentences by text.

``--exclude-from NAME:PATH`` (:func:`exclusions_from_source`) names any evaluation set the
toolkit reads: ``titles:FILE`` drops the documents titled as a line of FILE; sets drawn from
Wikipedia drop documents by title (:data:`~ctxsent.corpus.titles.TITLE_SOURCES`:
``wikiqa:``, ``selqa:``, ``squad:``, ``squad-as2:``, ``wikitext:``); STS and SentEval sets
drop single sentences: ``senteval:DIR`` every task of ``ctxsent eval senteval``'s default
list that DIR (laid out like ``../shared/data``) holds, a task name (``sts12:DIR``,
``sick-r:DIR``, ``mr:DIR``, ...) one.

Exclusion by sentence (a choice; no paper covers it): every evaluation text is split with
the corpus's splitter, and a corpus sentence long enough to be kept is dropped when it
equals one of those sentences after :func:`normalize_sentence`. Equality, not containment:
MPQA's phrases ("good") and SST's fragments would otherwise remove every sentence using
them. Only the sentence goes, not its document: the items are isolated sentences, and the
text around a match is in no evaluation set.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ctxsent.corpus.titles import TITLE_SOURCES
from ctxsent.errors import InputError
from ctxsent.tasks.senteval import DEFAULT_TASKS, Sentences, SentEvalTask, get_task, load_task
from ctxsent.text import split_sentences

ALL_SENTEVAL_TASKS = "senteval"
_NOT_LETTER_OR_DIGIT = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class Exclusions:
    """Titles of documents and texts of sentences to drop, as read from a source."""

    titles: frozenset[str] = frozenset()
    sentences: frozenset[str] = frozenset()


def normalize_sentence(text: str) -> str:
    """NFKC, case-folded, letters and digits only: ``It's 24.8 million .`` and
    ``it 's 24.8 million.`` (PTB tokenisation, removed citations) compare equal."""
    return _NOT_LETTER_OR_DIGIT.sub("", unicodedata.normalize("NFKC", text).casefold())


def normalize_sentences(sentences: Iterable[str]) -> frozenset[str]:
    normalized = (normalize_sentence(sentence) for sentence in sentences)
    return frozenset(text for text in normalized if text)


def exclusions_from_source(spec: str) -> Exclusions:
    """What ``NAME:PATH`` excludes (see the module docstring)."""
    name, sep, path = spec.partition(":")
    name = name.lower()
    if sep and path and name in TITLE_SOURCES:
        return Exclusions(titles=frozenset(TITLE_SOURCES[name](path)))
    if sep and path and (name == ALL_SENTEVAL_TASKS or _is_senteval_task(name)):
        return Exclusions(sentences=frozenset(sentences_from_senteval(name, path)))
    raise InputError(
        f"expected NAME:PATH with NAME one of {', '.join(TITLE_SOURCES)}, "
        f"{ALL_SENTEVAL_TASKS} or a SentEval/STS task (mr, sts12, stsb, sick-r, …); got {spec!r}",
        field="exclude_from",
    )


def sentences_from_senteval(name: str, data_dir: str | Path) -> Iterator[str]:
    """The sentences of one SentEval/STS task's files, or of every default task found."""
    for task in _senteval_tasks(name, Path(data_dir)):
        for split in load_task(task, data_dir).splits.values():
            texts = split.texts if isinstance(split, Sentences) else [*split.first, *split.second]
            for text in texts:
                yield from split_sentences(text)


def _senteval_tasks(name: str, data_dir: Path) -> list[SentEvalTask]:
    """The task ``name``, or for ``senteval`` each default task whose folder ``data_dir`` holds
    (once per folder: SICK-E and SICK-R read the same files)."""
    if name != ALL_SENTEVAL_TASKS:
        return [get_task(name)]
    by_folder: dict[str, SentEvalTask] = {}
    for task in map(get_task, DEFAULT_TASKS):
        if (data_dir / task.path).is_dir():
            by_folder.setdefault(task.path, task)
    if not by_folder:
        raise InputError(
            "holds none of senteval/, sts12/, stsbenchmark/ (laid out as ../shared/data)",
            path=data_dir,
        )
    return list(by_folder.values())


def _is_senteval_task(name: str) -> bool:
    try:
        get_task(name)
    except InputError:
        return False
    return True
