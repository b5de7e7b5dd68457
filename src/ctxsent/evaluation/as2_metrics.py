"""AS2 ranking metrics: MAP, MRR, P@1, nDCG@10 and Hits@k, per question and averaged.

Conventions (DESIGN.md, "AS2 metric conventions"; state them wherever numbers are reported):

* Rankings come from the scores, never from labels or argmax predictions.
* Ties are ranked **pessimistically**: among candidates with equal scores, negatives are
  placed before positives, so a constant scorer gets the worst possible result, not the best.
* Every metric is computed per question and then averaged over questions (macro average).
* A question with no positive candidate scores 0 on every metric and still counts in the
  average. The standard "clean" setting removes such questions (and those with only
  positives) beforehand: :func:`ctxsent.tasks.as2_records.clean`.
* Relevance is binary. ``hits@k`` is 1 when at least one positive is in the top ``k``
  (ranx calls this ``hit_rate@k``); ``ndcg@10`` uses gains ``1 / log2(rank + 1)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ctxsent.errors import InputError

NDCG_CUTOFF = 10


@dataclass(frozen=True)
class PerQuestionMetrics:
    """Metric values of each question, in first-seen order of ``question_ids``."""

    question_ids: list[str]
    values: dict[str, np.ndarray]
    pairs: int

    def mean(self) -> dict[str, float]:
        """Average over questions (0.0 for every metric when there are no questions)."""
        return {
            name: float(column.mean()) if column.size else 0.0
            for name, column in self.values.items()
        }

    def summary(self) -> dict[str, float]:
        """:meth:`mean` plus the ``questions`` and ``pairs`` counts."""
        return {**self.mean(), "questions": len(self.question_ids), "pairs": self.pairs}


def per_question_as2_metrics(
    question_ids: Sequence[str],
    labels: Sequence[int],
    scores: Sequence[float],
    k_values: Sequence[int] = (1, 3, 5, 10),
) -> PerQuestionMetrics:
    """Compute ``map``, ``mrr``, ``p@1``, ``ndcg@10`` and ``hits@k`` for every question.

    The three sequences are aligned, one entry per (question, candidate) pair; a question's
    pairs need not be contiguous. Labels are 0/1; scores are finite floats, higher is better.
    """
    codes, ordered_ids = _question_codes(question_ids)
    labels_arr = np.asarray(labels)
    scores_arr = np.asarray(scores, dtype=np.float64)
    _check_inputs(len(codes), labels_arr, scores_arr)
    n_questions = len(ordered_ids)

    # Sort by question, then score descending, then label ascending: the pessimistic tie rule.
    order = np.lexsort((labels_arr, -scores_arr, codes))
    codes_sorted = codes[order]
    relevant = labels_arr[order].astype(bool)
    group_starts = np.searchsorted(codes_sorted, np.arange(n_questions))
    ranks = np.arange(len(codes_sorted)) - group_starts[codes_sorted] + 1

    positives = np.bincount(codes_sorted, weights=relevant, minlength=n_questions)
    has_positive = positives > 0
    safe_positives = np.where(has_positive, positives, 1.0)

    # Positives seen so far within the question, at each positive's rank.
    cumulative = np.cumsum(relevant)
    before_group = np.concatenate(([0], cumulative))[group_starts]
    hits_so_far = cumulative - before_group[codes_sorted]
    precision_at_positives = hits_so_far[relevant] / ranks[relevant]
    precision_sum = np.bincount(
        codes_sorted[relevant], weights=precision_at_positives, minlength=n_questions
    )

    first_positive_rank = np.full(n_questions, np.inf)
    np.minimum.at(first_positive_rank, codes_sorted[relevant], ranks[relevant])

    gains = np.where(relevant & (ranks <= NDCG_CUTOFF), 1.0 / np.log2(ranks + 1.0), 0.0)
    dcg = np.bincount(codes_sorted, weights=gains, minlength=n_questions)
    ideal_gains = np.cumsum(1.0 / np.log2(np.arange(1, NDCG_CUTOFF + 1) + 1.0))
    ideal_dcg = ideal_gains[np.clip(positives.astype(int), 1, NDCG_CUTOFF) - 1]

    values = {
        "map": precision_sum / safe_positives,
        "mrr": 1.0 / first_positive_rank,
        "p@1": (first_positive_rank == 1).astype(np.float64),
        "ndcg@10": np.where(has_positive, dcg / ideal_dcg, 0.0),
    }
    for k in k_values:
        values[f"hits@{k}"] = (first_positive_rank <= k).astype(np.float64)
    return PerQuestionMetrics(ordered_ids, values, len(codes))


def as2_metrics(
    question_ids: Sequence[str],
    labels: Sequence[int],
    scores: Sequence[float],
    k_values: Sequence[int] = (1, 3, 5, 10),
) -> dict[str, float]:
    """Question-averaged AS2 metrics plus ``questions`` and ``pairs`` counts.

    See the module docstring for the conventions (pessimistic ties, questions without a
    positive count as 0).
    """
    return per_question_as2_metrics(question_ids, labels, scores, k_values).summary()


def _question_codes(question_ids: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    index: dict[str, int] = {}
    codes = np.fromiter(
        (index.setdefault(qid, len(index)) for qid in question_ids),
        dtype=np.int64,
        count=len(question_ids),
    )
    return codes, list(index)


def _check_inputs(n_pairs: int, labels: np.ndarray, scores: np.ndarray) -> None:
    if labels.shape != (n_pairs,) or scores.shape != (n_pairs,):
        raise InputError(
            f"question_ids, labels and scores must have one entry per pair; got {n_pairs}, "
            f"{labels.shape} and {scores.shape}"
        )
    if n_pairs and not np.isin(labels, (0, 1)).all():
        raise InputError("labels must be 0 or 1", field="labels")
    if not np.isfinite(scores).all():
        raise InputError("scores must be finite numbers (found NaN or infinity)", field="scores")


def tied_pairs(question_ids: Sequence[str], scores: Sequence[float]) -> int:
    """Pairs of candidates of one question with exactly equal scores: what the pessimistic
    tie rule orders against the positives (a scorer whose logits are rounded to bf16 makes
    many of them)."""
    codes, _ = _question_codes(question_ids)
    _, counts = np.unique(
        np.stack([codes, np.asarray(scores, dtype=np.float64)]), axis=1, return_counts=True
    )
    return int((counts * (counts - 1) // 2).sum())
