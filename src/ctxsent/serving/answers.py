"""Answer questions with a ranker, from Python as from ``ctxsent rank``: over the sentences
of a document, or over each question's candidates in an AS2 file or data set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxsent.errors import InputError, check_unicode
from ctxsent.models.ranker_base import RankedCandidate


@dataclass
class RankedQuestion:
    """A question's best answers; ``contextual``: the ranker read their context."""

    question_id: str
    question: str
    answers: list[RankedCandidate]
    contextual: bool = False


def rank_answers(
    model: str | Path,
    questions: Sequence[str] = (),
    document: str | Path | None = None,
    data: str | None = None,
    split: str | None = None,
    columns: str | Mapping[str, str] | None = None,
    top_k: int = 3,
    alpha: float | str | Sequence[float] | None = None,
    batch_size: int = 64,
    accelerator: str = "auto",
    precision: str = "auto",
) -> list[RankedQuestion]:
    """The ``top_k`` answers of each of ``questions`` among the sentences of the text file
    ``document``, or of each question of ``data`` among its own candidates (a file,
    ``hf:NAME`` or ``NAME:PATH``, its ``split``, ``columns`` as a mapping or as text
    ``question=Query,...``; labels unused), by the ranker ``model``
    (:func:`~ctxsent.resolver.load_ranker`; a cascade's drop rates ``alpha``). Every input
    is checked before the model loads."""
    from ctxsent.models.ranker_base import rank_questions
    from ctxsent.models.staged import set_alphas
    from ctxsent.resolver import load_ranker

    if (data is None) == (document is None) or (document is not None) != bool(questions):
        raise InputError(
            "give --question (repeatable) with --document, or --data alone", field="data"
        )
    for name, value in (("columns", columns), ("split", split)):
        if value is not None and data is None:
            raise InputError("applies to --data only", field=name)
    if data is not None:
        from ctxsent.tasks.as2_files import parse_columns
        from ctxsent.tasks.as2_load import evaluation_records

        columns = parse_columns(columns) if isinstance(columns, str) else columns
        records, _ = evaluation_records(data, split, False, columns)
    else:
        from ctxsent.io import read_lines

        for question in questions:
            check_unicode(question, "question")
        text = "\n".join(line for _, line in read_lines(document))
    ranker = load_ranker(model, precision, accelerator)
    set_alphas(ranker, alpha)
    contextual = bool(ranker.contextual)
    if data is not None:
        return [
            RankedQuestion(record.question_id, record.question, answers, contextual)
            for record, answers in rank_questions(ranker, records, top_k, batch_size)
        ]
    return [
        RankedQuestion(q, q, ranker.rank_document(q, text, top_k=top_k), contextual)
        for q in questions
    ]
