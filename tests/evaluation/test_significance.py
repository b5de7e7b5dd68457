import numpy as np
import pytest

from ctxsent.errors import InputError
from ctxsent.evaluation.significance import paired_bootstrap


def test_identical_rankers_give_a_zero_width_interval():
    values = [1.0, 0.0, 1.0, 1.0]
    result = paired_bootstrap(values, values, resamples=200)
    assert (result.mean, result.low, result.high) == (0.0, 0.0, 0.0)


def test_interval_contains_the_mean_and_narrows_with_more_questions():
    rng = np.random.default_rng(1)
    a_small, b_small = rng.integers(0, 2, 40), rng.integers(0, 2, 40)
    small = paired_bootstrap(a_small, b_small, resamples=2000)
    a_big, b_big = np.tile(a_small, 25), np.tile(b_small, 25)  # same difference, 1,000 questions
    big = paired_bootstrap(a_big, b_big, resamples=2000)
    assert small.low <= small.mean <= small.high
    assert big.mean == pytest.approx(small.mean)
    assert big.high - big.low < (small.high - small.low) / 3  # width shrinks like 1/sqrt(n)
    assert small.questions == 40 and big.questions == 1000


def test_a_consistent_winner_is_separated_from_zero():
    a = np.ones(100)
    b = np.r_[np.zeros(30), np.ones(70)]  # a wins 30 questions, ties 70, never loses
    result = paired_bootstrap(a, b, resamples=2000)
    assert result.mean == pytest.approx(0.3)
    assert 0 < result.low < 0.3 < result.high <= 0.5


def test_the_same_seed_gives_the_same_interval():
    a, b = [1, 0, 1, 0, 1], [0, 0, 1, 1, 0]
    assert paired_bootstrap(a, b, seed=3) == paired_bootstrap(a, b, seed=3)


@pytest.mark.parametrize("a,b", [([], []), ([1.0, 0.0], [1.0]), ([[1.0]], [[1.0]])])
def test_rejects_mismatched_or_empty_values(a, b):
    with pytest.raises(InputError, match="per-question values"):
        paired_bootstrap(a, b)
