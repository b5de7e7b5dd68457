"""The one record schema for answer sentence selection (AS2).

A record is one (question, candidate) pair with the candidate's local context:
the sentence before and after it in its document (SSP paper, section 3,
"Contextual AS2"). Pairwise models ignore ``previous``/``next``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class As2Record:
    question_id: str
    question: str
    candidate: str
    label: int
    previous: str = ""
    next: str = ""
    document_id: str = ""
    document_title: str = ""

    @property
    def characters(self) -> int:
        """Characters of the text a model reads: question, candidate and context (how the
        service bounds its chunks and a cascade its forward passes)."""
        return len(self.question) + len(self.candidate) + len(self.previous) + len(self.next)


def group_by_question(records: Iterable[As2Record]) -> dict[str, list[As2Record]]:
    """Group records by ``question_id``, keeping first-seen order of questions and candidates."""
    groups: dict[str, list[As2Record]] = {}
    for record in records:
        groups.setdefault(record.question_id, []).append(record)
    return groups


def clean(records: Iterable[As2Record]) -> list[As2Record]:
    """The standard "clean" AS2 setting: drop questions with no positive or only positives.

    WikiQA test becomes 237 questions / 2,341 pairs, dev 122 / 1,126.
    """
    return clean_counted(records)[0]


def clean_counted(records: Iterable[As2Record]) -> tuple[list[As2Record], dict[str, int]]:
    """:func:`clean`'s records and how many questions it dropped, by reason:
    ``{"questions": n, "no_positive": a, "only_positives": b}``."""
    kept: list[As2Record] = []
    dropped = {"questions": 0, "no_positive": 0, "only_positives": 0}
    for group in group_by_question(records).values():
        positives = sum(r.label for r in group)
        if 0 < positives < len(group):
            kept.extend(group)
        else:
            dropped["questions"] += 1
            dropped["no_positive" if positives == 0 else "only_positives"] += 1
    return kept, dropped


def first_questions(records: Iterable[As2Record], count: int, skip: int = 0) -> list[As2Record]:
    """The records of ``count`` questions after the first ``skip``, in order (a cheap dev
    subset; ``skip`` past a subset used for model selection leaves held-out questions)."""
    groups = list(group_by_question(records).values())[skip : skip + count]
    return [record for group in groups for record in group]


def sample_questions(records: Iterable[As2Record], count: int, seed: int = 0) -> list[As2Record]:
    """The records of ``count`` questions drawn at random (seeded), kept in input order.

    Unlike :func:`first_questions` the sample spans the whole split (every article
    of a document-ordered set such as SQuAD-AS2).
    """
    import random

    groups = list(group_by_question(records).values())
    chosen = sorted(random.Random(seed).sample(range(len(groups)), min(count, len(groups))))
    return [record for index in chosen for record in groups[index]]


def with_context(records: list[As2Record]) -> Iterator[As2Record]:
    """Yield records whose ``previous``/``next`` are rebuilt from list order within each question.

    Used by readers whose files list a question's candidates in document order (WikiQA,
    SelQA, ASNQ); the first and last candidate of a question get an empty neighbour.
    """
    last = len(records) - 1
    for i, record in enumerate(records):
        qid = record.question_id
        previous = records[i - 1].candidate if i > 0 and records[i - 1].question_id == qid else ""
        nxt = records[i + 1].candidate if i < last and records[i + 1].question_id == qid else ""
        yield replace(record, previous=previous, next=nxt)
