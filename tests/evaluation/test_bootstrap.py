"""Bootstrap intervals: the percentile rule, determinism, pairing, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from raglab.evaluation.bootstrap import Interval, bootstrap_ci, paired_difference, resample_means


def test_the_interval_is_the_middle_95_percent_of_means_drawn_with_replacement():
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5]
    rng = np.random.default_rng(3)
    draws = rng.integers(0, len(values), size=(500, len(values)))
    means = np.asarray(values)[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    ci = bootstrap_ci(values, resamples=500, seed=3)
    assert (ci.low, ci.high) == (pytest.approx(low), pytest.approx(high))
    assert ci.mean == pytest.approx(np.mean(values)) and ci.n == 7


def test_the_same_seed_gives_the_same_interval_and_another_seed_another():
    values = list(np.linspace(0, 1, 30))
    assert bootstrap_ci(values, seed=1) == bootstrap_ci(values, seed=1)
    assert bootstrap_ci(values, seed=1) != bootstrap_ci(values, seed=2)


def test_equal_values_give_an_interval_of_width_zero_and_more_questions_a_narrower_one():
    assert bootstrap_ci([0.7] * 9) == Interval(pytest.approx(0.7), 0.7, 0.7, 9)
    few = bootstrap_ci([0.0, 1.0] * 10)
    many = bootstrap_ci([0.0, 1.0] * 200)
    assert many.high - many.low < (few.high - few.low) / 3


def test_the_level_sets_the_width():
    values = [0.0, 1.0] * 20
    wide, narrow = bootstrap_ci(values, level=0.99), bootstrap_ci(values, level=0.5)
    assert wide.low < narrow.low < narrow.high < wide.high


def test_a_paired_difference_is_narrower_than_the_two_intervals_side_by_side():
    rng = np.random.default_rng(0)
    difficulty = rng.random(60)
    before = difficulty
    after = np.clip(difficulty + 0.05, 0, 1)  # every question a little better
    d = paired_difference(before, after)
    assert not d.holds_zero() and d.low > 0
    unpaired = bootstrap_ci(after).low - bootstrap_ci(before).high
    assert unpaired < 0  # side by side, the intervals overlap: the pairing shows the gain


def test_a_difference_that_is_noise_holds_zero():
    d = paired_difference([1, 0, 1, 0, 1, 0], [0, 1, 1, 0, 1, 0])
    assert d.mean == 0 and d.holds_zero()
    assert str(d) == f"{d.mean:.3f} [{d.low:.3f}, {d.high:.3f}]"


def test_resample_means_draws_the_rows_bootstrap_ci_uses():
    means = resample_means([0.0, 1.0, 0.5], resamples=100, seed=5)
    ci = bootstrap_ci([0.0, 1.0, 0.5], resamples=100, seed=5)
    assert means.shape == (100,)
    assert (ci.low, ci.high) == tuple(np.percentile(means, [2.5, 97.5]))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: bootstrap_ci([]), ValueError, "values must be a non-empty list"),
        (lambda: bootstrap_ci([1.0, float("nan")]), ValueError, "finite numbers only"),
        (
            lambda: bootstrap_ci([1.0], resamples=0),
            ValueError,
            r"resamples must be an integer >= 1",
        ),
        (lambda: bootstrap_ci([1.0], seed=-1), ValueError, r"seed must be an integer >= 0"),
        (
            lambda: bootstrap_ci([1.0], level=1.5),
            ValueError,
            "level must be a finite number from 0 to 1",
        ),
        (lambda: paired_difference([1.0], [1.0, 0.0]), ValueError, "the same questions"),
    ],
)
def test_bad_arguments_are_refused_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()
