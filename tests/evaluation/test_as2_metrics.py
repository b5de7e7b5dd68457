"""AS2 metrics: hand-computed cases, the pessimistic tie rule, and a cross-check with ranx."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ctxsent.errors import InputError
from ctxsent.evaluation.as2_metrics import as2_metrics, per_question_as2_metrics, tied_pairs

# q1: negative first, then two positives; q2: a positive tied with a negative;
# q3: no positive; q4: the positive ranked first.
QIDS = ["q1", "q1", "q1", "q2", "q2", "q3", "q3", "q4", "q4"]
LABELS = [0, 1, 1, 1, 0, 0, 0, 1, 0]
SCORES = [0.9, 0.5, 0.1, 1.0, 1.0, 0.3, 0.2, 0.8, 0.7]


def test_hand_computed_per_question_values() -> None:
    result = per_question_as2_metrics(QIDS, LABELS, SCORES)
    assert result.question_ids == ["q1", "q2", "q3", "q4"]
    v = result.values
    q1_ndcg = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert v["map"] == pytest.approx([(1 / 2 + 2 / 3) / 2, 1 / 2, 0, 1])
    assert v["mrr"] == pytest.approx([1 / 2, 1 / 2, 0, 1])
    assert v["p@1"] == pytest.approx([0, 0, 0, 1])
    assert v["ndcg@10"] == pytest.approx([q1_ndcg, 1 / math.log2(3), 0, 1])
    assert v["hits@1"] == pytest.approx([0, 0, 0, 1])
    assert v["hits@3"] == pytest.approx([1, 1, 0, 1])


def test_averages_count_questions_without_positive_as_zero() -> None:
    result = as2_metrics(QIDS, LABELS, SCORES)
    assert result["questions"] == 4 and result["pairs"] == 9
    assert result["map"] == pytest.approx(((1 / 2 + 2 / 3) / 2 + 1 / 2 + 0 + 1) / 4)
    assert result["mrr"] == pytest.approx((1 / 2 + 1 / 2 + 0 + 1) / 4)
    assert result["p@1"] == pytest.approx(1 / 4)
    assert set(result) >= {"ndcg@10", "hits@1", "hits@3", "hits@5", "hits@10"}


def test_ties_are_ranked_pessimistically() -> None:
    # A constant scorer must get the worst ranking: the positive after all four negatives.
    result = as2_metrics(["q"] * 5, [1, 0, 0, 0, 0], [0.5] * 5)
    assert result["mrr"] == pytest.approx(1 / 5)
    assert result["map"] == pytest.approx(1 / 5)
    assert result["p@1"] == 0.0 and result["hits@3"] == 0.0 and result["hits@5"] == 1.0
    # Two positives tied with one negative at the top: ranks 2 and 3.
    tied = as2_metrics(["q"] * 4, [1, 1, 0, 0], [0.9, 0.9, 0.9, 0.1])
    assert tied["map"] == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_rankings_come_from_scores_and_pair_order_does_not_matter() -> None:
    rng = np.random.default_rng(0)
    order = rng.permutation(len(QIDS))
    shuffled = as2_metrics(
        [QIDS[i] for i in order], [LABELS[i] for i in order], [SCORES[i] for i in order]
    )
    assert shuffled == pytest.approx(as2_metrics(QIDS, LABELS, SCORES))
    # Flipping the scores turns q4's perfect ranking into the worst one.
    flipped = per_question_as2_metrics(["q4", "q4"], [1, 0], [0.7, 0.8])
    assert flipped.values["mrr"] == pytest.approx([1 / 2])


def test_custom_k_values_and_empty_input() -> None:
    result = as2_metrics(["a", "a"], [0, 1], [0.2, 0.1], k_values=(1, 2))
    assert result["hits@1"] == 0.0 and result["hits@2"] == 1.0 and "hits@10" not in result
    empty = as2_metrics([], [], [])
    assert empty["questions"] == 0 and empty["map"] == 0.0


@pytest.mark.parametrize(
    ("labels", "scores", "message"),
    [
        ([0, 1], [0.1], "one entry per pair"),
        ([0, 2], [0.1, 0.2], "field 'labels'"),
        ([0, 1], [0.1, float("nan")], "field 'scores'"),
    ],
)
def test_bad_input_is_rejected(labels: list[int], scores: list[float], message: str) -> None:
    with pytest.raises(InputError, match=message):
        as2_metrics(["a", "a"], labels, scores)


def test_agrees_with_ranx_on_wikiqa_shaped_data() -> None:
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(42)
    qids, labels, scores = [], [], []
    for q in range(60):
        n = int(rng.integers(2, 30))
        qlabels = (rng.random(n) < 0.15).astype(int)
        qlabels[rng.integers(n)] = 1  # at least one positive, as in clean WikiQA
        qids += [f"q{q}"] * n
        labels += qlabels.tolist()
        scores += rng.random(n).tolist()  # continuous: no ties
    ours = as2_metrics(qids, labels, scores)

    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i, (qid, label, score) in enumerate(zip(qids, labels, scores, strict=True)):
        run.setdefault(qid, {})[f"d{i}"] = score
        if label:
            qrels.setdefault(qid, {})[f"d{i}"] = 1
    names = {"map": "map", "mrr": "mrr", "p@1": "precision@1", "ndcg@10": "ndcg@10"}
    names |= {f"hits@{k}": f"hit_rate@{k}" for k in (1, 3, 5, 10)}
    # plain dicts, a documented input of ranx.evaluate (its Qrels and Run objects cost seconds
    # of numba compilation per process); they pair queries by position: same order
    qrels = {qid: qrels[qid] for qid in run}
    theirs = ranx.evaluate(qrels, run, list(names.values()))
    for ours_name, ranx_name in names.items():
        assert ours[ours_name] == pytest.approx(float(theirs[ranx_name]), abs=1e-9), ours_name


def test_tied_pairs_counts_equal_scores_within_a_question_only():
    ids = ["a", "a", "a", "b", "b", "c"]
    assert tied_pairs(ids, [1.0, 1.0, 1.0, 1.0, 2.0, 1.0]) == 3  # a: 3 pairs; b, c: none
    assert tied_pairs(ids, [0.5, 0.25, 0.5, 0.5, 0.5, 0.5]) == 2
    assert tied_pairs(ids, np.arange(6.0)) == 0
