"""Holm's correction of the SSP Table 1 paired tests (benchmarks/ssp_table1.py)."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from ssp_table1 import METRICS, add_holm, holm, paired_with_baseline  # noqa: E402


def test_holm_matches_a_hand_computed_case():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; the last is
    # raised to the one before it (step-down: never below a smaller p's adjusted value)
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005})
    assert adjusted == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06, "d": 0.02})
    assert holm({"x": 0.6, "y": 0.7}) == {"x": 1.0, "y": 1.0}  # capped at 1
    # a test that could not run stays NaN and does not count in m
    partial = holm({"a": 0.01, "b": 0.02, "one seed": math.nan})
    assert partial["a"] == pytest.approx(0.02) and partial["b"] == pytest.approx(0.02)
    assert math.isnan(partial["one seed"])


def test_add_holm_adjusts_the_family_rows_per_metric():
    baseline = {seed: dict.fromkeys(METRICS, 0.5) for seed in (1, 2, 3)}
    runs = {
        "small gain": {1: 0.51, 2: 0.52, 3: 0.53},
        "large gain": {1: 0.60, 2: 0.61, 3: 0.63},
    }
    rows = {
        name: {
            "paired_with_contextual": paired_with_baseline(
                {seed: dict.fromkeys(METRICS, value) for seed, value in maps.items()}, baseline
            )
        }
        for name, maps in runs.items()
    }
    add_holm(rows, list(rows))
    for metric in METRICS:
        small, large = (rows[name]["paired_with_contextual"][metric] for name in runs)
        assert large["p"] < small["p"]  # m = 2: the smaller p doubles, the larger stays
        assert large["p_holm"] == pytest.approx(2 * large["p"], abs=1e-4)
        assert small["p_holm"] == small["p"]
