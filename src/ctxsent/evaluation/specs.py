"""An evaluator named on the command line, for evaluation and early stopping during
pre-training (``--eval SPEC``, the configs' ``eval`` setting): ``as2:DATA`` (dev MAP of an
AS2 data spec, clean questions), ``senteval:FOLDER[:TASK,...]`` (SentEval macro accuracy,
quick setting), ``squad:FILE[:QUESTIONS]`` (Recall@20 of unsupervised paragraph ranking on
a seeded subset of questions); SSP pre-training also takes ``heldout``
(:class:`~ctxsent.evaluation.ssp_heldout.SspHeldoutEvaluator`).
"""

from __future__ import annotations

from pathlib import Path

from ctxsent.errors import InputError
from ctxsent.protocols import Evaluator

SPECS = "as2:DATA, senteval:FOLDER[:TASK,...], squad:FILE[:QUESTIONS]"


def evaluator_from_spec(
    spec: str, allowed: tuple[str, ...] = ("as2", "senteval", "squad"), batch_size: int = 64
) -> Evaluator:
    """The evaluator ``spec`` names, one of the ``allowed`` kinds (those that apply to the
    model being trained), its data loaded: bad data fails here, before training starts."""
    kind, _, where = spec.partition(":")
    if kind in ("as2", "senteval", "squad", "heldout") and kind not in allowed:
        raise InputError(
            f"{kind!r} does not evaluate this model; use one of: {', '.join(allowed)}",
            field="eval",
        )
    if kind == "as2" and where:
        from ctxsent.evaluation.as2_evaluation import As2Evaluator
        from ctxsent.tasks.as2_load import evaluation_records

        return As2Evaluator(evaluation_records(where, "dev")[0], batch_size)
    if kind == "senteval" and where:
        from ctxsent.evaluation.senteval import SentEvalEvaluator
        from ctxsent.tasks.senteval import load_tasks

        folder, tasks = _path_and_option(where)
        loaded = load_tasks(tasks or "all", folder)
        if not any(data.task.main_metric == "acc" for data in loaded):
            raise InputError(
                "name a classification task: the primary metric is their macro accuracy",
                field="eval",
            )
        return SentEvalEvaluator(loaded)
    if kind == "squad" and where:
        from ctxsent.evaluation.retrieval import ParagraphRankingEvaluator, squad_paragraph_ranking

        file, questions = _path_and_option(where)
        if questions is not None and not questions.isdigit():
            raise InputError(f"QUESTIONS must be a number, not {questions!r}", field="eval")
        ranking = squad_paragraph_ranking(file, int(questions) if questions else None)
        return ParagraphRankingEvaluator(ranking, batch_size=batch_size)
    raise InputError(f"unknown evaluator {spec!r}; known: {SPECS}", field="eval")


def _path_and_option(text: str) -> tuple[str, str | None]:
    """``PATH[:OPTION]``: a path that exists is taken whole, colons and all."""
    path, colon, option = text.rpartition(":")
    if not colon or Path(text).exists():
        return text, None
    return path, option
