"""The AS2 evaluator: one object for ``eval as2`` and the fine-tuning loop's early stopping."""

import numpy as np

from ctxsent.evaluation.as2_evaluation import As2Evaluator, score_as2
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.models.ranker_base import As2Ranker
from ctxsent.protocols import Evaluator
from synthetic import make_records


class LengthRanker(As2Ranker):
    """Scores a candidate by its length: distinct, known scores (no model)."""

    def predict(self, records, batch_size=64, show_progress=False):
        return np.array([len(r.candidate) + i * 1e-3 for i, r in enumerate(records)])


def test_the_evaluator_scores_a_ranker_and_given_scores_alike():
    records = make_records(questions=3, candidates=5)
    evaluator = As2Evaluator(records)
    assert isinstance(evaluator, Evaluator) and evaluator.primary_metric == "map"
    ranker = LengthRanker()
    expected = as2_metrics(
        [r.question_id for r in records], [r.label for r in records], ranker.predict(records)
    )
    assert evaluator(ranker) == expected == score_as2(ranker, records)
    assert evaluator.metrics(ranker.predict(records)) == expected
