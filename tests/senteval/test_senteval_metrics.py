"""Metrics and aggregations on hand-computed cases and on the papers' own tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from ctxsent.evaluation.senteval import (
    SentEvalReport,
    TaskResult,
    accuracy_averages,
    markdown_table,
    pair_features,
)
from ctxsent.evaluation.sts import (
    correlation,
    cosine_similarity,
    evaluate_sts,
    relatedness_targets,
)


def test_cosine_similarity_rowwise_and_zero_vectors() -> None:
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    b = np.array([[2.0, 0.0], [-1.0, -1.0], [1.0, 0.0]])
    np.testing.assert_allclose(cosine_similarity(a, b), [1.0, -1.0, 0.0])


def test_correlation_pearson_and_spearman() -> None:
    gold = np.array([1.0, 2.0, 3.0, 4.0])
    perfect = correlation(2 * gold + 1, gold)
    assert perfect.pearson == pytest.approx(1.0) and perfect.spearman == pytest.approx(1.0)
    monotone = correlation(gold**3, gold)  # same ranks, not linear
    assert monotone.spearman == pytest.approx(1.0)
    assert monotone.pearson == pytest.approx(0.9513, abs=1e-4)
    swapped = correlation(np.array([2.0, 1.0, 3.0, 4.0]), gold)
    assert swapped.spearman == pytest.approx(0.8)  # 1 - 6 * 2 / (4 * 15)
    assert math.isnan(correlation(np.ones(4), gold).pearson)


def test_sts_aggregations_pooled_mean_and_weighted_mean() -> None:
    # Subset "a": cosines rise with gold (r = 1, n = 3); subset "b": they fall (r = -1, n = 5).
    def pairs(cosines: list[float]) -> tuple[np.ndarray, np.ndarray]:
        angles = np.arccos(cosines)
        first = np.tile([1.0, 0.0], (len(cosines), 1))
        second = np.stack([np.cos(angles), np.sin(angles)], axis=1)
        return first, second

    cos_a, gold_a = [0.1, 0.5, 0.9], np.array([1.0, 2.0, 3.0])
    cos_b, gold_b = [0.9, 0.7, 0.5, 0.3, 0.1], np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    result = evaluate_sts({"a": (*pairs(cos_a), gold_a), "b": (*pairs(cos_b), gold_b)})

    assert result.subsets["a"].pearson == pytest.approx(1.0)
    assert result.subsets["b"].spearman == pytest.approx(-1.0)
    assert result.mean.pearson == pytest.approx(0.0)
    assert result.wmean.pearson == pytest.approx((3 * 1 - 5 * 1) / 8)
    assert result.wmean.n == result.all.n == 8
    pooled_cos, pooled_gold = cos_a + cos_b, np.concatenate([gold_a, gold_b])
    assert result.all.pearson == pytest.approx(pearsonr(pooled_cos, pooled_gold).statistic)
    assert result.all.spearman == pytest.approx(spearmanr(pooled_cos, pooled_gold).statistic)


def test_relatedness_targets_encode_scores_as_distributions() -> None:
    targets = relatedness_targets(np.array([4.3, 5.0, 1.0, 2.5]))
    np.testing.assert_allclose(
        targets,
        [[0, 0, 0, 0.7, 0.3], [0, 0, 0, 0, 1], [1, 0, 0, 0, 0], [0, 0.5, 0.5, 0, 0]],
        atol=1e-6,
    )
    np.testing.assert_allclose(targets @ np.arange(1, 6), [4.3, 5.0, 1.0, 2.5], atol=1e-6)


def test_pair_features_are_u_v_absdiff_product() -> None:
    u, v = np.array([[1.0, -2.0]]), np.array([[3.0, 4.0]])
    np.testing.assert_array_equal(pair_features(u, v), [[1, -2, 3, 4, 2, 6, 3, -8]])


# Test items per task (cv tasks: the whole set), as used by Mean-Max AAE Table 2.
N_TEST = {
    "MR": 10662, "CR": 3775, "SUBJ": 10000, "MPQA": 10606,
    "SST2": 1821, "TREC": 500, "MRPC": 1725, "SICK-E": 4927,
}  # fmt: skip


def _results(accuracies: dict[str, float]) -> list[TaskResult]:
    return [TaskResult(task, {"acc": acc}, N_TEST[task], 0.0) for task, acc in accuracies.items()]


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (  # mean-max AAE, Table 1 -> Table 2: 84.7/85.6, 86.0/86.0, 85.0/85.9
            {"MR": 78.7, "CR": 82.3, "SUBJ": 93.4, "MPQA": 88.8, "SST2": 83.8, "TREC": 91.4,
             "MRPC": 75.5, "SICK-E": 83.5},
            {"8 tasks": (84.7, 85.6), "7 tasks": (86.0, 86.0), "6 tasks": (85.0, 85.9)},
        ),
        (  # BiLSTM-Max (on SNLI): 85.0/86.2
            {"MR": 79.9, "CR": 84.6, "SUBJ": 92.1, "MPQA": 89.8, "SST2": 83.3, "TREC": 88.7,
             "MRPC": 75.1, "SICK-E": 86.3},
            {"8 tasks": (85.0, 86.2)},
        ),
        (  # uni-skip, 6 tasks only: 83.0/83.7
            {"MR": 75.5, "CR": 79.3, "SUBJ": 92.1, "MPQA": 86.9, "TREC": 91.4, "MRPC": 73.0},
            {"6 tasks": (83.0, 83.7)},
        ),
    ],
)  # fmt: skip
def test_macro_micro_averages_reproduce_mean_max_aae_table_2(row, expected) -> None:
    averages = accuracy_averages(_results(row))
    # Table 1 rounds each accuracy to 0.1 and Table 2 rounds again: allow 0.1.
    for name, (macro, micro) in expected.items():
        assert averages[name]["macro"] == pytest.approx(macro, abs=0.1), name
        assert averages[name]["micro"] == pytest.approx(micro, abs=0.1), name


def test_averages_over_other_task_subsets_and_ignore_correlation_tasks() -> None:
    results = _results({"MR": 80.0, "TREC": 90.0})  # no Table 2 set is complete
    results.append(TaskResult("SICK-R", {"pearson": 0.8, "mse": 0.3}, 4927, 0.0))
    averages = accuracy_averages(results)
    assert list(averages) == ["all accuracy tasks"]
    assert averages["all accuracy tasks"]["macro"] == pytest.approx(85.0)
    assert averages["all accuracy tasks"]["micro"] == pytest.approx((80 * 10662 + 90 * 500) / 11162)


def test_markdown_table_formats_each_metric_kind() -> None:
    results = [
        TaskResult("MR", {"acc": 78.66}, 10662, 0.0),
        TaskResult("MRPC", {"acc": 72.1, "f1": 80.94}, 1725, 0.0),
        TaskResult("SICK-R", {"pearson": 0.80004, "spearman": 0.7, "mse": 0.3}, 4927, 0.0),
        TaskResult("STS12", {"pearson": 0.5412, "spearman": 0.5638}, 3108, 0.0),
    ]
    table = markdown_table(
        [SentEvalReport("glove-bow", "quick", results), SentEvalReport("x", "quick", results[:1])]
    )
    header, rule, first, second = table.splitlines()
    assert header == "| Model | MR | MRPC | SICK-R | STS12 | all accuracy tasks macro/micro |"
    assert rule == "|---|---|---|---|---|---|"
    assert first == "| glove-bow | 78.7 | 72.1/80.9 | 0.800 | 0.541/0.564 | 75.4/77.7 |"
    assert second == "| x | 78.7 | - | - | - | 78.7/78.7 |"


def test_report_json_replaces_nan_with_none() -> None:
    result = TaskResult("STSB", {"pearson": float("nan"), "spearman": 0.1}, 10, 0.0)
    assert SentEvalReport("m", "quick", [result]).to_dict()["tasks"]["STSB"]["pearson"] is None
