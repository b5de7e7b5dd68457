"""What every AS2 ranker offers: ``predict`` scores records, ``rank`` orders candidates.

Subclasses implement :meth:`As2Ranker.predict`; ranking a candidate list or a
whole document is shared here. Scores, never labels, produce rankings.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ctxsent.errors import InputError
from ctxsent.tasks.as2_records import As2Record
from ctxsent.text import neighbours, split_sentences


@dataclass(frozen=True)
class RankedCandidate:
    """One candidate in a ranking: its position in the input, text, score and context."""

    index: int
    candidate: str
    score: float
    previous: str = ""
    next: str = ""


class As2Ranker(ABC):
    """Scores (question, candidate[, context]) records; higher scores rank first.

    ``predict`` takes :class:`As2Record` objects or plain ``(question, candidate)`` pairs:
    every subclass's ``predict`` is wrapped (:func:`records_from_pairs`) when the class is
    defined, so pairs work with every ranker without each one converting them.
    """

    #: Whether the model reads the previous/next sentences of a candidate.
    contextual: bool = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "predict" in cls.__dict__:
            cls.predict = _taking_pairs(cls.__dict__["predict"])

    @abstractmethod
    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """One score per record (or ``(question, candidate)`` pair), in input order."""

    def rank(
        self,
        question: str,
        candidates: Sequence[str],
        context: Sequence[tuple[str, str]] | None = None,
        top_k: int | None = None,
    ) -> list[RankedCandidate]:
        """Rank ``candidates`` for ``question``.

        ``context`` gives (previous, next) sentences per candidate; without it a
        contextual model sees empty context. Ties keep input order.
        """
        records = question_records("q", question, candidates, context)
        return ranking(records, self.predict(records) if records else [], top_k)

    def rank_document(
        self, question: str, document: str, top_k: int | None = 5
    ) -> list[RankedCandidate]:
        """Split ``document`` into sentences and rank them, each with its neighbours as context."""
        return self.rank(question, *document_candidates(document), top_k)


def records_from_pairs(items: Sequence[As2Record | tuple[str, str]]) -> Sequence[As2Record]:
    """``items`` as records: ``(question, candidate)`` pairs become unlabelled records whose
    question id is the question's text (so a cascade prunes each question's candidates
    together). A sequence of records is returned as it is, not copied, so that rankers
    calling each other's ``predict`` (cascades, pipelines) pay one type scan, no more."""
    if all(isinstance(item, As2Record) for item in items):
        return items
    records = []
    for index, item in enumerate(items):
        if isinstance(item, As2Record):
            records.append(item)
        elif (
            isinstance(item, tuple | list)
            and len(item) == 2
            and all(isinstance(text, str) for text in item)
        ):
            records.append(As2Record(item[0], item[0], item[1], 0))
        else:
            raise InputError(
                f"expected an As2Record or a (question, candidate) pair of strings, got "
                f"{type(item).__name__}",
                field=f"records[{index}]",
            )
    return records


def _taking_pairs(predict: Callable) -> Callable:
    @functools.wraps(predict)
    def predict_records_or_pairs(self, records, *args, **kwargs):
        return predict(self, records_from_pairs(records), *args, **kwargs)

    return predict_records_or_pairs


def document_candidates(document: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The sentences of ``document`` and each one's (previous, next) sentence as context."""
    sentences = split_sentences(document)
    if not sentences:
        raise InputError("the document contains no sentences", field="document")
    return sentences, neighbours(sentences)


def question_records(
    question_id: str,
    question: str,
    candidates: Sequence[str],
    context: Sequence[tuple[str, str]] | None = None,
) -> list[As2Record]:
    """One unlabelled record per candidate of ``question``, with its context if given."""
    if not question.strip():
        raise InputError("the question is empty", field="question")
    if context is not None and len(context) != len(candidates):
        raise InputError(
            f"{len(context)} contexts for {len(candidates)} candidates", field="context"
        )
    context = context or [("", "")] * len(candidates)
    return [
        As2Record(question_id, question, text, 0, previous, nxt)
        for text, (previous, nxt) in zip(candidates, context, strict=True)
    ]


def ranking(
    records: Sequence[As2Record], scores: Sequence[float], top_k: int | None = None
) -> list[RankedCandidate]:
    """``records`` best score first (ties keep input order), the first ``top_k``."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return [
        RankedCandidate(
            int(i), records[i].candidate, float(scores[i]), records[i].previous, records[i].next
        )
        for i in order[: top_k or len(records)]
    ]


def rank_questions(
    ranker: As2Ranker, records: Sequence[As2Record], top_k: int | None = None, batch_size: int = 64
) -> list[tuple[As2Record, list[RankedCandidate]]]:
    """Each question of ``records`` (in order of first appearance) with its candidates best
    first (:func:`ranking`; ``RankedCandidate.index`` is the row in ``records``), all scored
    in one ``predict`` call (BM25's statistics, a cascade's pruning see the whole set)."""
    scores = ranker.predict(records, batch_size=batch_size)
    rows: dict[str, list[int]] = {}
    for row, record in enumerate(records):
        rows.setdefault(record.question_id, []).append(row)
    ranked = []
    for question_rows in rows.values():
        best = ranking([records[i] for i in question_rows], scores[question_rows], top_k)
        best = [replace(c, index=question_rows[c.index]) for c in best]
        ranked.append((records[question_rows[0]], best))
    return ranked


def cosine_scores(
    records: Sequence[As2Record],
    encode: Callable[[list[str]], np.ndarray],
) -> np.ndarray:
    """Cosine of each record's question and candidate embeddings, each distinct text
    embedded once by ``encode`` (texts -> L2-normalised rows): the bi-encoder score."""
    questions = list(dict.fromkeys(r.question for r in records))
    candidates = list(dict.fromkeys(r.candidate for r in records))
    q_row = {text: i for i, text in enumerate(questions)}
    c_row = {text: i for i, text in enumerate(candidates)}
    q = encode(questions)[[q_row[r.question] for r in records]]
    c = encode(candidates)[[c_row[r.candidate] for r in records]]
    return np.einsum("ij,ij->i", q, c).astype(np.float32)
