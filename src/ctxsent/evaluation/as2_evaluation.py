"""Score a ranker on AS2 records and report what ``ctxsent eval as2`` prints.

Metrics follow :mod:`ctxsent.evaluation.as2_metrics` (ties ranked pessimistically); a
second model is compared on the same questions with paired-bootstrap 95% intervals
(:mod:`ctxsent.evaluation.significance`), or with a stored run
(:mod:`ctxsent.evaluation.run_files`); a staged ranker adds its drop rates and cost.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from ctxsent.evaluation.as2_metrics import as2_metrics, per_question_as2_metrics
from ctxsent.evaluation.run_files import RUN_PREFIX, StoredRun, check_storable, write_run
from ctxsent.evaluation.significance import paired_bootstrap
from ctxsent.io import check_output
from ctxsent.models.precision import effective_precision
from ctxsent.models.staged import set_alphas
from ctxsent.protocols import Ranker, StagedRanker
from ctxsent.resolver import load_ranker
from ctxsent.tasks.as2_load import evaluation_records, split_or_default
from ctxsent.tasks.as2_records import As2Record

COMPARED_METRICS = ("map", "mrr", "p@1", "ndcg@10")


class As2Evaluator:
    """The AS2 :class:`~ctxsent.protocols.Evaluator`: MAP (primary), MRR, P@1, nDCG@10 and
    Hits@k on held-out ``records``. ``evaluator(ranker)`` scores them with the ranker;
    :meth:`metrics` takes scores computed elsewhere (the fine-tuning loop's dev pass, which
    early stopping watches as ``dev_map``)."""

    primary_metric = "map"

    def __init__(self, records: Sequence[As2Record], batch_size: int = 64) -> None:
        self.records = records
        self.batch_size = batch_size
        self.question_ids = [r.question_id for r in records]
        self.labels = [r.label for r in records]

    def metrics(self, scores: Sequence[float]) -> dict:
        """The metrics of one score per record, in record order."""
        return as2_metrics(self.question_ids, self.labels, scores)

    def __call__(self, ranker: Ranker) -> dict:
        return self.metrics(ranker.predict(self.records, batch_size=self.batch_size))


def score_as2(ranker: Ranker, records: Sequence[As2Record], batch_size: int = 64) -> dict:
    """MAP, MRR, P@1, nDCG@10 and Hits@k of ``ranker`` on ``records``."""
    return As2Evaluator(records, batch_size)(ranker)


def evaluate_as2(
    ranker: Ranker,
    records: Sequence[As2Record],
    against: Ranker | StoredRun | None = None,
    batch_size: int = 64,
    show_progress: bool = False,
    run_out: str | Path | None = None,
    run_tag: str = "ctxsent",
) -> dict:
    """``ranker``'s metrics on ``records`` with its speed, its cost if it is staged, and, with
    ``against`` (a model or a stored run, scored first so a run that does not fit fails
    before the work), the second model's metrics and the paired differences (``ranker``
    minus it). ``run_out`` keeps ``ranker``'s scores as a run file tagged ``run_tag``."""
    ids, labels = [r.question_id for r in records], [r.label for r in records]
    if run_out is not None:
        check_storable(records, run_out)
        check_output(run_out, None)
    other_scores = None if against is None else against.predict(records, batch_size=batch_size)
    start = time.perf_counter()
    scores = ranker.predict(records, batch_size=batch_size, show_progress=show_progress)
    seconds = time.perf_counter() - start
    if run_out is not None:
        write_run(run_out, records, scores, run_tag)
    per_question = per_question_as2_metrics(ids, labels, scores)
    report = {
        "ties": "pessimistic",
        **per_question.summary(),
        "seconds": round(seconds, 2),
        "pairs_per_second": round(len(records) / seconds, 1),
    }
    cost = ranker.last_cost if isinstance(ranker, StagedRanker) else None
    if cost is not None:
        report["alphas"] = ranker.alphas
        report["relative_cost"] = round(cost.relative, 4)
        report["candidates_per_exit"] = cost.candidates_per_exit
    if other_scores is not None:
        other = per_question_as2_metrics(ids, labels, other_scores)
        report["against"] = {
            **other.mean(),
            "difference": {
                name: paired_bootstrap(per_question.values[name], other.values[name]).as_dict()
                for name in COMPARED_METRICS
            },
        }
    return report


def evaluate_as2_data(
    model: str,
    data: str,
    *,
    split: str | None = None,
    columns: dict[str, str] | None = None,
    clean_questions: bool = True,
    against: str | None = None,
    alpha: str | Sequence[float] | None = None,
    batch_size: int = 64,
    accelerator: str = "auto",
    precision: str = "auto",
    show_progress: bool = False,
    run_out: str | Path | None = None,
) -> dict:
    """What ``ctxsent eval as2`` prints: the model named ``model`` scored on ``split`` of
    ``data`` (:func:`~ctxsent.tasks.as2_load.evaluation_records`; ``dropped`` counts the
    questions without both labels left out when ``clean_questions``) by
    :func:`evaluate_as2`, against the model or stored run (``run:FILE``) named ``against``
    if given; ``run_out`` keeps the model's scores as a run file."""
    split = split_or_default(data, split)
    records, dropped = evaluation_records(data, split, clean_questions, columns)
    ranker = load_ranker(model, precision, accelerator)
    second = None
    if against and against.startswith(RUN_PREFIX):
        second = StoredRun(against.removeprefix(RUN_PREFIX))
    elif against:
        second = load_ranker(against, precision, accelerator)
    set_alphas(ranker, alpha)
    report = evaluate_as2(
        ranker, records, second, batch_size, show_progress, run_out=run_out, run_tag=model
    )
    if second is not None:
        report["against"] = {"model": against, **report["against"]}
    head = {"model": model, "data": data, "split": split, "clean": clean_questions}
    return {**head, "dropped": dropped, "precision": effective_precision(ranker), **report}
