"""The paired statistics of the encoder ablation table (benchmarks/encoder_ablation_table.py)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from encoder_ablation_table import PROBES, compare, sign_flip_p  # noqa: E402


def test_sign_flip_p_is_exact():
    # all four differences positive: only the all-plus and all-minus patterns are as extreme
    assert sign_flip_p(np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(2 / 16)
    assert sign_flip_p(np.array([1.0, -1.0, 2.0, -2.0])) == 1.0


def test_compare_pairs_runs_by_seed_and_counts_probes_each_way():
    a = {
        0: dict.fromkeys(PROBES, 80.0),
        1: dict.fromkeys(PROBES, 82.0),
        2: dict.fromkeys(PROBES, 0.0),
    }
    b = {0: dict.fromkeys(PROBES, 79.0), 1: dict.fromkeys(PROBES, 80.0)}
    b[0]["TREC"] = 89.0  # one probe behind
    result = compare(a, b)
    assert result["seeds"] == [0, 1]  # seed 2 has no partner
    assert result["probe_differences"]["MR"] == 1.5
    assert result["probe_differences"]["TREC"] == -3.5
    assert (result["probes_ahead"], result["probes_behind"]) == (len(PROBES) - 1, 1)
    assert result["macro_difference_per_seed"] == [-0.25, 2.0]
