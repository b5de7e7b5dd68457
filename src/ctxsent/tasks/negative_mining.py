"""Hard negatives for question-answer pairs, and a train/dev split by document.

Positives-only data (every label 1, or no label column: :mod:`ctxsent.tasks.as2_files`)
cannot train a ranker. :func:`mine_negatives` adds, per question, the ``k`` candidates a
retriever scores highest among those that do not answer it: its document's other
sentences, or any candidate of the data. The pool is the records passed in, so split first
(:func:`split_by_document`) and mine each split alone: mining the union would turn dev
answers into train negatives and the reverse.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np

from ctxsent.errors import InputError
from ctxsent.tasks.as2_records import As2Record, group_by_question

POOLS = ("document", "all")
#: ``scores(questions, candidates)``: one array of candidate scores per question.
CandidateScores = Callable[[list[str], list[str]], Iterable[np.ndarray]]


def mine_negatives(
    records: Sequence[As2Record],
    scores: CandidateScores,
    k: int = 5,
    pool: str | None = None,
    seed: int = 0,
) -> list[As2Record]:
    """``records`` plus up to ``k`` mined label-0 records per question, each after its own.

    ``scores`` scores the distinct candidates for each distinct question
    (:func:`ctxsent.resolver.candidate_scores`). ``pool``: ``document`` (the candidates sharing
    a ``document_id`` with one of the question's answers) or ``all``; by default ``document``
    when every record has a document id. A candidate is never a negative of a question it is
    already paired with; a mined record takes its context and document from the candidate's
    first record. Equal scores are ordered by a permutation drawn from ``seed``."""
    if k < 1:
        raise InputError(f"expected at least 1 negative per question, got {k}", field="negatives")
    if pool is None:
        pool = "document" if all(record.document_id for record in records) else "all"
    if pool not in POOLS:
        raise InputError(f"expected one of {', '.join(POOLS)}, got {pool!r}", field="pool")
    first: dict[str, As2Record] = {}  # each distinct candidate's first record
    paired: dict[str, set[str]] = {}  # question text -> the candidates paired with it
    by_document: dict[str, dict[str, None]] = {}
    for record in records:
        first.setdefault(record.candidate, record)
        paired.setdefault(record.question, set()).add(record.candidate)
        by_document.setdefault(record.document_id, {})[record.candidate] = None
    texts = list(first)
    row = {text: i for i, text in enumerate(texts)}
    tiebreak = np.random.default_rng(seed).permutation(len(texts))
    groups = group_by_question(records)
    qids: dict[str, list[str]] = {}  # question text -> its question ids
    for qid, group in groups.items():
        qids.setdefault(group[0].question, []).append(qid)
    mined: dict[str, list[As2Record]] = {}
    for question, row_scores in zip(qids, scores(list(qids), texts), strict=True):
        allowed = np.ones(len(texts), dtype=bool)
        allowed[[row[text] for text in paired[question]]] = False
        for qid in qids[question]:
            group = groups[qid]
            if pool == "all":
                rows = np.flatnonzero(allowed)
            else:
                rows = np.array(
                    [row[t] for t in _document_pool(group, by_document)], dtype=np.int64
                )
                rows = rows[allowed[rows]]
            best = _top(rows, row_scores, tiebreak, k)
            mined[qid] = [_negative(group[0], first[texts[i]]) for i in best]
    return [record for qid, group in groups.items() for record in (*group, *mined[qid])]


def split_by_document(
    records: Sequence[As2Record], dev_fraction: float, seed: int = 0
) -> tuple[list[As2Record], list[As2Record]]:
    """``(train, dev)``: no document id, question id or question text is in both.

    Questions that share a document id, an id or a text form one unit (without document
    ids a unit is a question text and its ids). Units are shuffled with ``seed`` and dev
    takes them until it holds ``dev_fraction`` of the questions, leaving train at least
    one; both parts keep the input order.
    """
    if not 0 < dev_fraction < 1:
        raise InputError(f"expected a fraction in (0, 1), got {dev_fraction}", field="dev_fraction")
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(key: tuple[str, str]) -> tuple[str, str]:
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = key = parent[parent[key]]
        return key

    for record in records:
        text = find(("text", record.question))
        parent[find(("id", record.question_id))] = text
        if record.document_id:
            parent[find(("document", record.document_id))] = text
    questions: dict[tuple[str, str], set[str]] = {}
    for record in records:
        questions.setdefault(find(("text", record.question)), set()).add(record.question_id)
    if len(questions) < 2:
        raise InputError("cannot split: every question shares a document with the others")
    units = list(questions)
    random.Random(seed).shuffle(units)
    target = dev_fraction * sum(len(ids) for ids in questions.values())
    dev: set[tuple[str, str]] = set()
    taken = 0
    for unit in units[:-1]:
        if taken >= target:
            break
        dev.add(unit)
        taken += len(questions[unit])
    parts: tuple[list[As2Record], list[As2Record]] = ([], [])
    for record in records:
        parts[find(("text", record.question)) in dev].append(record)
    return parts


def _document_pool(group: list[As2Record], by_document: dict[str, dict[str, None]]) -> list[str]:
    """The candidates of the documents of a question's answers, in first-seen order."""
    documents = dict.fromkeys(record.document_id for record in group if record.label)
    if "" in documents:
        raise InputError(
            f"question {group[0].question_id!r} has an answer without a document id; "
            "mine from pool 'all' instead",
            field="document_id",
        )
    return list(dict.fromkeys(text for document in documents for text in by_document[document]))


def _top(rows: np.ndarray, scores: np.ndarray, tiebreak: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` rows of highest score, equal scores in ``tiebreak`` order."""
    values = scores[rows]
    if len(rows) > k:  # only the rows that can make the top k are sorted
        keep = values >= np.partition(values, len(values) - k)[len(values) - k]
        rows, values = rows[keep], values[keep]
    return rows[np.lexsort((tiebreak[rows], -values))[:k]]


def _negative(question: As2Record, candidate: As2Record) -> As2Record:
    return replace(candidate, question_id=question.question_id, question=question.question, label=0)
