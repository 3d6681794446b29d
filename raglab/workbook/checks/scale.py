"""Checks for notebook 11 (outgrow the laptop): the recall of an approximate search.

Exercise `knn_recall`: the learner writes

    knn_recall(approximate, exact) -> float

the share of each query's exact top k that an approximate search also returned, averaged
over the queries (recall@k of the search, against exact search). Both arguments are 2-D
arrays of row numbers, one row per query, k wide. Order within a row does not matter, a
row number returned twice counts once, and -1 (what a search pads with when it found
fewer than k) is never a match.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from raglab.workbook.checks.core import (
    RANDOM_CASES,
    SEED,
    Case,
    CheckResult,
    Outcome,
    run_cases,
)

__all__ = ["check_knn_recall", "reference_knn_recall"]


def reference_knn_recall(approximate: Any, exact: Any) -> float:
    """Mean share of each query's exact top k found by the approximate search.

    >>> reference_knn_recall([[4, 2, 9], [1, -1, -1]], [[2, 4, 7], [1, 5, 6]])
    0.5
    """
    found, truth = np.asarray(approximate), np.asarray(exact)
    if found.shape != truth.shape or truth.ndim != 2:
        raise ValueError(
            f"approximate and exact must be 2-D arrays of the same shape, one row per query "
            f"(got {found.shape} and {truth.shape})"
        )
    # Sets: the order within a row does not matter, and a repeat counts once.
    hits = sum(len(set(a.tolist()) & set(e.tolist())) for a, e in zip(found, truth))
    return hits / truth.size


def _case(name: str, approximate: list, exact: list) -> Case:
    expected = reference_knn_recall(approximate, exact)
    return Case(name, (np.array(approximate), np.array(exact)), expected=expected)


CASES: list[Case] = [
    _case("all found", [[3, 8, 1]], [[3, 8, 1]]),
    _case("another order", [[1, 3, 8]], [[3, 8, 1]]),  # a set, not positions
    _case("one of three", [[3, 5, 6]], [[3, 8, 1]]),
    _case("two queries", [[3, 8, 1], [7, 5, 6]], [[3, 8, 1], [2, 4, 9]]),
    _case("padded with -1", [[3, -1, -1]], [[3, 8, 1]]),  # k is the exact row's width
    _case("a repeat counts once", [[3, 3, 3]], [[3, 8, 1]]),
    Case("shapes differ", (np.array([[3, 8]]), np.array([[3, 8, 1]])), expected=ValueError),
]


def random_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    """Random searches over 30 rows: some rows missed, some padded, some repeated."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        queries, k = rng.randint(1, 4), rng.randint(1, 6)
        exact = [rng.sample(range(30), k) for _ in range(queries)]
        approximate = [
            [rng.choice([*row, rng.randrange(30), -1]) for _ in range(k)] for row in exact
        ]
        cases.append(_case(f"random {i}", approximate, exact))
    return cases


def _judge(case: Case, outcome: Outcome) -> str | None:
    value = outcome.value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        return f"expected a number from 0 to 1, got a {type(value).__name__}"
    if abs(float(value) - case.expected) < 1e-9:
        return None
    return ""  # expected and got say it all


def check_knn_recall(fn: Callable[[Any, Any], float]) -> CheckResult:
    """Check a learner's `knn_recall(approximate, exact) -> float`."""
    randoms = random_cases()
    summary = f"all {len(CASES)} cases and {len(randoms)} random searches pass"
    return run_cases("knn_recall", "knn_recall", fn, CASES + randoms, _judge, summary)


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Callable], CheckResult]] = {"knn_recall": check_knn_recall}
