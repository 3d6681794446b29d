"""Is a gain real or noise? Bootstrap confidence intervals over the questions of an evaluation.

A mean over 50 questions moves when a handful of questions change their minds. The
percentile bootstrap (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13)
asks how much: draw the questions again *with replacement*, as many as there are, take the
mean, repeat `RESAMPLES` times, and keep the middle 95 % of those means.

To compare two configurations measured on the same questions, resample the questions once
and take both means on the same draw (`paired_difference`): the question's difficulty
cancels out, so the interval of the *difference* is much narrower than the two intervals
side by side suggest. A difference whose interval holds 0 is not shown to be a gain.

Deterministic: a seeded `numpy.random.default_rng` draws the same questions on every run.

>>> ci = bootstrap_ci([1.0, 0.0, 1.0, 1.0], seed=0)
>>> (ci.mean, ci.low <= ci.mean <= ci.high)
(0.75, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raglab.validation import check_int, check_number

RESAMPLES = 2000
"""Bootstrap draws per interval: enough that the 2.5 % and 97.5 % percentiles stop moving in
the second decimal, and quick (a 2000 × 100 array)."""

LEVEL = 0.95
"""The share of the resampled means the interval holds."""

SEED = 0


@dataclass(frozen=True, slots=True)
class Interval:
    """A mean and its bootstrap interval [low, high] over `n` values."""

    mean: float
    low: float
    high: float
    n: int

    def holds_zero(self) -> bool:
        """True when 0 lies in the interval: a difference not shown to be real."""
        return self.low <= 0.0 <= self.high

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _values(name: str, values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty list of numbers (got {array.size} values)")
    if not np.isfinite(array).all():
        raise ValueError(
            f"{name} must hold finite numbers only (got {array[~np.isfinite(array)][0]})"
        )
    return array


def resample_means(
    values: Sequence[float] | np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED
) -> np.ndarray:
    """`resamples` means, each over len(values) values drawn with replacement.

    Row i of the draw picks question indices `rng.integers(0, n, size=n)`: the one rule
    that `bootstrap_ci` and `paired_difference` share, so their draws agree.
    """
    array = _values("values", values)
    means: np.ndarray = array[_draws(array.size, resamples, seed)].mean(axis=1)
    return means


def _draws(n: int, resamples: int, seed: int) -> np.ndarray:
    resamples = check_int("resamples", resamples, minimum=1)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    return rng.integers(0, n, size=(resamples, n))


def _interval(mean: float, means: np.ndarray, n: int, level: float) -> Interval:
    level = check_number("level", level, minimum=0, maximum=1)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(mean), float(low), float(high), n)


def bootstrap_ci(
    values: Sequence[float],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = SEED,
) -> Interval:
    """The mean of `values` and its percentile bootstrap interval at `level`.

    One value per question (a recall, a 0/1 for "abstained", ...). All values equal give
    an interval of width 0: resampling cannot move a mean that nothing varies.

    >>> str(bootstrap_ci([0.5, 0.5, 0.5]))
    '0.500 [0.500, 0.500]'
    """
    array = _values("values", values)
    means = resample_means(array, resamples=resamples, seed=seed)
    return _interval(array.mean(), means, array.size, level)


def paired_difference(
    before: Sequence[float],
    after: Sequence[float],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = SEED,
) -> Interval:
    """mean(after - before) and its interval, resampling the questions (pairs stay together).

    `before[i]` and `after[i]` are the same question's scores under two configurations.

    >>> d = paired_difference([0, 0, 1, 1], [1, 1, 1, 1])
    >>> (d.mean, d.holds_zero())
    (0.5, True)
    """
    a = _values("before", before)
    b = _values("after", after)
    if a.shape != b.shape:
        raise ValueError(
            f"before and after must score the same questions (got {a.size} and {b.size} values)"
        )
    differences = b - a
    means = differences[_draws(a.size, resamples, seed)].mean(axis=1)
    return _interval(differences.mean(), means, a.size, level)
